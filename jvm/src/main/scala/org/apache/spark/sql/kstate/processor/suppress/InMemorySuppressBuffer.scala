package org.apache.spark.sql.kstate.processor.suppress

import scala.collection.mutable

/**
 * Heap-only [[SuppressBuffer]] for unit tests (kstate's `suppress` runs on streaming DataFrames
 * only, over the store's `TimeOrderedBuffer`). Order among equal buffer times is `Ordering[K]`;
 * `bytesOf(key, value)` is a record's bytes.
 */
final class InMemorySuppressBuffer[K, V](val name: String, val limits: BufferLimits, bytesOf: (K, V) => Long)(
    implicit keyOrder: Ordering[K]
) extends SuppressBuffer[K, V, SuppressedRecord[K, V]] {
  private val byTime = mutable.TreeMap.empty[(Long, K), SuppressedRecord[K, V]]
  private val bufferTimes = mutable.HashMap.empty[K, Long]
  private var bytes = 0L

  override def numRecords: Long = byTime.size.toLong
  override def numBytes: Long = bytes
  override def minBufferTime: Long = if (byTime.isEmpty) Long.MaxValue else byTime.firstKey._1

  override def put(key: K, value: V, recordTime: Long, bufferTime: Long): Boolean =
    bufferTimes.get(key) match {
      case Some(bt) =>
        val old = byTime((bt, key))
        bytes += bytesOf(key, value) - bytesOf(key, old.value)
        byTime((bt, key)) = SuppressedRecord(key, value, bt, recordTime)
        true
      case None =>
        bufferTimes(key) = bufferTime
        byTime((bufferTime, key)) = SuppressedRecord(key, value, bufferTime, recordTime)
        bytes += bytesOf(key, value)
        false
    }

  override def evictWhile(cond: => Boolean)(f: SuppressedRecord[K, V] => Unit): Unit =
    while (byTime.nonEmpty && cond) {
      val (k, r) = byTime.head
      byTime.remove(k)
      bufferTimes.remove(r.key)
      bytes -= bytesOf(r.key, r.value)
      f(r)
    }
}
