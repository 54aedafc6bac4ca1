package io.kstate.distinct

import io.kstate.dedup.{DedupProcessor, DedupState}
import io.kstate.windows.WindowBounds

/**
 * The windowed `distinct()` of KIP-655's original proposal on tumbling windows: the first record
 * of each (key, window) is emitted, later records of that window are dropped.
 *
 * Per record: null key or null timestamp → dropped (Kafka's grouped streams drop them);
 * stream time := max(stream time, ts); window = `[ts - ts mod size, + size)`; the window is
 * closed, and the record dropped as late, once window end ≤ stream time − grace (Kafka's rule);
 * otherwise emitted iff the window was not seen before. A closed window's entry is purged.
 *
 * State is a [[DedupState]] keyed by (key, window start) holding window end.
 */
final class TumblingDistinctProcessor[K](
    sizeMs: Long, graceMs: Long, state: DedupState[K], counters: DistinctCounters) {
  private var streamTime = state.streamTime

  def advanceStreamTime(t: Long): Unit = if (t > streamTime) streamTime = t

  /** Start of the window containing `ts`. */
  def windowStart(ts: Long): Long = WindowBounds.alignedStart(ts, sizeMs)
  def windowEnd(start: Long): Long = WindowBounds.end(start, sizeMs)

  /**
   * @param identityOf builds the state key of (this record's key, a window start)
   * @return true if the record is emitted (first of its window)
   */
  def process(identityOf: Long => K, keyIsNull: Boolean, ts: Long, tsIsNull: Boolean): Boolean = {
    if (tsIsNull) { counters.nullTimestampsDropped += 1; return false }
    if (ts > streamTime) streamTime = ts
    if (keyIsNull) { counters.nullKeysDropped += 1; return false }
    val start = windowStart(ts)
    val end = windowEnd(start)
    if (end <= DedupProcessor.minus(streamTime, graceMs)) {
      counters.lateDropped += 1
      false
    } else {
      val id = identityOf(start)
      if (state.get(id) != DedupState.NoEntry) {
        counters.duplicatesDropped += 1
        false
      } else {
        state.put(id, end, replaces = false)
        counters.windowsStored += 1
        counters.emitted += 1
        true
      }
    }
  }

  def finish(): Unit = {
    // Closed: end <= streamTime - grace, i.e. end < streamTime - grace + 1.
    val closeTime = DedupProcessor.minus(streamTime, graceMs)
    val bound = if (closeTime == Long.MaxValue) closeTime else closeTime + 1
    counters.windowsPurged += state.purgeOlderThan(bound)
    state.streamTime = streamTime
  }
}
