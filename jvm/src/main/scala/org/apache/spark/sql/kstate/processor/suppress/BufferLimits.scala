package org.apache.spark.sql.kstate.processor.suppress

import org.apache.spark.sql.kstate.errors.KStateErrors
import io.kstate.suppress.{BufferConfig, WhenFull}

/**
 * Limits of a time-ordered buffer: at most `maxRecords` records and `maxBytes` bytes (as
 * counted by the buffer, kstate's: `TimeOrderedBuffer.recordBytes`); `Long.MaxValue` means
 * unbounded. The internal form of the public [[BufferConfig]] ([[BufferLimits.of]]).
 */
final case class BufferLimits(
    maxRecords: Long = Long.MaxValue,
    maxBytes: Long = Long.MaxValue,
    whenFull: WhenFull = WhenFull.ShutDown
) {
  require(maxRecords > 0 && maxBytes > 0, s"buffer limits must be positive: $this")

  def isStrict: Boolean = whenFull.isStrict
  def isBounded: Boolean = maxRecords != Long.MaxValue || maxBytes != Long.MaxValue

  /** Spills to disk past its limits (spill to disk with a bound; unbounded never spills). */
  def spills: Boolean = whenFull == WhenFull.SpillToDisk && isBounded
  def exceededBy(records: Long, bytes: Long): Boolean = records > maxRecords || bytes > maxBytes

  /** Shut down when full: `KSTATE_BUFFER_FULL` naming `buffer` if `records` or `bytes` exceed the limits. */
  def shutDownIfExceeded(buffer: String, records: Long, bytes: Long): Unit =
    if (whenFull == WhenFull.ShutDown && exceededBy(records, bytes)) {
      throw KStateErrors.bufferFull(buffer, records, bytes, maxRecords, maxBytes)
    }
}

object BufferLimits {

  /** The limits a user's buffer config sets. */
  def of(config: BufferConfig[_]): BufferLimits = BufferLimits(config.maxRecords, config.maxBytes, config.whenFull)
}
