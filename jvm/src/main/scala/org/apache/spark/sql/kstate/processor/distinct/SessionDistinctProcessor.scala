package org.apache.spark.sql.kstate.processor.distinct

import scala.collection.mutable

import org.apache.spark.sql.kstate.processor.{Counters, StreamTime}

/**
 * The windowed `distinct()` of KIP-655's original proposal on session windows: a record is
 * emitted iff it starts a new session of its key (no existing session within the inactivity
 * gap, inclusive); a record within the gap of sessions joins and merges them and is dropped.
 * The emitted record's window is `[ts, ts]`, the session as it is at emission.
 *
 * Per record: null key or null timestamp → dropped; stream time := max(stream time, ts);
 * the merged session is late, and the record dropped, if its end < stream time − grace
 * (Kafka's rule for session windows). Sessions ending before stream time − grace − gap can no
 * longer merge with a non-late record and are purged.
 */
final class SessionDistinctProcessor[K](
    gapMs: Long,
    graceMs: Long,
    state: SessionState[K],
    val counters: Counters = DistinctMetrics.newCounters()
) {
  import DistinctMetrics._

  private val streamTime = new StreamTime(state.streamTime)

  def advanceStreamTime(t: Long): Unit = streamTime.advance(t)

  /** @return true if the record is emitted (it starts a new session) */
  def process(key: K, keyIsNull: Boolean, ts: Long, tsIsNull: Boolean): Boolean = {
    if (tsIsNull) { counters.add(NullTimestampsDropped); return false }
    streamTime.advance(ts)
    if (keyIsNull) { counters.add(NullKeysDropped); return false }
    val closeTime = streamTime.closeTime(graceMs)
    val purgeBound = StreamTime.minus(closeTime, gapMs)
    val sessions = state.get(key)
    val lo = StreamTime.minus(ts, gapMs)
    val hi = StreamTime.plus(ts, gapMs)
    var mergedStart = ts
    var mergedEnd = ts
    var overlaps = 0
    val kept = mutable.ArrayBuilder.make[Long]
    var i = 0
    while (i < sessions.length) {
      val (s, e) = (sessions(i), sessions(i + 1))
      if (e >= lo && s <= hi) {
        overlaps += 1
        if (s < mergedStart) mergedStart = s
        if (e > mergedEnd) mergedEnd = e
      } else if (e >= purgeBound) {
        kept += s; kept += e
      } else {
        counters.add(WindowsPurged) // can no longer merge with a non-late record
      }
      i += 2
    }
    if (mergedEnd < closeTime) {
      counters.add(LateDropped)
      false
    } else {
      kept += mergedStart; kept += mergedEnd // late records never change state
      state.put(key, kept.result())
      if (overlaps == 0) {
        counters.add(WindowsStored)
        counters.add(Emitted)
        true
      } else {
        counters.add(DuplicatesDropped)
        false
      }
    }
  }

  def finish(): Unit = {
    val bound = StreamTime.minus(streamTime.closeTime(graceMs), gapMs)
    // Keys whose sessions all ended before the bound; older sessions of active keys are
    // discarded when the key is next rewritten (see process).
    counters.add(WindowsPurged, state.purgeOlderThan(bound))
    state.streamTime = streamTime.current
    counters.set(StoredWindows, state.numSessions)
  }
}
