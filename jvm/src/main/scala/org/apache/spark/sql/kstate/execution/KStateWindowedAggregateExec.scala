package org.apache.spark.sql.kstate.execution

import scala.collection.mutable.ArrayBuffer

import io.kstate.ProcessingOrder
import org.apache.spark.sql.kstate.processor.StreamTime
import io.kstate.suppress.UntilWindowCloses
import io.kstate.windows.{TimeWindows, WindowBounds}

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, BoundReference, Expression, GenericInternalRow, JoinedRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperatorStateInfo
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.state.{HeapWindowAggState, RunningTotal, StateMeta, StoreWindowAggState, WindowAggState}
import org.apache.spark.sql.types._

/**
 * Physical windowed aggregation ([[org.apache.spark.sql.kstate.plans.KStateWindowedAggregate]]):
 * Kafka's `KStreamWindowAggregate` per state partition, optionally fused with
 * `suppress(untilWindowCloses)`.
 *
 * Per record, in task order (Kafka's rules):
 *  - a null timestamp or a null key: dropped (counted), stream time unchanged;
 *  - stream time := max(stream time, ts); close time := stream time - grace;
 *  - for each window containing ts (ascending start): the record is aggregated into it if
 *    window end > close time, else dropped for that window as late (counted per window, as
 *    Kafka's dropped-records sensor does).
 * Changed windows are aggregated on the heap during the batch (read from the store once) and
 * written at its end. Then, without suppression, each changed window's value is emitted once;
 * with `finalResults`, nothing is emitted until a window closes (end <= stream time - grace),
 * and then exactly once, in window-end order. Closed windows leave the state either way.
 */
case class KStateWindowedAggregateExec(
    windows: TimeWindows,
    operatorName: String,
    fingerprint: Map[String, String],
    key: Expression,
    timestamp: Expression,
    bufferAttributes: Seq[Attribute],
    initialValues: Seq[Expression],
    updateExpressions: Seq[Expression],
    resultExpressions: Seq[Expression],
    finalResults: Option[UntilWindowCloses],
    output: Seq[Attribute],
    providerClass: String,
    followWatermark: Boolean,
    processingOrder: ProcessingOrder,
    stateInfo: Option[StatefulOperatorStateInfo],
    child: SparkPlan) extends KStateStatefulExec {

  override def shortName: String = "kstate_windowed_aggregate"
  override def storeCapabilities: Set[StoreCapability] = StoreCapability.ofAggregate(finalResults)
  override def partitionBy: Seq[Expression] = Seq(key)
  override protected def emitsOnTime: Boolean = true
  override protected def tracksOutputTime: Boolean = true


  override protected def stateKeySchema: StructType = StructType(Seq(
    StructField("key", key.dataType, nullable = true),
    StructField("window_start", LongType, nullable = false)))
  override protected def stateValueSchema: StructType = StructType(
    bufferAttributes.map(a => StructField(a.name, a.dataType, a.nullable)) :+
      StructField("max_timestamp", LongType, nullable = false))
  override protected def customMetricDescriptions: Seq[(String, String)] =
    KStateWindowedAggregateExec.CustomMetrics
  override protected def maxMetrics: Set[String] = AggregateMetrics.Maxima
  override protected def averageMetrics: Seq[(String, String, String)] = AggregateMetrics.Averages

  override protected def newTask(store: Option[StateStore]): KStateTask = {
    // two entries per window: its value and its time index entry
    FinalResultsBuffer.boundHeap(finalResults, store, entriesPerRecord = 2)
    new AggregateTask(
      store.map(s => new StoreWindowAggState(s, stateKeySchema)).getOrElse(new HeapWindowAggState),
      new RunningTotal(store.map(new StateMeta(_)), StateMeta.LateDroppedTotal))
  }

  /**
   * One window changed in this batch: its buffer, largest timestamp, end, and the size of its
   * stored value (-1: not stored yet).
   */
  private final class Changed(var buffer: UnsafeRow, var maxTs: Long, val end: Long, var storedSize: Int)

  private final class AggregateTask(state: WindowAggState, lateTotal: RunningTotal) extends KStateTask {
    private val w = windows
    private val in = child.output
    private val nBuffer = bufferAttributes.length
    private val keyProj = UnsafeProjection.create(Seq(key), in)
    private val initial = UnsafeProjection.create(initialValues)
    private val update = UnsafeProjection.create(updateExpressions, bufferAttributes ++ in)
    private val bufferOfValue = UnsafeProjection.create(
      bufferAttributes.zipWithIndex.map { case (a, i) => BoundReference(i, a.dataType, a.nullable) })
    private val toValue = UnsafeProjection.create(
      bufferAttributes.zipWithIndex.map { case (a, i) => BoundReference(i, a.dataType, a.nullable) } :+
        BoundReference(nBuffer, LongType, nullable = false))
    private val toStateKey = UnsafeProjection.create(Seq(
      BoundReference(0, key.dataType, nullable = true), BoundReference(1, LongType, nullable = false)))
    // output: key, window start, window end, results (over the buffer), max timestamp
    private val helpers = Seq("key" -> key.dataType, "start" -> output(1).dataType,
      "end" -> output(2).dataType, "ts" -> output.last.dataType)
      .map { case (n, t) => AttributeReference(s"_kstate_$n", t)() }
    private val toOutput = UnsafeProjection.create(
      Seq(helpers(0), helpers(1), helpers(2)) ++ resultExpressions :+ helpers(3), bufferAttributes ++ helpers)
    private val toOutputTime: Long => Long = output(1).dataType match {
      case LongType => identity
      case _ => ms => Math.multiplyExact(ms, 1000L)
    }
    private val joined = new JoinedRow()
    private val tsWriter = new UnsafeRowWriter(1)
    private val startWriter = new UnsafeRowWriter(1)
    private val changed = new java.util.LinkedHashMap[UnsafeRow, Changed]()
    private val flushEarly = FinalResultsBuffer.spills(finalResults)
    private val out = ArrayBuffer.empty[InternalRow]
    private var streamTime = state.streamTime
    private val graceMs = w.graceMs
    private val counters = new Array[Long](KStateWindowedAggregateExec.CustomMetrics.length)

    override def advanceStreamTime(t: Long): Unit = if (t > streamTime) streamTime = t

    private def count(metric: Int, n: Long = 1L): Unit = counters(metric) += n

    private def stateKey(k: UnsafeRow, start: Long): UnsafeRow = {
      startWriter.reset(); startWriter.zeroOutNullBytes(); startWriter.write(0, start)
      toStateKey(joined(k, startWriter.getRow))
    }

    override def process(row: InternalRow, ts: Long, emit: InternalRow => Unit): Unit = {
      import KStateWindowedAggregateExec._
      if (ts == KStateStatefulExec.NullTime) { count(NullTimestamps); return }
      val k = keyProj(row)
      if (k.isNullAt(0)) { count(NullKeys); return }
      AggregateMetrics.recordLateness(counters, LatenessTotal, LatenessMax, streamTime, ts)
      count(Records)
      if (ts > streamTime) streamTime = ts
      val closeTime = StreamTime.minus(streamTime, graceMs)
      val starts = windowStarts(w, ts)
      var i = 0
      while (i < starts.length) {
        val start = starts(i)
        val end = windowEnd(w, start)
        if (end > closeTime) {
          val sk = stateKey(k, start)
          var c = changed.get(sk)
          if (c == null) {
            val stored = state.get(sk)
            c = if (stored == null) new Changed(initial(InternalRow.empty).copy(), ts, end, -1)
              else new Changed(bufferOfValue(stored).copy(), stored.getLong(nBuffer), end, stored.getSizeInBytes)
            changed.put(sk.copy(), c)
          }
          c.buffer = update(joined(c.buffer, row)).copy()
          if (ts > c.maxTs) c.maxTs = ts
          count(Updates)
          // final results that spill emit nothing per batch: changed windows go to the store
          // early, so the heap holds a bounded number of them (the store spills them); other
          // modes keep a batch's changes on the heap until the end of the batch, so that closing
          // windows reads the time index without this batch's writes to merge in
          if (flushEarly && changed.size >= KStateWindowedAggregateExec.FlushEvery) {
            writeChanged(Long.MinValue, null) // nothing closes here: every changed window is written
          }
        } else count(LateDropped)
        i += 1
      }
    }

    private def windowEndOf(sk: UnsafeRow): Long = KStateWindowedAggregateExec.windowEnd(w, sk.getLong(1))

    private def result(sk: UnsafeRow, buffer: UnsafeRow, maxTs: Long): InternalRow = {
      val start = sk.getLong(1)
      val helper = new GenericInternalRow(Array[Any](sk.get(0, key.dataType),
        toOutputTime(start), toOutputTime(KStateWindowedAggregateExec.windowEnd(w, start)), toOutputTime(maxTs)))
      toOutput(joined(buffer, helper)).copy()
    }

    /**
     * Writes the changed windows that stay open (end >= `bound`) to the state; without
     * suppression also emits their update. Changed windows that close now are not written:
     * their update (unsuppressed) or final result goes to `out` / `closing` from the heap.
     */
    private def writeChanged(bound: Long, closing: ArrayBuffer[(Long, InternalRow)]): Unit = {
      import KStateWindowedAggregateExec._
      changed.forEach { (sk, c) =>
        if (c.end < bound) {
          // never stored (a stored one was drained with the index already)
          if (finalResults.isDefined) closing += ((c.end, result(sk, c.buffer, c.maxTs)))
          else { out += result(sk, c.buffer, c.maxTs); count(Emitted) }
          count(Closed)
        } else {
          tsWriter.reset(); tsWriter.zeroOutNullBytes(); tsWriter.write(0, c.maxTs)
          val value = toValue(joined(c.buffer, tsWriter.getRow))
          state.put(sk, value, c.end, c.storedSize)
          c.storedSize = value.getSizeInBytes
          if (finalResults.isEmpty) { out += result(sk, c.buffer, c.maxTs); count(Emitted) }
        }
      }
      changed.clear()
    }

    override def finish(): Unit = {
      import KStateWindowedAggregateExec._
      // closed: end <= stream time - grace, i.e. end < stream time - grace + 1
      val closeTime = StreamTime.minus(streamTime, graceMs)
      val bound =
        if (closeTime == Long.MinValue) Long.MinValue
        else if (closeTime == Long.MaxValue) closeTime else closeTime + 1
      val closing = ArrayBuffer.empty[(Long, InternalRow)]
      // Stored windows that close now leave first, while this batch's changes are still on the
      // heap: the time index is then read without this batch's writes to merge in.
      if (bound != Long.MinValue) {
        val closed = state.closeBefore(bound) { (sk, v) =>
          val c = changed.remove(sk) // changed in this batch: its latest value is on the heap
          val (buffer, maxTs) = if (c != null) (c.buffer, c.maxTs) else (bufferOfValue(v), v.getLong(nBuffer))
          if (finalResults.isDefined) closing += ((windowEndOf(sk), result(sk, buffer, maxTs)))
          else if (c != null) { out += result(sk, buffer, maxTs); count(Emitted) }
        }
        count(Closed, closed)
      }
      writeChanged(bound, closing)
      // final results in window-end order
      closing.sortBy(_._1).foreach { case (_, r) => out += r; count(Emitted) }
      FinalResultsBuffer.checkFull(finalResults, operatorName, state.records, state.bytes)
      counters(BufferRecords) = state.records
      counters(BufferBytes) = state.bytes
      counters(LateDroppedTotal) = lateTotal.save(counters(LateDropped))
      state.finish(streamTime)
    }

    override def finishOutput: Iterator[InternalRow] = out.iterator

    /** Windows with end <= close time are closed: a later row is for a window ending after it. */
    override def outputTimeFloor: Long = {
      val close = StreamTime.minus(streamTime, graceMs)
      if (close == Long.MinValue || close == Long.MaxValue) close else close + 1
    }

    override def metrics: KStateTask.Metrics = {
      import KStateWindowedAggregateExec._
      KStateTask.Metrics.ofCounters(CustomMetrics, counters,
        totalStateRows = state.records,
        updatedStateRows = counters(Updates),
        removedStateRows = counters(Closed))
    }
  }

  override protected def withNewChildInternal(newChild: SparkPlan): KStateWindowedAggregateExec =
    copy(child = newChild)
}

object KStateWindowedAggregateExec {
  val CustomMetrics: Seq[(String, String)] = Seq(
    AggregateMetrics.Records,
    "windowUpdates" -> "window updates (a record updates each open window it falls in)",
    "lateRecordsDropped" -> "records dropped for a window that had closed (end + grace <= stream time), per window",
    AggregateMetrics.NullKeys,
    AggregateMetrics.NullTimestamps,
    "resultsEmitted" -> "rows emitted (updates, or final results when suppressed)",
    "windowsClosed" -> "windows closed and removed from state",
    AggregateMetrics.LatenessTotal,
    AggregateMetrics.LatenessMax,
    "bufferRecords" -> "open windows kept in state",
    "bufferBytes" -> "bytes of the open windows kept in state (keys and values)",
    "lateRecordsDroppedTotal" -> "late records dropped since the query started (kept with the state)")
  private val Records = 0
  private val Updates = 1
  private val LateDropped = 2
  private val NullKeys = 3
  private val NullTimestamps = 4
  private val Emitted = 5
  private val Closed = 6
  private val LatenessTotal = 7
  private val LatenessMax = 8
  private val BufferRecords = 9
  private val BufferBytes = 10
  private val LateDroppedTotal = 11
  /** With final results, changed windows are written to the store once this many collect. */
  private val FlushEvery = 4096

  /**
   * Starts of the windows containing `ts`, ascending: epoch-aligned `[k * advance, + size)`.
   * As in Kafka, a record with a non-negative timestamp joins no window starting before 0;
   * negative timestamps (which Kafka rejects) join every window containing them.
   */
  def windowStarts(w: TimeWindows, ts: Long): Array[Long] = {
    val last = WindowBounds.alignedStart(ts, w.advanceMs)
    if (w.isTumbling) return Array(last)
    val starts = ArrayBuffer.empty[Long]
    var s = last
    var more = true
    while (more && ts - s < w.sizeMs && (ts < 0 || s >= 0)) {
      starts += s
      if (s < Long.MinValue + w.advanceMs) more = false else s -= w.advanceMs
    }
    starts.reverse.toArray
  }

  def windowEnd(w: TimeWindows, start: Long): Long = WindowBounds.end(start, w.sizeMs)
}
