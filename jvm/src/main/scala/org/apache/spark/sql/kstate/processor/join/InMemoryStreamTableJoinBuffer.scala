package org.apache.spark.sql.kstate.processor.join

import scala.collection.mutable

import org.apache.spark.sql.kstate.processor.StreamTime

/**
 * Heap-only [[StreamTableJoinBuffer]] for unit and property tests (batch DataFrames need no
 * grace buffer). Order among equal timestamps is `Ordering[K]`, then arrival.
 */
final class InMemoryStreamTableJoinBuffer[K, S](implicit keyOrder: Ordering[K]) extends StreamTableJoinBuffer[K, S] {
  // (timestamp, key, arrival) -> value
  private val records = mutable.TreeMap.empty[(Long, K, Long), S]
  private var arrivals = 0L

  override var streamTime: Long = StreamTime.Unknown

  override def put(key: K, value: S, ts: Long): Unit = {
    records((ts, key, arrivals)) = value
    arrivals += 1
  }

  override def evictUpTo(time: Long)(f: StreamTableJoinBuffer.Evicted[K, S]): Unit =
    while (records.nonEmpty && records.firstKey._1 <= time) {
      val (at @ (ts, key, _), value) = records.head
      records.remove(at)
      f(key, value, ts)
    }

  override def numRecords: Long = records.size.toLong
}
