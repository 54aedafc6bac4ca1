package org.apache.spark.sql.kstate.execution

import scala.collection.mutable
import scala.collection.mutable.ArrayBuffer

import io.kstate.ProcessingOrder
import org.apache.spark.sql.kstate.processor.StreamTime
import io.kstate.suppress.UntilWindowCloses
import io.kstate.windows.{SlidingWindows, WindowBounds}

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, Expression, GenericInternalRow, JoinedRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperatorStateInfo
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.state.{RunningTotal, SessionAggState, StoredSession}
import org.apache.spark.sql.types._

/**
 * Physical sliding-window aggregation ([[org.apache.spark.sql.kstate.plans.KStateWindowedAggregate]]
 * over [[SlidingWindows]]): Kafka's `KStreamSlidingWindowAggregate` per state partition,
 * optionally fused with `suppress(untilWindowCloses)`.
 *
 * The windows of a key, for time difference d (both bounds inclusive, every window d wide): the
 * left window of each record, `[ts - d, ts]` (`[0, d]` when ts < d, Kafka's early records), and
 * the right window of each record, `[ts + 1, ts + 1 + d]`, when it holds a record.
 *
 * Per record, in task order:
 *  - a null or negative timestamp, or a null key: dropped (counted), stream time unchanged
 *    (Kafka rejects negative timestamps for sliding windows);
 *  - stream time := max(stream time, ts); close time := stream time - grace; a window is open
 *    while its end >= close time;
 *  - a record with ts + d < close time is late (every window it could join is closed): dropped;
 *  - otherwise the record joins every open window of its key containing ts, and the windows it
 *    adds to the key's set (its left window, its right window, the right window of the key's
 *    previous record) are created when open, from every record of the key in their range.
 * To create windows from earlier records, a key keeps each record's own aggregate buffer while a
 * window that is still open can contain it or start right after it (ts + d + 1 >= close time).
 *
 * Output: without suppression, every window a micro-batch created or changed, once, with its value
 * at the end of the batch; with `finalResults`, each window once, when it closes (end < close
 * time), in end order. Windows never merge, so there are no tombstones.
 */
case class KStateSlidingAggregateExec(
    windows: SlidingWindows,
    operatorName: String,
    fingerprint: Map[String, String],
    key: Expression,
    timestamp: Expression,
    bufferAttributes: Seq[Attribute],
    initialValues: Seq[Expression],
    updateExpressions: Seq[Expression],
    inputBufferAttributes: Seq[Attribute],
    mergeExpressions: Seq[Expression],
    resultExpressions: Seq[Expression],
    finalResults: Option[UntilWindowCloses],
    output: Seq[Attribute],
    providerClass: String,
    followWatermark: Boolean,
    processingOrder: ProcessingOrder,
    stateInfo: Option[StatefulOperatorStateInfo],
    child: SparkPlan) extends MergingAggregateExec {

  override def shortName: String = "kstate_sliding_aggregate"
  override def storeCapabilities: Set[StoreCapability] = StoreCapability.ofAggregate(finalResults)

  // (key, kind): kind 0 holds the key's windows, kind 1 its records' own buffers
  override protected def stateKeySchema: StructType = StructType(Seq(
    StructField("key", key.dataType, nullable = true), StructField("kind", IntegerType, nullable = false)))
  override protected def customMetricDescriptions: Seq[(String, String)] =
    KStateSlidingAggregateExec.CustomMetrics

  override protected def newTask(store: Option[StateStore]): KStateTask = {
    val (state, lateTotal) = openState(store)
    new SlidingTask(state, lateTotal)
  }

  /** A window while the batch runs: `[start, start + d]`; `changed` in this batch. */
  private final class Win(val start: Long, var buffer: UnsafeRow, var maxTs: Long, var changed: Boolean)

  /**
   * A key's windows (by start) and records (ts, own buffer) in this batch, and both as stored when
   * the batch began.
   */
  private final class KeyState(val windows: mutable.TreeMap[Long, Win], val records: ArrayBuffer[(Long, UnsafeRow)],
      val storedWindows: Array[StoredSession], val storedRecords: Array[StoredSession])

  private final class SlidingTask(state: SessionAggState, lateTotal: RunningTotal) extends KStateTask {
    import KStateSlidingAggregateExec._
    private val d = windows.timeDifferenceMs
    private val graceMs = windows.graceMs
    private val in = child.output
    private val keyProj = UnsafeProjection.create(Seq(key), in)
    private val buffers = new AggregateBuffers(in, bufferAttributes, initialValues, updateExpressions,
      inputBufferAttributes, mergeExpressions)
    private val helpers = Seq("key" -> key.dataType, "start" -> output(1).dataType,
      "end" -> output(2).dataType, "ts" -> output.last.dataType)
      .map { case (n, t) => AttributeReference(s"_kstate_$n", t)() }
    private val toOutput = UnsafeProjection.create(
      Seq(helpers(0), helpers(1), helpers(2)) ++ resultExpressions :+ helpers(3), bufferAttributes ++ helpers)
    private val toOutputTime: Long => Long = output(1).dataType match {
      case LongType => identity
      case _ => ms => Math.multiplyExact(ms, 1000L)
    }
    private val toStateKey = UnsafeProjection.create(stateKeySchema)
    private val joined = new JoinedRow()
    private val touched = new java.util.LinkedHashMap[UnsafeRow, KeyState]()
    private val out = ArrayBuffer.empty[InternalRow]
    private var streamTime = state.streamTime
    private val counters = new Array[Long](CustomMetrics.length)

    override def advanceStreamTime(t: Long): Unit = if (t > streamTime) streamTime = t

    private def count(metric: Int, n: Long = 1L): Unit = counters(metric) += n

    private def closeTime: Long = StreamTime.minus(streamTime, graceMs)

    private def stateKey(k: UnsafeRow, kind: Int): UnsafeRow =
      toStateKey(new GenericInternalRow(Array[Any](k.get(0, key.dataType), kind))).copy()

    private def endOf(start: Long): Long = WindowBounds.end(start, d)
    /** The end of a record's right window: the record is needed while it is >= close time. */
    private def neededUntil(ts: Long): Long = if (endOf(ts) == Long.MaxValue) Long.MaxValue else endOf(ts) + 1

    private def load(k: UnsafeRow): KeyState = {
      var ks = touched.get(k)
      if (ks == null) {
        val storedWindows = state.get(stateKey(k, WindowsKind))
        val storedRecords = state.get(stateKey(k, RecordsKind))
        val ws = mutable.TreeMap.empty[Long, Win]
        storedWindows.foreach(s => ws(s.start) = new Win(s.start, s.buffer, s.maxTs, changed = false))
        val rs = ArrayBuffer.empty[(Long, UnsafeRow)]
        storedRecords.foreach(s => rs += ((s.start, s.buffer)))
        ks = new KeyState(ws, rs, storedWindows, storedRecords)
        touched.put(k.copy(), ks)
      }
      ks
    }

    override def process(row: InternalRow, ts: Long, emit: InternalRow => Unit): Unit = {
      if (ts == KStateStatefulExec.NullTime || ts < 0) { count(NullTimestamps); return }
      val k = keyProj(row)
      if (k.isNullAt(0)) { count(NullKeys); return }
      AggregateMetrics.recordLateness(counters, LatenessTotal, LatenessMax, streamTime, ts)
      count(Records)
      if (ts > streamTime) streamTime = ts
      val close = closeTime
      if (endOf(ts) < close) { count(LateDropped); return }
      val ks = load(k)
      val own = buffers.update(buffers.initial(), row)
      // the open windows containing ts
      ks.windows.valuesIterator.foreach { w =>
        if (w.start <= ts && ts <= endOf(w.start) && endOf(w.start) >= close) {
          w.buffer = buffers.update(w.buffer, row)
          if (ts > w.maxTs) w.maxTs = ts
          w.changed = true
          count(Updates)
        }
      }
      val previous = ks.records.iterator.map(_._1).filter(_ < ts).maxOption
      ks.records += ((ts, own))
      // the windows this record adds to the key's set
      val left = if (ts < d) 0L else ts - d
      val right = if (ts < Long.MaxValue) Some(ts + 1) else None // no window starts after Long.MaxValue
      val candidates = Seq(Some(left), right, previous.map(_ + 1)).flatten.distinct
      candidates.foreach { start =>
        val end = endOf(start)
        if (end >= close && !ks.windows.contains(start)) {
          val inside = ks.records.filter { case (t, _) => start <= t && t <= end }.sortBy(_._1)
          if (inside.nonEmpty) {
            var buffer = buffers.initial()
            inside.foreach { case (_, b) => buffer = buffers.merge(buffer, b) }
            ks.windows(start) = new Win(start, buffer, inside.last._1, changed = true)
            count(Created)
          }
        }
      }
    }

    private def result(k: UnsafeRow, start: Long, buffer: UnsafeRow, maxTs: Long): InternalRow =
      toOutput(joined(buffer, new GenericInternalRow(Array[Any](k.get(0, key.dataType),
        toOutputTime(start), toOutputTime(endOf(start)), toOutputTime(maxTs))))).copy()

    override def finish(): Unit = {
      val close = closeTime
      val closing = ArrayBuffer.empty[(Long, InternalRow)]
      touched.forEach { (k, ks) =>
        val (gone, open) = ks.windows.values.toSeq.partition(w => close != Long.MinValue && endOf(w.start) < close)
        if (finalResults.isEmpty) {
          ks.windows.valuesIterator.filter(_.changed).foreach { w => out += result(k, w.start, w.buffer, w.maxTs); count(Emitted) }
        } else {
          gone.foreach(w => closing += ((endOf(w.start), result(k, w.start, w.buffer, w.maxTs))))
        }
        count(Closed, gone.length.toLong)
        state.put(stateKey(k, WindowsKind), open.map(w => StoredSession(w.start, endOf(w.start), w.maxTs, w.buffer)),
          ks.storedWindows.toSeq)
        // a record is kept while a window that is still open can contain it or start right after
        // it (its right window, created by a later record): ts + d + 1 >= close time
        state.put(stateKey(k, RecordsKind), ks.records.toSeq.filter { case (t, _) => close == Long.MinValue || neededUntil(t) >= close }
          .map { case (t, b) => StoredSession(t, neededUntil(t), t, b) }, ks.storedRecords.toSeq)
      }
      touched.clear()
      // other keys: windows that close now, and records no open window can contain
      if (close != Long.MinValue) state.closeBefore(close) { (sk, s) =>
        if (sk.getInt(1) == WindowsKind) {
          count(Closed)
          if (finalResults.isDefined) closing += ((s.end, resultOfStateKey(sk, s)))
        }
      }
      closing.sortBy(_._1).foreach { case (_, r) => out += r; count(Emitted) }
      FinalResultsBuffer.checkFull(finalResults, operatorName, state.records, state.bytes)
      counters(BufferRecords) = state.records
      counters(BufferBytes) = state.bytes
      counters(LateDroppedTotal) = lateTotal.save(counters(LateDropped))
      state.finish(streamTime)
    }

    private def resultOfStateKey(sk: UnsafeRow, s: StoredSession): InternalRow =
      toOutput(joined(s.buffer, new GenericInternalRow(Array[Any](sk.get(0, key.dataType),
        toOutputTime(s.start), toOutputTime(s.end), toOutputTime(s.maxTs))))).copy()

    override def finishOutput: Iterator[InternalRow] = out.iterator

    /** Windows with end < close time are closed: a later row ends at or after it. */
    override def outputTimeFloor: Long = closeTime

    override def metrics: KStateTask.Metrics = KStateTask.Metrics.ofCounters(CustomMetrics, counters,
      totalStateRows = state.records,
      updatedStateRows = counters(Updates),
      removedStateRows = counters(Closed))
  }

  override protected def withNewChildInternal(newChild: SparkPlan): KStateSlidingAggregateExec =
    copy(child = newChild)
}

object KStateSlidingAggregateExec {
  val CustomMetrics: Seq[(String, String)] = Seq(
    AggregateMetrics.Records,
    "windowUpdates" -> "window updates (a record updates each open window containing it)",
    "windowsCreated" -> "windows created (a record's left and right windows, its predecessor's right window)",
    "lateRecordsDropped" -> "records dropped as late: ts + time difference < stream time - grace",
    AggregateMetrics.NullKeys,
    "nullTimestampsDropped" -> "records dropped: null or negative timestamp",
    "resultsEmitted" -> "rows emitted (updates, or final results when suppressed)",
    "windowsClosed" -> "windows closed and removed from state",
    AggregateMetrics.LatenessTotal,
    AggregateMetrics.LatenessMax,
    "bufferRecords" -> "windows and records kept in state",
    "bufferBytes" -> "bytes of the windows and records kept in state (keys and buffers)",
    "lateRecordsDroppedTotal" -> "late records dropped since the query started (kept with the state)")
  private val Records = 0
  private val Updates = 1
  private val Created = 2
  private val LateDropped = 3
  private val NullKeys = 4
  private val NullTimestamps = 5
  private val Emitted = 6
  private val Closed = 7
  private val LatenessTotal = 8
  private val LatenessMax = 9
  private val BufferRecords = 10
  private val BufferBytes = 11
  private val LateDroppedTotal = 12
  /** State key kinds: a key's windows, and its records' own buffers. */
  private val WindowsKind = 0
  private val RecordsKind = 1
}
