package org.apache.spark.sql.kstate.processor.suppress

import io.kstate.KStateErrors

/** What a [[SuppressBuffer]] does when it holds more than its limits allow (KIP-328). */
sealed trait WhenFull {
  /** Strict: never emits a record early or drops one. */
  def isStrict: Boolean
}

object WhenFull {
  /** Emit the oldest records (by buffer time) early until back within the limits. */
  case object EmitEarly extends WhenFull { val isStrict = false }
  /** Fail the micro-batch with `KSTATE_BUFFER_FULL`; nothing is committed. */
  case object ShutDown extends WhenFull { val isStrict = true }
  /**
   * Keep everything: the limits bound the buffer's heap, not its size. Changes past the heap
   * limit are spilled to the store's local disk.
   */
  case object SpillToDisk extends WhenFull { val isStrict = true }
}

/**
 * Limits of a time-ordered buffer: at most `maxRecords` records and `maxBytes` bytes (as
 * counted by the buffer (kstate's: `TimeOrderedBuffer.recordBytes`)); `Long.MaxValue` means unbounded.
 */
final case class BufferLimits(
    maxRecords: Long = Long.MaxValue,
    maxBytes: Long = Long.MaxValue,
    whenFull: WhenFull = WhenFull.ShutDown) {
  require(maxRecords > 0 && maxBytes > 0, s"buffer limits must be positive: $this")

  def isStrict: Boolean = whenFull.isStrict
  def isBounded: Boolean = maxRecords != Long.MaxValue || maxBytes != Long.MaxValue
  def exceededBy(records: Long, bytes: Long): Boolean = records > maxRecords || bytes > maxBytes
  /** Spill to disk with a bound: the limits bound the store's heap, changes past it spill. */
  def spills: Boolean = whenFull == WhenFull.SpillToDisk && isBounded

  /** Shut down when full: `KSTATE_BUFFER_FULL` naming `buffer` if `records` or `bytes` exceed the limits. */
  def shutDownIfExceeded(buffer: String, records: Long, bytes: Long): Unit =
    if (whenFull == WhenFull.ShutDown && exceededBy(records, bytes)) {
      throw KStateErrors.bufferFull(buffer, records, bytes, maxRecords, maxBytes)
    }
}
