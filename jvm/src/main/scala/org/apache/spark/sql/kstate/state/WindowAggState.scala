package org.apache.spark.sql.kstate.state

import scala.collection.mutable

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.types.StructType

/**
 * The state of a windowed aggregation on one partition: (key, window start) -> (aggregate
 * buffer, largest record timestamp), a time index by window end for closing windows in end
 * order, stream time, and the buffer's record and byte counts (for suppression limits).
 *
 * Rows handed in are copied when kept; rows handed out are the caller's to keep.
 */
trait WindowAggState {
  def streamTime: Long
  def get(key: UnsafeRow): UnsafeRow
  /**
   * Stores `value` for `key`. `oldSize`: the size of the value it replaces, or -1 when the key
   * is not stored yet, which indexes it by `end` (its window end).
   */
  def put(key: UnsafeRow, value: UnsafeRow, end: Long, oldSize: Int): Unit
  /** Removes every window with end < `bound`, calling `f(key, value)` for each in end order. */
  def closeBefore(bound: Long)(f: (UnsafeRow, UnsafeRow) => Unit): Long
  def records: Long
  def bytes: Long
  /** Persists stream time and counters (at the end of each micro-batch). */
  def finish(streamTime: Long): Unit
}

object WindowAggState {
  val NoStreamTime: Long = Long.MinValue
  private[state] def size(key: UnsafeRow, value: UnsafeRow): Long = key.getSizeInBytes.toLong + value.getSizeInBytes
}

/** [[WindowAggState]] in a kstate operator's state store (streaming). */
final class StoreWindowAggState(store: StateStore, keySchema: StructType) extends WindowAggState {
  import WindowAggState._
  private val meta = new StateMeta(store)
  private val index = new ExpiryIndex(store, keySchema)
  private var time = meta.get(StateMeta.StreamTime, NoStreamTime)
  private var count = meta.get(StateMeta.Entries, 0L)
  private var size = meta.get(StateMeta.Bytes, 0L)

  override def streamTime: Long = time
  override def get(key: UnsafeRow): UnsafeRow = store.get(key)

  override def put(key: UnsafeRow, value: UnsafeRow, end: Long, oldSize: Int): Unit = {
    if (oldSize < 0) {
      index.add(end, key)
      count += 1
      size += WindowAggState.size(key, value)
    } else size += value.getSizeInBytes - oldSize
    store.put(key, value)
  }

  override def closeBefore(bound: Long)(f: (UnsafeRow, UnsafeRow) => Unit): Long = {
    var n = 0L
    index.drainBefore(bound) { (_, key) =>
      val v = store.get(key)
      if (v != null) {
        f(key, v)
        store.remove(key)
        count -= 1
        size -= WindowAggState.size(key, v)
        n += 1
      }
    }
    n
  }

  override def records: Long = count
  override def bytes: Long = size

  override def finish(streamTime: Long): Unit = {
    time = streamTime
    meta.putCounts(time, count, size)
  }
}

/** [[WindowAggState]] on the task's heap (batch queries: one batch, then discarded). */
final class HeapWindowAggState extends WindowAggState {
  import WindowAggState._
  private val values = mutable.HashMap.empty[UnsafeRow, UnsafeRow]
  private val byEnd = mutable.TreeMap.empty[Long, mutable.LinkedHashSet[UnsafeRow]]
  private var size = 0L

  override def streamTime: Long = NoStreamTime
  override def get(key: UnsafeRow): UnsafeRow = values.get(key).orNull

  override def put(key: UnsafeRow, value: UnsafeRow, end: Long, oldSize: Int): Unit = {
    val k = key.copy()
    values.put(k, value.copy()) match {
      case Some(old) => size += value.getSizeInBytes - old.getSizeInBytes
      case None =>
        byEnd.getOrElseUpdate(end, mutable.LinkedHashSet.empty) += k
        size += WindowAggState.size(k, value)
    }
  }

  override def closeBefore(bound: Long)(f: (UnsafeRow, UnsafeRow) => Unit): Long = {
    var n = 0L
    while (byEnd.nonEmpty && byEnd.head._1 < bound) {
      val (end, keys) = byEnd.head
      byEnd.remove(end)
      keys.foreach { k =>
        values.remove(k).foreach { v => f(k, v); size -= WindowAggState.size(k, v); n += 1 }
      }
    }
    n
  }

  override def records: Long = values.size.toLong
  override def bytes: Long = size
  override def finish(streamTime: Long): Unit = ()
}
