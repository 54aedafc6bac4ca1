package org.apache.spark.sql.kstate.processor.window

import org.apache.spark.sql.kstate.processor.Counters

/**
 * What an exec drives of an aggregation over spans of a key that combine aggregates (session
 * and sliding windows, [[SessionAggregateProcessor]], [[SlidingAggregateProcessor]]): one
 * instance per task and micro-batch; `advanceStreamTime` at most once first, `process` per record,
 * `finish` once (its results go to the processor's [[SpanOutput]]).
 */
trait SpanAggregateProcessor[K, R] {
  def counters: Counters
  /** Raises stream time to at least `t` (the watermark-follow option). */
  def advanceStreamTime(t: Long): Unit
  def currentStreamTime: Long
  /**
   * The operator's close time: windows ending at or before it (sessions) or before it (sliding
   * windows) are closed, so a row emitted in a later batch ends at or after it.
   */
  def closeTime: Long
  /** Aggregates one record; `key` is ignored when `keyIsNull`, `ts` when `tsIsNull`. */
  def process(key: K, keyIsNull: Boolean, record: R, ts: Long, tsIsNull: Boolean): Unit
  /** Ends the batch: emits, closes windows, persists stream time, records the state size. */
  def finish(): Unit
}
