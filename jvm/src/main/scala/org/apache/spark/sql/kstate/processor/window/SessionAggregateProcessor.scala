package org.apache.spark.sql.kstate.processor.window

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.kstate.processor.{Counters, StreamTime}

/**
 * Kafka 4.3's `KStreamSessionWindowAggregate` (with its session store's retention) on one state
 * partition, optionally fused with `suppress(untilWindowCloses)` (`finalResults`).
 *
 * For each record, in processing order:
 *  1. null timestamp, then null key: dropped (counted), stream time unchanged;
 *  2. the record's lateness is counted against stream time before it;
 *  3. close time := stream time − grace − gap (Kafka's `windowCloseTime`); a session `[start,
 *     end]` (both inclusive) is open while end > close time, closed (final) once end ≤ close time;
 *  4. the key's sessions open before the record (end > the close time before stream time
 *     advances: Kafka's store observes stream time on put, after the lookup) within the gap of
 *     ts (end ≥ ts − gap and start ≤ ts + gap, inclusive) merge with the record into one session
 *     [min start, max end]: their aggregates merged in start order, then the record added;
 *  5. stream time := max(stream time, ts); with no session to merge and ts < close time the
 *     record is late: dropped (counted); otherwise it starts the session [ts, ts] (also when a
 *     closed session lies within its gap).
 * At `finish`, sessions with end ≤ close time close: they leave the state, and no later record
 * merges into them.
 *
 * Output ([[SpanOutput]]), at `finish`: without `finalResults`, for each key the batch touched,
 * a tombstone for every session stored at batch start that no longer exists as (start, end),
 * then every session the batch created or changed (its current value, also when it closes now),
 * in start order; with `finalResults`, each session once, when it closes, in end order, and no
 * tombstones.
 *
 * `copyKey` copies a key the caller may reuse. Counts into [[SessionMetrics]]. Not thread-safe;
 * one instance per task and micro-batch, over state that outlives it.
 */
final class SessionAggregateProcessor[K, R, A](
    gapMs: Long,
    graceMs: Long,
    finalResults: Boolean,
    state: SessionStore[K, A],
    aggregator: MergingAggregator[R, A],
    output: SpanOutput[K, A],
    copyKey: K => K,
    counters: Counters = SessionMetrics.newCounters()
) extends SpanAggregateProcessor[K, R, A](state, output, SessionMetrics, counters) {
  import SessionMetrics._
  require(gapMs >= 0 && graceMs >= 0, s"gap and grace must be >= 0, got $gapMs, $graceMs")
  private val touched = new java.util.LinkedHashMap[K, SessionAggregateProcessor.KeySessions[A]]()

  /** Rule 3: stream time − grace − gap, saturating. */
  override def closeTime: Long = StreamTime.minus(streamTime.closeTime(graceMs), gapMs)

  override def process(key: K, keyIsNull: Boolean, record: R, ts: Long, tsIsNull: Boolean): Unit = {
    import SessionAggregateProcessor.Session
    if (tsIsNull) { counters.add(NullTimestamps); return }
    if (keyIsNull) { counters.add(NullKeys); return }
    recordSeen(counters, streamTime, ts)
    val openAfter = closeTime // sessions ending after it were open before this record
    streamTime.advance(ts)
    val close = closeTime
    var ks = touched.get(key)
    if (ks == null) {
      val stored = state.get(key)
      ks = new SessionAggregateProcessor.KeySessions(
        stored,
        stored.iterator.map(s => new Session(s.start, s.end, s.agg, s.maxTs, stored = true)).toList
      )
      touched.put(copyKey(key), ks)
    }
    val lo = StreamTime.minus(ts, gapMs)
    val hi = StreamTime.plus(ts, gapMs)
    val (merging, others) = ks.now.partition(s => s.end > openAfter && s.end >= lo && s.start <= hi)
    if (merging.isEmpty && ts < close) { counters.add(LateDropped); return }
    var agg = aggregator.initial()
    var start = ts
    var end = ts
    var maxTs = ts
    merging.foreach { s => // already in start order
      agg = aggregator.merge(agg, s.agg)
      if (s.start < start) start = s.start
      if (s.end > end) end = s.end
      if (s.maxTs > maxTs) maxTs = s.maxTs
    }
    if (merging.length > 1) counters.add(Merged, merging.length - 1L)
    agg = aggregator.add(agg, record)
    counters.add(Updates)
    ks.now = (new Session(start, end, agg, maxTs, stored = false) :: others).sortBy(_.start)
  }

  /**
   * Ends the batch: emits (see the class contract), closes sessions with end ≤ close time,
   * writes the touched keys back, persists stream time and records the state size.
   */
  override def finish(): Unit = {
    val close = closeTime
    val closing = ArrayBuffer.empty[(K, StoredSession[A])]
    def closed(k: K, s: StoredSession[A]): Unit = {
      counters.add(Closed)
      if (finalResults) closing += ((k, s))
    }
    touched.forEach { (k, ks) =>
      if (!finalResults) {
        ks.atStart.foreach { s =>
          if (!ks.now.exists(n => n.start == s.start && n.end == s.end)) {
            output.tombstone(k, s.start, s.end, s.maxTs)
            counters.add(Emitted)
          }
        }
        ks.now.foreach { s =>
          if (!s.stored) { output.result(k, s.start, s.end, s.agg, s.maxTs); counters.add(Emitted) }
        }
      }
      val (gone, open) = ks.now.partition(s => close != Long.MinValue && s.end <= close)
      gone.foreach(s => closed(k, s.toStored))
      if (gone.nonEmpty || ks.now.exists(!_.stored) || ks.now.length != ks.atStart.length) {
        state.put(k, open.map(_.toStored), ks.atStart.toSeq)
      }
    }
    touched.clear()
    // sessions of other keys that close now
    if (close != Long.MinValue) state.closeBefore(close + 1)(closed)
    endBatch(closing)
  }
}

private object SessionAggregateProcessor {

  /** A session while the batch runs; `stored`: it is in the state as it was at batch start. */
  final class Session[A](val start: Long, val end: Long, val agg: A, val maxTs: Long, val stored: Boolean) {
    def toStored: StoredSession[A] = StoredSession(start, end, maxTs, agg)
  }

  /** A key's sessions in this batch: as stored at batch start, and now (ordered by start). */
  final class KeySessions[A](val atStart: Array[StoredSession[A]], var now: List[Session[A]])
}
