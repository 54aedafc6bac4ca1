package org.apache.spark.sql.kstate.processor.window

import org.apache.spark.sql.kstate.processor.{Counters, StreamTime}

/**
 * What session and sliding aggregations share ([[SessionAggregateProcessor]],
 * [[SlidingAggregateProcessor]]): aggregations over spans of a key that combine aggregates, over
 * a [[SessionStore]], results to a [[SpanOutput]]. Holds stream time (read from the state) and
 * the counters, and ends a batch the same way: final results in end order, the state size
 * recorded, stream time persisted.
 *
 * One instance per task and micro-batch; `advanceStreamTime` at most once first, `process` per
 * record, `finish` once.
 */
abstract class SpanAggregateProcessor[K, R, A](
    state: SessionStore[_, A],
    output: SpanOutput[K, A],
    val metricSet: AggregateMetricSet with SpanMetrics,
    val counters: Counters
) {
  require(counters.set eq metricSet, "counters of another operator")
  protected final val streamTime = new StreamTime(state.streamTime)

  /** Raises stream time to at least `t` (the watermark-follow option). */
  final def advanceStreamTime(t: Long): Unit = streamTime.advance(t)

  final def currentStreamTime: Long = streamTime.current

  /**
   * The operator's close time: windows ending at or before it (sessions) or before it (sliding
   * windows) are closed, so a row emitted in a later batch ends at or after it.
   */
  def closeTime: Long

  /** Aggregates one record; `key` is ignored when `keyIsNull`, `ts` when `tsIsNull`. */
  def process(key: K, keyIsNull: Boolean, record: R, ts: Long, tsIsNull: Boolean): Unit

  /** Ends the batch: emits, closes windows, persists stream time, records the state size. */
  def finish(): Unit

  /** The end of `finish`: emits `closing` (final results) in end order, records the state size, persists stream time. */
  protected final def endBatch(closing: Iterable[(K, StoredSession[A])]): Unit = {
    // a stable sort by end (a micro-batch can close millions of windows)
    val inEndOrder = closing.toArray
    EndOrder.sortInPlace(inEndOrder)
    inEndOrder.foreach { case (k, s) =>
      output.result(k, s.start, s.end, s.agg, s.maxTs)
      counters.add(metricSet.Emitted)
    }
    counters.set(metricSet.BufferRecords, state.records)
    counters.set(metricSet.BufferBytes, state.bytes)
    state.finish(streamTime.current)
  }
}
