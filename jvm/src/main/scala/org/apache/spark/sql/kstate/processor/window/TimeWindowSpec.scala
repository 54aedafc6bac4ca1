package org.apache.spark.sql.kstate.processor.window

import io.kstate.windows.WindowBounds

/**
 * Kafka's time windows (tumbling when `advanceMs == sizeMs`, else hopping): epoch-aligned
 * `[k * advance, k * advance + size)`, closed once end ≤ stream time − grace. Bounds saturate at
 * the ends of the `Long` range ([[WindowBounds]]).
 */
final case class TimeWindowSpec(sizeMs: Long, advanceMs: Long, graceMs: Long) {
  require(sizeMs > 0 && advanceMs > 0 && advanceMs <= sizeMs && graceMs >= 0, s"invalid time windows $this")

  def isTumbling: Boolean = advanceMs == sizeMs

  /**
   * Starts of the windows containing `ts`, ascending. As in Kafka, a record with a non-negative
   * timestamp joins no window starting before 0; negative timestamps (which Kafka rejects) join
   * every window containing them.
   */
  def windowStarts(ts: Long): Array[Long] = {
    val last = WindowBounds.alignedStart(ts, advanceMs)
    if (isTumbling) return Array(last)
    var first = last
    var n = 1
    while (
      first >= Long.MinValue + advanceMs && ts - (first - advanceMs) < sizeMs &&
      (ts < 0 || first - advanceMs >= 0)
    ) {
      first -= advanceMs
      n += 1
    }
    val starts = new Array[Long](n)
    var i = 0
    while (i < n) { starts(i) = first + i * advanceMs; i += 1 }
    starts
  }

  def windowEnd(start: Long): Long = WindowBounds.end(start, sizeMs)
}
