package org.apache.spark.sql.kstate.operatorstate

import org.apache.spark.sql.kstate.provider.KStateStore

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter
import org.apache.spark.sql.execution.streaming.state.{NoPrefixKeyStateEncoderSpec, StateStore}
import org.apache.spark.sql.kstate.engine.{FamilyCodec, HashedKey}
import org.apache.spark.sql.kstate.processor.StreamTime
import org.apache.spark.sql.kstate.processor.table.TableState
import org.apache.spark.sql.kstate.processor.table.TableState.{Latest, Versioned}
import org.apache.spark.sql.types.{BinaryType, LongType, StructField, StructType}
import org.apache.spark.unsafe.Platform

/**
 * An unversioned [[TableState]] in a column family of a Spark state store (`family`, default
 * `kstate_table`; any provider with column families: kstate's or Spark's RocksDB): key row ->
 * (timestamp, value row bytes); a tombstone deletes the key. Stream time lives in the store's
 * [[StateMeta]], written by [[commitStreamTime]] at the end of the task (one slot per store: with
 * several tables in one store, at most one of them commits its stream time). Keys and values are UnsafeRows of `keySchema` /
 * `valueFields` fields; rows returned by `get` are fresh objects, and their bytes are never
 * changed (in kstate's store they point into the stored entry, which is never modified in
 * place: a put stores a new one). Not thread-safe; one per task.
 */
final class StoreTableState(
    store: StateStore,
    keySchema: StructType,
    valueFields: Int,
    family: String = StoreTableState.Cf
) extends TableState[UnsafeRow, UnsafeRow] {
  import StoreTableState._
  store.createColFamilyIfAbsent(family, keySchema, ValueSchema, NoPrefixKeyStateEncoderSpec(keySchema))
  private val meta = new StateMeta(store)
  private var time = meta.get(StateMeta.StreamTime, StreamTime.Unknown)
  private val writer = new UnsafeRowWriter(2)

  /** kstate's store, read and written by encoded key ([[KStateStore.encodedKey]]); null for another provider's. */
  private val own: KStateStore = store match {
    case k: KStateStore => k
    case _ => null
  }
  private var lastKey: HashedKey = _
  private val storedRow = new UnsafeRow(2)

  override def versioned: Boolean = false
  override def streamTime: Long = time
  override def numVersions: Long = 0L

  override def put(key: UnsafeRow, value: UnsafeRow, ts: Long): Long = {
    if (ts > time) time = ts
    if (value == null) {
      if (own != null) own.removeEncoded(encoded(key)) else store.remove(key, family)
    } else {
      writer.reset(); writer.zeroOutNullBytes()
      writer.write(0, ts)
      writer.write(1, value.getBytes)
      // a copy: the writer's row may be its own buffer, which the next put overwrites
      if (own != null) own.putEncoded(encoded(key), FamilyCodec.rowBytes(writer.getRow, 0))
      else store.put(key, writer.getRow, family)
    }
    Latest
  }

  override def get(key: UnsafeRow): Versioned[UnsafeRow] =
    if (own != null) {
      val stored = own.getEncoded(encoded(key))
      if (stored == null) null
      else {
        // the value row points into the stored bytes, which are never modified: no copy
        storedRow.pointTo(stored, stored.length)
        val offsetAndSize = storedRow.getLong(1)
        val row = new UnsafeRow(valueFields)
        row.pointTo(stored, Platform.BYTE_ARRAY_OFFSET + (offsetAndSize >>> 32).toInt, offsetAndSize.toInt)
        Versioned(row, storedRow.getLong(0))
      }
    } else {
      val stored = store.get(key, family)
      if (stored == null) null
      else {
        val bytes = stored.getBinary(1)
        val row = new UnsafeRow(valueFields)
        row.pointTo(bytes, bytes.length)
        Versioned(row, stored.getLong(0))
      }
    }

  /** `key` encoded and hashed in kstate's store, once for a get and the put of the same key that follows. */
  private def encoded(key: UnsafeRow): HashedKey = {
    lastKey = own.encodedKey(key, family, lastKey)
    lastKey
  }

  override def getAsOf(key: UnsafeRow, asOf: Long): Versioned[UnsafeRow] = get(key)

  /** Persists stream time with the state (call once, at the end of the task). */
  def commitStreamTime(): Unit = meta.put(StateMeta.StreamTime, time)
}

object StoreTableState {

  /**
   * Rewrites every value row of the table family `family` in `store` with `f` (a change of the
   * values' schema, in the task that converts them); keys and timestamps stay.
   */
  private[kstate] def mapValues(store: KStateStore, family: String, f: Array[Byte] => Array[Byte]): Unit =
    for (table <- store.existingFamily(family)) {
      val it = table.scan(Array.emptyByteArray, None)
      val row = new UnsafeRow(2)
      val writer = new UnsafeRowWriter(2)
      try it.foreach { case (k, v) =>
          row.pointTo(v, v.length)
          writer.reset(); writer.zeroOutNullBytes()
          writer.write(0, row.getLong(0))
          writer.write(1, f(row.getBinary(1)))
          table.put(k, FamilyCodec.rowBytes(writer.getRow, 0)) // a copy: the writer reuses its buffer
        }
      finally it.close()
    }

  val Cf = "kstate_table"
  private val ValueSchema = StructType(Seq(
    StructField("timestamp", LongType, nullable = false),
    StructField("value", BinaryType, nullable = false)
  ))
}
