package org.apache.spark.sql.kstate.processor.distinct

import org.apache.spark.sql.kstate.processor.{Counters, StreamTime}
import org.apache.spark.sql.kstate.processor.dedup.DedupState
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
    sizeMs: Long,
    graceMs: Long,
    state: DedupState[K],
    val counters: Counters = DistinctMetrics.newCounters()
) {
  import DistinctMetrics._

  private val streamTime = new StreamTime(state.streamTime)

  def advanceStreamTime(t: Long): Unit = streamTime.advance(t)

  /** Start of the window containing `ts`. */
  def windowStart(ts: Long): Long = WindowBounds.alignedStart(ts, sizeMs)
  def windowEnd(start: Long): Long = WindowBounds.end(start, sizeMs)

  /**
   * @param identityOf builds the state key of (this record's key, a window start)
   * @return true if the record is emitted (first of its window)
   */
  def process(identityOf: Long => K, keyIsNull: Boolean, ts: Long, tsIsNull: Boolean): Boolean = {
    if (tsIsNull) { counters.add(NullTimestampsDropped); return false }
    streamTime.advance(ts)
    if (keyIsNull) { counters.add(NullKeysDropped); return false }
    val start = windowStart(ts)
    val end = windowEnd(start)
    if (streamTime.isClosed(end, graceMs)) {
      counters.add(LateDropped)
      false
    } else {
      val id = identityOf(start)
      if (state.get(id) != DedupState.NoEntry) {
        counters.add(DuplicatesDropped)
        false
      } else {
        state.put(id, end, replaces = false)
        counters.add(WindowsStored)
        counters.add(Emitted)
        true
      }
    }
  }

  def finish(): Unit = {
    counters.add(WindowsPurged, state.purgeOlderThan(streamTime.firstOpenEnd(graceMs)))
    state.streamTime = streamTime.current
    counters.set(StoredWindows, state.numEntries)
  }
}
