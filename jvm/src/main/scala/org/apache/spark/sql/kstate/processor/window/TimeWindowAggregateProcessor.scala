package org.apache.spark.sql.kstate.processor.window

import org.apache.spark.sql.kstate.processor.{Counters, StreamTime}
import org.apache.spark.sql.kstate.processor.suppress.BufferLimits

/**
 * Kafka's `KStreamWindowAggregate` over time windows ([[TimeWindowSpec]]) for one state
 * partition, optionally fused with `suppress(untilWindowCloses)` (`finalResults`: the buffer's
 * limits). Records `R` with keys `K` fold into aggregates `A` through an [[Aggregator]]; results
 * go to a [[WindowResults]] sink.
 *
 * For each record, in processing order:
 *  1. a null timestamp: dropped (counted), stream time unchanged;
 *  2. a null key: dropped (counted), stream time unchanged;
 *  3. its lateness (stream time − ts, when positive) is counted, then stream time :=
 *     max(stream time, ts); close time := stream time − grace;
 *  4. for each window containing ts (ascending start): aggregated into it if its end > close
 *     time (a window's first record starts from the aggregator's initial value), else dropped
 *     for that window as late (counted per window, as Kafka's dropped-records sensor does).
 * At the end of the batch ([[finish]]; stream time may have followed the watermark):
 *  5. windows with end ≤ close time are closed and leave the state;
 *  6. without suppression, each window changed in the batch is emitted once with its latest
 *     value: first those stored before that close now (in end order), then the rest in the
 *     order they first changed (windows created and closed in this batch among them); closed
 *     windows not changed in the batch are not emitted again;
 *  7. with final results, only the windows closing now are emitted, each exactly once, in end
 *     order (ties: windows stored before first, in the state's order, then this batch's new
 *     ones in the order they first changed);
 *  8. final results with shut down when full: more open windows (or bytes) than the limits
 *     allow fails the batch with `KSTATE_BUFFER_FULL` (nothing is committed).
 * Changed windows are held on the heap during the batch (each read from the state once) and
 * written at its end; with final results that spill to disk, every [[FlushEvery]] changed
 * windows are written early, so the heap holds a bounded number of them.
 *
 * Counts into [[TimeWindowAggregateMetrics]] (`LateDroppedTotal` is the caller's: it is kept
 * with the state across batches). Not thread-safe; one instance per task.
 */
final class TimeWindowAggregateProcessor[R, K, A](
    windows: TimeWindowSpec,
    aggregator: Aggregator[R, A],
    state: TimeWindowState[K, A],
    copyKey: K => K,
    finalResults: Option[BufferLimits],
    bufferName: String,
    results: WindowResults[K, A],
    val counters: Counters = TimeWindowAggregateMetrics.newCounters()
) {
  import TimeWindowAggregateMetrics._
  require(counters.set eq TimeWindowAggregateMetrics, "counters of another operator")

  private val streamTime = new StreamTime(state.streamTime)
  private val graceMs = windows.graceMs
  private val changed = new java.util.LinkedHashMap[WindowRef[K], WindowValue[A]]()
  private val probe = new WindowRef[K](null.asInstanceOf[K], 0L)
  private val isFinal = finalResults.isDefined
  private val flushEarly = finalResults.exists(_.spills)

  /** Raises stream time to at least `t` (the watermark-follow option). */
  def advanceStreamTime(t: Long): Unit = streamTime.advance(t)

  def currentStreamTime: Long = streamTime.current

  /** Processes one record; `key` is ignored when `keyIsNull` or `tsIsNull`, `ts` when `tsIsNull`. */
  def process(record: R, key: K, keyIsNull: Boolean, ts: Long, tsIsNull: Boolean): Unit = {
    if (tsIsNull) { counters.add(NullTimestamps); return }
    if (keyIsNull) { counters.add(NullKeys); return }
    recordSeen(counters, streamTime, ts)
    streamTime.advance(ts)
    val starts = windows.windowStarts(ts)
    var i = 0
    while (i < starts.length) {
      val start = starts(i)
      val end = windows.windowEnd(start)
      if (!streamTime.isClosed(end, graceMs)) {
        var w = changed.get(probe.set(key, start))
        if (w == null) {
          w = new WindowValue[A](null.asInstanceOf[A], ts, end, -1)
          if (!state.get(key, start, w)) w.agg = aggregator.initial()
          changed.put(new WindowRef(copyKey(key), start), w)
        }
        w.agg = aggregator.add(w.agg, record)
        if (ts > w.maxTs) w.maxTs = ts
        counters.add(Updates)
        if (flushEarly && changed.size >= TimeWindowAggregateProcessor.FlushEvery) {
          writeChanged(Long.MinValue) // nothing closes here: every changed window is written
        }
      } else counters.add(LateDropped)
      i += 1
    }
  }

  private def emit(key: K, start: Long, w: WindowValue[A]): Unit = {
    results.result(key, start, w.end, w.agg, w.maxTs)
    counters.add(Emitted)
  }

  /**
   * Writes the changed windows that stay open (end >= `bound`) to the state and, without
   * suppression, emits every changed window. Changed windows that close now were never stored
   * (stored ones were closed by the state already): they are not written.
   */
  private def writeChanged(bound: Long): Unit = {
    changed.forEach { (ref, w) =>
      if (w.end < bound) {
        if (!isFinal) emit(ref.key, ref.start, w)
        counters.add(Closed)
      } else {
        state.put(ref.key, ref.start, w)
        if (!isFinal) emit(ref.key, ref.start, w)
      }
    }
    changed.clear()
  }

  /** Ends the batch: closes windows, emits results, persists stream time (rules 5 to 8). */
  def finish(): Unit = {
    val bound = streamTime.firstOpenEnd(graceMs)
    if (bound != Long.MinValue) {
      // changed windows never stored that close now: merged into the stored ones' end order
      val fresh = new java.util.ArrayList[java.util.Map.Entry[WindowRef[K], WindowValue[A]]]()
      if (isFinal) {
        changed.entrySet().forEach(e => if (e.getValue.end < bound && !e.getValue.isStored) fresh.add(e))
        fresh.sort((a, b) => java.lang.Long.compare(a.getValue.end, b.getValue.end)) // stable
      }
      var next = 0
      // stored windows that close now leave first, while this batch's changes are still on the heap
      val closed = state.closeBefore(
        bound,
        new ClosedWindow[K, A] {
          override def closed(key: K, start: Long, agg: A, maxTs: Long): Unit = {
            val w = changed.remove(probe.set(key, start)) // changed in this batch: latest value on the heap
            val end = windows.windowEnd(start)
            if (isFinal) {
              while (next < fresh.size && fresh.get(next).getValue.end < end) {
                val e = fresh.get(next); emit(e.getKey.key, e.getKey.start, e.getValue); next += 1
              }
              if (w != null) emit(key, start, w)
              else { results.result(key, start, end, agg, maxTs); counters.add(Emitted) }
            } else if (w != null) emit(key, start, w)
          }
        }
      )
      while (next < fresh.size) { val e = fresh.get(next); emit(e.getKey.key, e.getKey.start, e.getValue); next += 1 }
      counters.add(Closed, closed)
    }
    writeChanged(bound)
    finalResults.foreach(_.shutDownIfExceeded(bufferName, state.records, state.bytes))
    counters.set(BufferRecords, state.records)
    counters.set(BufferBytes, state.bytes)
    state.finish(streamTime.current)
  }

  /** After [[finish]]: windows ending before this are closed, so later results end at or after it. */
  def outputTimeFloor: Long = streamTime.firstOpenEnd(graceMs)
}

object TimeWindowAggregateProcessor {

  /** With final results that spill, changed windows are written to the state once this many collect. */
  val FlushEvery: Int = 4096
}
