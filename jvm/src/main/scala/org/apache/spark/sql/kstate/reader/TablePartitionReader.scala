package org.apache.spark.sql.kstate.reader

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration

import org.apache.spark.sql.kstate.errors.KStateErrors

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider
import org.apache.spark.sql.kstate.execution.KStateStatefulExec
import org.apache.spark.sql.kstate.provider.{KStateStore, KStateStoreProvider}
import org.apache.spark.sql.kstate.operatorstate.VersionedKeyValueStore

/**
 * One state partition of a versioned table as of a time: for each key of the partition's
 * versioned store, the version `get(key, asOf)` answers (`get(key)` when `asOf` is None, the
 * latest), as a row of the target's schema (key, value columns, timestamp); keys with no version
 * then (none yet, a tombstone, or past the history retention without a latest version at or
 * before `asOf`) give no row.
 *
 * Contract: opens the committed state version the target names with a provider of its own and
 * never commits it (nothing is written); `close` releases the store and closes the provider, is
 * idempotent, and runs by itself when the rows are exhausted. Rows are fresh objects.
 */
final class TablePartitionReader private (
    provider: StateStoreProvider,
    store: KStateStore,
    target: TableReadTarget,
    asOf: Option[Long]
) extends Iterator[InternalRow] with AutoCloseable {

  private val versions = new VersionedKeyValueStore(
    store,
    target.storeName,
    target.historyRetentionMs,
    target.graceMs
  )
  private val keys = versions.keys()
  private val valueTypes = target.valueSchema.fields.map(_.dataType)
  private val timestampOf = KStateStatefulExec.millisTo(target.timestampType)
  private var nextRow: InternalRow = _
  private var closed = false

  override def hasNext: Boolean = {
    while (nextRow == null && !closed) {
      if (!keys.hasNext) close()
      else nextRow = rowOf(keys.next())
    }
    nextRow != null
  }

  override def next(): InternalRow = {
    if (!hasNext) throw new NoSuchElementException
    val r = nextRow
    nextRow = null
    r
  }

  private def rowOf(key: Array[Byte]): InternalRow = {
    val version = asOf.fold(versions.get(key))(t => versions.get(key, t))
    if (version == null) null
    else {
      val k = new UnsafeRow(1)
      k.pointTo(key, key.length)
      val v = new UnsafeRow(valueTypes.length)
      v.pointTo(version.value, version.value.length)
      val out = new Array[Any](valueTypes.length + 2)
      out(0) = k.get(0, target.keyType)
      var i = 0
      while (i < valueTypes.length) { out(i + 1) = v.get(i, valueTypes(i)); i += 1 }
      out(out.length - 1) = timestampOf(version.timestamp)
      new GenericInternalRow(out)
    }
  }

  override def close(): Unit = if (!closed) {
    closed = true
    try keys.close()
    finally
      try store.release()
      finally provider.close()
  }
}

object TablePartitionReader {

  /** Opens `partition` of `target` as of `asOf`; on failure, releases what was opened. */
  def open(target: TableReadTarget, partition: Int, asOf: Option[Long], hadoopConf: Configuration)
      : TablePartitionReader = {
    val provider = PartitionStateIterator.providerOf(target.state, partition, hadoopConf)
    var store: KStateStore = null
    try {
      provider match {
        case k: KStateStoreProvider =>
          store = k.getStore(target.state.version, target.state.idOf(partition), true, false)
        case other => throw KStateErrors.internal(
            s"a versioned table's state was opened with ${other.getClass.getName}, not kstate's provider"
          )
      }
      new TablePartitionReader(provider, store, target, asOf)
    } catch {
      case NonFatal(e) =>
        try if (store != null) store.release()
        finally provider.close()
        throw e
    }
  }
}
