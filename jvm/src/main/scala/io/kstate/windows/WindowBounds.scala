package io.kstate.windows

/**
 * Window bound arithmetic that saturates at the ends of the `Long` range instead of wrapping:
 * a window whose start would lie before `Long.MinValue` starts at `Long.MinValue`, one whose
 * end would lie after `Long.MaxValue` ends at `Long.MaxValue` (epoch milliseconds; such a
 * window is shorter than its size). Without it a timestamp near `Long.MinValue`
 * (e.g. -2^63 + 5) would get a window start near `Long.MaxValue`.
 */
object WindowBounds {

  /** The start of the epoch-aligned window of `ts` (`[k * advance, ...)`), clamped to `Long.MinValue`. */
  def alignedStart(ts: Long, advanceMs: Long): Long = {
    val offset = Math.floorMod(ts, advanceMs)
    if (ts < Long.MinValue + offset) Long.MinValue else ts - offset
  }

  /** `start + length`, clamped to `Long.MaxValue`. */
  def end(start: Long, lengthMs: Long): Long =
    if (start > Long.MaxValue - lengthMs) Long.MaxValue else start + lengthMs
}
