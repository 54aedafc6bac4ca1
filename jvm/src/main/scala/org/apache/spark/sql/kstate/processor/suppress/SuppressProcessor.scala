package org.apache.spark.sql.kstate.processor.suppress

import org.apache.spark.sql.kstate.processor.{Counters, StreamTime}

/**
 * Kafka's `KTableSuppressProcessor` for one state partition, over a [[SuppressBuffer]]. Buffer
 * time is the record's timestamp (`untilTimeLimit`) or its window's end (`untilWindowCloses`),
 * given by the caller; `limitMs` is the time limit or the grace.
 *
 * For each record, in processing order (Kafka's order of steps):
 *  1. a null timestamp, null key or null buffer time (window end): dropped, counted as a null
 *     key or a null timestamp; stream time unchanged;
 *  2. stream time := max(stream time, ts); expiry := stream time − limit;
 *  3. until window closes only: an update whose window has closed (end ≤ expiry) is dropped as
 *     late, so that a window's final result is emitted once (kstate's rule: Kafka's windowed
 *     aggregation drops such records before suppress sees them);
 *  4. the record is buffered under its key: a new key at its buffer time; a buffered key keeps
 *     its buffer time and the replaced value counts as a suppressed update;
 *  5. every record with buffer time ≤ expiry is emitted, oldest first (by buffer time, then key);
 *  6. the limits are enforced ([[SuppressBuffer.enforceLimits]]): emit the oldest early,
 *     `KSTATE_BUFFER_FULL`, or (spill to disk) keep everything.
 * At the end of the batch ([[finish]]), after the watermark-follow `advanceStreamTime`, steps 5
 * and 6 run once more. Emitted records are the buffered ones, unchanged. While stream time is
 * unknown or expiry saturates at `Long.MinValue`, nothing expires and nothing is late.
 *
 * Counts into [[SuppressMetrics]]. Not thread-safe; one instance per task.
 */
final class SuppressProcessor[K, V, E](
    buffer: SuppressBuffer[K, V, E],
    limitMs: Long,
    untilWindowCloses: Boolean,
    initialStreamTime: Long,
    val counters: Counters = SuppressMetrics.newCounters()
) {
  import SuppressMetrics._
  require(limitMs >= 0, s"time limit must be >= 0, got $limitMs")
  require(counters.set eq SuppressMetrics, "counters of another operator")
  private val streamTime = new StreamTime(initialStreamTime)

  /** Raises stream time to at least `t` (the watermark-follow option). */
  def advanceStreamTime(t: Long): Unit = streamTime.advance(t)

  def currentStreamTime: Long = streamTime.current

  private def expiry: Long = streamTime.closeTime(limitMs)

  /**
   * Processes one record. `key` and `value` are ignored (may be null) when the key, the
   * timestamp or the buffer time is null; records emitted go to `emit`.
   */
  def process(
      key: K,
      keyIsNull: Boolean,
      value: V,
      ts: Long,
      tsIsNull: Boolean,
      bufferTime: Long,
      bufferTimeIsNull: Boolean,
      emit: E => Unit
  ): Unit = {
    if (tsIsNull) { counters.add(NullTimestamps); return }
    if (keyIsNull) { counters.add(NullKeys); return }
    if (bufferTimeIsNull) { counters.add(NullTimestamps); return }
    streamTime.advance(ts)
    if (untilWindowCloses && expiry != Long.MinValue && bufferTime <= expiry) {
      counters.add(LateDropped)
      return
    }
    if (buffer.put(key, value, ts, bufferTime)) counters.add(SuppressedUpdates)
    notePeak()
    evict(emit)
  }

  private def evict(emit: E => Unit): Unit = {
    val e = expiry
    if (e != Long.MinValue) buffer.evictUpTo(e) { r => counters.add(Emitted); emit(r) }
    buffer.enforceLimits { r => counters.add(EarlyEvictions); counters.add(Emitted); emit(r) }
  }

  /** The buffer's largest size in this micro-batch (after a put, before evictions). */
  private def notePeak(): Unit = {
    counters.raise(BufferRecordsMax, buffer.numRecords)
    counters.raise(BufferBytesMax, buffer.numBytes)
  }

  /** Ends the batch: emits what expired (stream time may have followed the watermark). */
  def finish(emit: E => Unit): Unit = {
    notePeak() // a micro-batch without puts: the buffer's size at its start
    evict(emit)
    counters.set(BufferRecords, buffer.numRecords)
    counters.set(BufferBytes, buffer.numBytes)
  }

  /**
   * After [[finish]], until window closes: the smallest window end a later emitted record can
   * have (windows ending at or before expiry were emitted or are dropped).
   */
  def outputTimeFloor: Long = streamTime.firstOpenEnd(limitMs)
}
