package io.kstate.windows

import java.time.{Duration => JDuration}

import io.kstate.{ArgumentErrors, Durations}

/**
 * Window specifications, as in Kafka Streams. Grace is per window spec: a record is dropped as
 * late for a window once the partition's stream time reaches window end + grace.
 */
sealed trait Windows extends Serializable {
  def graceMs: Long

  /** Recorded in the checkpoint: a change on restart is an error. */
  def describe: String
}

/**
 * Fixed-size, epoch-aligned windows: tumbling (`advanceMs == sizeMs`) or hopping.
 * Window `[start, start + size)` with `start = ts - (ts mod advance)`.
 */
final case class TimeWindows private (sizeMs: Long, advanceMs: Long, graceMs: Long) extends Windows {
  def advanceBy(advance: String): TimeWindows = advanceBy(Durations.toMillis("advance", advance))
  def advanceBy(advance: JDuration): TimeWindows = advanceBy(Durations.toMillis("advance", advance))
  def advanceBy(advanceMs: Long): TimeWindows = {
    if (advanceMs <= 0 || advanceMs > sizeMs) {
      throw ArgumentErrors.invalidWindow(s"advance must be > 0 and <= size ($sizeMs ms), got $advanceMs ms")
    }
    copy(advanceMs = advanceMs)
  }
  def grace(grace: String): TimeWindows = copy(graceMs = Durations.toMillis("grace", grace))
  def grace(grace: JDuration): TimeWindows = copy(graceMs = Durations.toMillis("grace", grace))
  def grace(graceMs: Long): TimeWindows = copy(graceMs = Durations.toMillis("grace", graceMs))
  def isTumbling: Boolean = advanceMs == sizeMs
  override def describe: String = s"TimeWindows(size=$sizeMs,advance=$advanceMs,grace=$graceMs)"
}

object TimeWindows {

  /** Tumbling windows of `size`, no grace (Kafka's `ofSizeWithNoGrace`); add `.grace(...)`. */
  def ofSize(size: String): TimeWindows = ofSize(Durations.toMillis("size", size))
  def ofSize(size: JDuration): TimeWindows = ofSize(Durations.toMillis("size", size))
  def ofSize(sizeMs: Long): TimeWindows = {
    if (sizeMs <= 0) throw ArgumentErrors.invalidWindow(s"size must be > 0, got $sizeMs ms")
    TimeWindows(sizeMs, sizeMs, 0L)
  }
}

/**
 * Session windows: records of a key within `gapMs` of each other (inclusive) form one session;
 * a record bridging two sessions merges them.
 */
final case class SessionWindows private (gapMs: Long, graceMs: Long) extends Windows {
  def grace(grace: String): SessionWindows = copy(graceMs = Durations.toMillis("grace", grace))
  def grace(grace: JDuration): SessionWindows = copy(graceMs = Durations.toMillis("grace", grace))
  def grace(graceMs: Long): SessionWindows = copy(graceMs = Durations.toMillis("grace", graceMs))
  override def describe: String = s"SessionWindows(gap=$gapMs,grace=$graceMs)"
}

object SessionWindows {

  /** Sessions split by an inactivity gap, no grace; add `.grace(...)`. */
  def withInactivityGap(gap: String): SessionWindows = withInactivityGap(Durations.toMillis("gap", gap))
  def withInactivityGap(gap: JDuration): SessionWindows = withInactivityGap(Durations.toMillis("gap", gap))
  def withInactivityGap(gapMs: Long): SessionWindows = {
    if (gapMs <= 0) throw ArgumentErrors.invalidWindow(s"inactivity gap must be > 0, got $gapMs ms")
    SessionWindows(gapMs, 0L)
  }
}

/**
 * Kafka's sliding windows (KIP-450): fixed-size windows placed by the records themselves. For a
 * key's records, the windows are each record's left window `[ts - d, ts]` (`[0, d]` for a record
 * with ts < d: Kafka's early records) and its right window `[ts + 1, ts + 1 + d]` when that holds
 * a record; both bounds inclusive, `d` the time difference. A window is closed once its end <
 * stream time - grace.
 */
final case class SlidingWindows private (timeDifferenceMs: Long, graceMs: Long) extends Windows {
  def grace(grace: String): SlidingWindows = copy(graceMs = Durations.toMillis("grace", grace))
  def grace(grace: JDuration): SlidingWindows = copy(graceMs = Durations.toMillis("grace", grace))
  def grace(graceMs: Long): SlidingWindows = copy(graceMs = Durations.toMillis("grace", graceMs))
  override def describe: String = s"SlidingWindows(timeDifference=$timeDifferenceMs,grace=$graceMs)"
}

object SlidingWindows {

  /** Windows of records at most `timeDifference` apart (inclusive), no grace; add `.grace(...)`. */
  def ofTimeDifference(timeDifference: String): SlidingWindows =
    ofTimeDifference(Durations.toMillis("time difference", timeDifference))
  def ofTimeDifference(timeDifference: JDuration): SlidingWindows =
    ofTimeDifference(Durations.toMillis("time difference", timeDifference))
  def ofTimeDifference(timeDifferenceMs: Long): SlidingWindows = {
    if (timeDifferenceMs < 0)
      throw ArgumentErrors.invalidWindow(s"time difference must be >= 0, got $timeDifferenceMs ms")
    SlidingWindows(timeDifferenceMs, 0L)
  }
}
