package org.apache.spark.sql.kstate.processor.table

import io.kstate.tables.VersionedTable

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.config.KStateConf
import org.apache.spark.sql.kstate.execution.{KStateTableSourceExec, TableStateChoice}
import org.apache.spark.sql.kstate.provider.ProviderFixture
import org.apache.spark.sql.types.{LongType, StringType, StructField, StructType}
import org.apache.spark.unsafe.types.UTF8String

import TablePipeline.{Source, V, Versioned}

/**
 * A [[TablePipeline]] table over the state a streaming query's table source keeps: the state
 * [[TableStateChoice]] picks for kstate's store (as `KStateTableSourceExec` asks for it), on a
 * fresh checkpoint, one store version per micro-batch ([[beginBatch]] opens it, [[endBatch]]
 * finishes the state and commits). String keys and Long values go in as one-column UnsafeRows
 * from projections reused for every call, as the exec's reader passes them; rows read come back
 * as Strings and Longs. `heapStateBytes` `Some(0)` keeps the store's working copy in RocksDB.
 * Close it to drop the provider.
 */
final class StoreBackedTable(source: Source, heapStateBytes: Option[Long])
    extends TableState[String, V]
    with AutoCloseable {
  import StoreBackedTable._

  private val provider = ProviderFixture.open(
    ProviderFixture.tmp(),
    KeySchema,
    ValueSchema,
    ProviderFixture.conf(extra = heapStateBytes.map(KStateConf.HeapStateBytes.key -> _.toString).toMap)
  )
  private val versionedTable = source match {
    case Versioned(r, g) => Some(VersionedTable.ofMillis(r).withGraceMillis(g))
    case _ => None
  }
  private val keyProj = UnsafeProjection.create(KeySchema)
  private val valueProj = UnsafeProjection.create(ValueSchema)
  private var version = 0L
  private var store: StateStore = _
  private var chosen: TableStateChoice.Chosen = _

  /** Opens the next store version and the state over it. */
  def beginBatch(): Unit = {
    require(store == null, "a batch is open")
    store = provider.getStore(version)
    chosen = TableStateChoice.choose(
      "table",
      Some(store),
      versionedTable,
      KStateTableSourceExec.VersionedStoreName,
      KeySchema,
      valueFields = 1
    )
  }

  /** Finishes the state (stream time, history cleanup) and commits the store version. */
  def endBatch(): Unit = {
    chosen.finish()
    version = store.commit()
    store = null
  }

  private def state: TableState[UnsafeRow, UnsafeRow] = {
    require(store != null, "no batch is open")
    chosen.state
  }
  private def key(k: String): UnsafeRow = keyProj(InternalRow(UTF8String.fromString(k)))
  private def value(v: V): UnsafeRow = if (v == null) null else valueProj(InternalRow(v.longValue))
  private def read(r: TableState.Versioned[UnsafeRow]): TableState.Versioned[V] =
    if (r == null) null
    else TableState.Versioned(if (r.value == null) null else java.lang.Long.valueOf(r.value.getLong(0)), r.timestamp)

  override def versioned: Boolean = versionedTable.isDefined
  override def put(k: String, v: V, ts: Long): Long = state.put(key(k), value(v), ts)
  override def get(k: String): TableState.Versioned[V] = read(state.get(key(k)))
  override def getAsOf(k: String, asOf: Long): TableState.Versioned[V] = read(state.getAsOf(key(k), asOf))
  override def streamTime: Long = state.streamTime
  override def numVersions: Long = state.numVersions
  override def close(): Unit = provider.close()
}

object StoreBackedTable {
  val KeySchema: StructType = StructType(Seq(StructField("k", StringType)))
  val ValueSchema: StructType = StructType(Seq(StructField("v", LongType)))
}
