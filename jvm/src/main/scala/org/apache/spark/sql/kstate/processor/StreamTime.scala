package org.apache.spark.sql.kstate.processor

/**
 * Kafka's stream time of one state partition (one Kafka task): the largest event timestamp the
 * operator has seen there, [[StreamTime.Unknown]] before the first. Every processor keeps one,
 * read from its state at the start of a micro-batch and written back at the end.
 *
 * The questions operators ask of it, in Kafka's words:
 *  - `advance(ts)`: stream time := max(stream time, ts) (also the watermark-follow option);
 *  - `closeTime(grace)`: stream time − grace; a window with end ≤ close time is closed, a
 *    record for it is late (`isClosed`);
 *  - `firstOpenEnd(grace)`: the smallest window end that is still open (close time + 1), the
 *    bound for "remove every window ending before it" and for output watermarks;
 *  - `latenessOf(ts)`: Kafka's record lateness, stream time − ts when positive, measured before
 *    the record advances stream time (saturating at `Long.MaxValue`).
 * Arithmetic saturates at `Long.MinValue` / `Long.MaxValue`: no timestamp or grace overflows.
 * Not thread-safe; one per task.
 */
final class StreamTime(initial: Long) {
  private var t: Long = initial

  def current: Long = t
  def isKnown: Boolean = t != StreamTime.Unknown

  def advance(ts: Long): Unit = if (ts > t) t = ts

  def closeTime(graceMs: Long): Long = StreamTime.minus(t, graceMs)

  def isClosed(windowEnd: Long, graceMs: Long): Boolean = windowEnd <= closeTime(graceMs)

  /**
   * close time + 1: windows ending before it are closed. `Long.MinValue` while stream time is
   * unknown (nothing is closed), `Long.MaxValue` when the close time is.
   */
  def firstOpenEnd(graceMs: Long): Long = {
    val c = closeTime(graceMs)
    if (c == Long.MinValue || c == Long.MaxValue) c else c + 1
  }

  def latenessOf(ts: Long): Long =
    if (t != StreamTime.Unknown && ts < t) { val d = t - ts; if (d < 0) Long.MaxValue else d } // saturates
    else 0L

  override def toString: String = if (isKnown) s"StreamTime($t)" else "StreamTime(unknown)"
}

object StreamTime {

  /** Stream time before any record was seen (also how state stores record "none"). */
  val Unknown: Long = Long.MinValue

  /** `a - b` saturating at `Long.MinValue` (b >= 0). */
  def minus(a: Long, b: Long): Long = if (a < Long.MinValue + b) Long.MinValue else a - b

  /** `a + b` saturating at `Long.MaxValue` (b >= 0). */
  def plus(a: Long, b: Long): Long = if (a > Long.MaxValue - b) Long.MaxValue else a + b

  /** |a - b| <= d without overflow (d >= 0). */
  def within(a: Long, b: Long, d: Long): Boolean =
    if (a >= b) minus(a, d) <= b else minus(b, d) <= a
}
