package org.apache.spark.sql.kstate.processor.suppress

import io.kstate.suppress.WhenFull

/**
 * KIP-328's time-ordered key/value buffer as the [[SuppressProcessor]] sees it: keys `K`, values
 * `V`, and records leaving it as `E` (the implementation's own record type, handed back to the
 * caller unchanged).
 *
 * Contract:
 *  - `put` of a new key buffers it at `bufferTime`; `put` of a buffered key replaces its value and
 *    record time but keeps its buffer time (a key's timer is not restarted); it returns whether
 *    it replaced a record.
 *  - Order is (buffer time, key): oldest first, deterministic whatever order keys were put in.
 *  - `evictWhile(cond)(f)` removes records oldest first, calling `f` for each, as long as `cond`
 *    holds before each removal; `cond` may read `numRecords`, `numBytes` and `minBufferTime`,
 *    which already reflect the removals so far; `f` must not modify the buffer.
 *  - `numRecords` and `numBytes` are exact (the implementation defines a record's bytes);
 *    `minBufferTime` is the oldest buffer time, `Long.MaxValue` when empty.
 *  - Keys and values passed in are kept; the caller does not reuse them.
 */
trait SuppressBuffer[K, V, E] {

  /** The buffer's name in errors (the operator's name). */
  def name: String
  def limits: BufferLimits
  def numRecords: Long
  def numBytes: Long
  def minBufferTime: Long
  def put(key: K, value: V, recordTime: Long, bufferTime: Long): Boolean
  def evictWhile(cond: => Boolean)(f: E => Unit): Unit

  /** Evicts every record buffered at or before `time`, oldest first. */
  final def evictUpTo(time: Long)(f: E => Unit): Unit = evictWhile(minBufferTime <= time)(f)

  /**
   * Kafka's `enforceConstraints`, after every put: emit early evicts the oldest records through
   * `emitEarly` until within the limits; shut down fails with `KSTATE_BUFFER_FULL` (the caller's
   * batch is not committed, so nothing is lost); spill to disk keeps everything (its limits
   * bound the heap, not the buffer).
   */
  final def enforceLimits(emitEarly: E => Unit): Unit = limits.whenFull match {
    case WhenFull.EmitEarly => evictWhile(limits.exceededBy(numRecords, numBytes))(emitEarly)
    case _ => limits.shutDownIfExceeded(name, numRecords, numBytes)
  }
}
