package org.apache.spark.sql.kstate.execution

import scala.collection.mutable.ArrayBuffer

import io.kstate.ProcessingOrder
import org.apache.spark.sql.kstate.processor.StreamTime
import io.kstate.suppress.UntilWindowCloses
import io.kstate.windows.SessionWindows

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, Expression, GenericInternalRow, JoinedRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperatorStateInfo
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.state.{RunningTotal, SessionAggState, StoredSession}
import org.apache.spark.sql.types._

/**
 * Physical session-window aggregation ([[org.apache.spark.sql.kstate.plans.KStateWindowedAggregate]]
 * over [[SessionWindows]]): Kafka's `KStreamSessionWindowAggregate` per state partition,
 * optionally fused with `suppress(untilWindowCloses)`.
 *
 * Per record, in task order:
 *  - a null timestamp or a null key: dropped (counted), stream time unchanged;
 *  - close time := stream time - grace - gap (Kafka's `windowCloseTime`); a session is open
 *    while its end > close time, as Kafka 4.3's session store returns only sessions with
 *    end > stream time - retention (retention = gap + grace);
 *  - the key's sessions open before the record (end > the close time before it advances stream
 *    time: Kafka's store observes stream time on put, after the lookup) within the gap of ts
 *    (end >= ts - gap and start <= ts + gap, inclusive) are merged with the record into one
 *    session [min start, max end]: their buffers merged in start order, then the record
 *    aggregated;
 *  - stream time := max(stream time, ts); with no such session and ts < close time the record
 *    is late: dropped (counted); otherwise it starts the session [ts, ts] (also when a closed
 *    session lies within its gap).
 * A session closes once its end <= close time: it is final (Kafka's `suppress` emits it then),
 * leaves the state at the end of the micro-batch, and no later record merges into it.
 *
 * Output: without suppression, at the end of each micro-batch, every session it created or
 * changed (its current value, also when it closes now), and a tombstone row (null aggregates,
 * `tombstone` true) for every session that existed before the batch and was merged away in it,
 * as Kafka forwards `(Windowed(key, session), null)`. With `finalResults`, each session exactly
 * once, when it closes, in end order; no tombstones.
 */
case class KStateSessionAggregateExec(
    windows: SessionWindows,
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

  override def shortName: String = "kstate_session_aggregate"
  override def storeCapabilities: Set[StoreCapability] = StoreCapability.ofAggregate(finalResults)

  override protected def stateKeySchema: StructType = SessionAggState.keySchema(key.dataType)
  override protected def customMetricDescriptions: Seq[(String, String)] =
    KStateSessionAggregateExec.CustomMetrics

  override protected def newTask(store: Option[StateStore]): KStateTask = {
    val (state, lateTotal) = openState(store)
    new SessionTask(state, lateTotal)
  }

  /** A session while the batch runs; `stored`: it is in the state as it was at batch start. */
  private final class Session(val start: Long, val end: Long, val buffer: UnsafeRow, val maxTs: Long,
      val stored: Boolean)

  /** A key's sessions in this batch: as stored at batch start, and now (ordered by start). */
  private final class KeySessions(val atStart: Array[StoredSession], var now: List[Session])

  private final class SessionTask(state: SessionAggState, lateTotal: RunningTotal) extends KStateTask {
    import KStateSessionAggregateExec._
    private val gapMs = windows.gapMs
    private val graceMs = windows.graceMs
    private val in = child.output
    private val nBuffer = bufferAttributes.length
    private val keyProj = UnsafeProjection.create(Seq(key), in)
    private val buffers = new AggregateBuffers(in, bufferAttributes, initialValues, updateExpressions,
      inputBufferAttributes, mergeExpressions)
    // output: key, window start, window end, results (over the buffer), max timestamp, tombstone
    private val helpers = Seq("key" -> key.dataType, "start" -> output(1).dataType,
      "end" -> output(2).dataType, "ts" -> output(output.length - 2).dataType)
      .map { case (n, t) => AttributeReference(s"_kstate_$n", t)() }
    private val tombstoneFlag = AttributeReference("_kstate_tombstone", BooleanType)()
    private val toOutput = UnsafeProjection.create(
      Seq(helpers(0), helpers(1), helpers(2)) ++ resultExpressions ++ Seq(helpers(3), tombstoneFlag),
      bufferAttributes ++ helpers :+ tombstoneFlag)
    private val toTombstone = UnsafeProjection.create(
      Seq(helpers(0), helpers(1), helpers(2)) ++
        resultExpressions.map(e => org.apache.spark.sql.catalyst.expressions.Literal(null, e.dataType)) ++
        Seq(helpers(3), tombstoneFlag), helpers :+ tombstoneFlag)
    private val toOutputTime: Long => Long = output(1).dataType match {
      case LongType => identity
      case _ => ms => Math.multiplyExact(ms, 1000L)
    }
    private val joined = new JoinedRow()
    private val touched = new java.util.LinkedHashMap[UnsafeRow, KeySessions]()
    private val out = ArrayBuffer.empty[InternalRow]
    private var streamTime = state.streamTime
    private val counters = new Array[Long](CustomMetrics.length)

    override def advanceStreamTime(t: Long): Unit = if (t > streamTime) streamTime = t

    private def count(metric: Int, n: Long = 1L): Unit = counters(metric) += n

    private def closeTime: Long = StreamTime.minus(StreamTime.minus(streamTime, graceMs), gapMs)

    override def process(row: InternalRow, ts: Long, emit: InternalRow => Unit): Unit = {
      if (ts == KStateStatefulExec.NullTime) { count(NullTimestamps); return }
      val k = keyProj(row)
      if (k.isNullAt(0)) { count(NullKeys); return }
      AggregateMetrics.recordLateness(counters, LatenessTotal, LatenessMax, streamTime, ts)
      count(Records)
      val openAfter = closeTime // sessions ending after it were open before this record
      if (ts > streamTime) streamTime = ts
      val close = closeTime
      var ks = touched.get(k)
      if (ks == null) {
        val stored = state.get(k)
        ks = new KeySessions(stored, stored.iterator.map(s => new Session(s.start, s.end, s.buffer, s.maxTs, stored = true)).toList)
        touched.put(k.copy(), ks)
      }
      val lo = StreamTime.minus(ts, gapMs)
      val hi = if (ts > Long.MaxValue - gapMs) Long.MaxValue else ts + gapMs
      val (merging, others) = ks.now.partition(s => s.end > openAfter && s.end >= lo && s.start <= hi)
      if (merging.isEmpty && ts < close) { count(LateDropped); return }
      var buffer = buffers.initial()
      var start = ts
      var end = ts
      var maxTs = ts
      merging.foreach { s => // already in start order
        buffer = buffers.merge(buffer, s.buffer)
        if (s.start < start) start = s.start
        if (s.end > end) end = s.end
        if (s.maxTs > maxTs) maxTs = s.maxTs
      }
      if (merging.length > 1) count(Merged, merging.length - 1L)
      buffer = buffers.update(buffer, row)
      count(Updates)
      ks.now = (new Session(start, end, buffer, maxTs, stored = false) :: others).sortBy(_.start)
    }

    private def result(k: UnsafeRow, start: Long, end: Long, buffer: UnsafeRow, maxTs: Long): InternalRow =
      toOutput(joined(buffer, helperRow(k, start, end, maxTs, tombstone = false))).copy()

    private def helperRow(k: UnsafeRow, start: Long, end: Long, maxTs: Long, tombstone: Boolean): InternalRow =
      new GenericInternalRow(Array[Any](k.get(0, key.dataType), toOutputTime(start), toOutputTime(end),
        toOutputTime(maxTs), tombstone))

    override def finish(): Unit = {
      val close = closeTime
      val closing = ArrayBuffer.empty[(Long, InternalRow)]
      def closed(k: UnsafeRow, s: StoredSession): Unit = {
        count(Closed)
        if (finalResults.isDefined) closing += ((s.end, result(k, s.start, s.end, s.buffer, s.maxTs)))
      }
      // keys touched in this batch: write back their open sessions, emit what changed
      touched.forEach { (k, ks) =>
        if (finalResults.isEmpty) {
          ks.atStart.foreach { s =>
            if (!ks.now.exists(n => n.start == s.start && n.end == s.end)) {
              out += toTombstone(helperRow(k, s.start, s.end, s.maxTs, tombstone = true)).copy()
              count(Emitted)
            }
          }
          ks.now.foreach { s =>
            if (!s.stored) { out += result(k, s.start, s.end, s.buffer, s.maxTs); count(Emitted) }
          }
        }
        val (gone, open) = ks.now.partition(s => close != Long.MinValue && s.end <= close)
        gone.foreach(s => closed(k, StoredSession(s.start, s.end, s.maxTs, s.buffer)))
        if (gone.nonEmpty || ks.now.exists(!_.stored) || ks.now.length != ks.atStart.length) {
          state.put(k, open.map(s => StoredSession(s.start, s.end, s.maxTs, s.buffer)), ks.atStart.toSeq)
        }
      }
      touched.clear()
      // sessions of other keys that close now
      if (close != Long.MinValue) state.closeBefore(close + 1)(closed)
      closing.sortBy(_._1).foreach { case (_, r) => out += r; count(Emitted) }
      FinalResultsBuffer.checkFull(finalResults, operatorName, state.records, state.bytes)
      counters(BufferRecords) = state.records
      counters(BufferBytes) = state.bytes
      counters(LateDroppedTotal) = lateTotal.save(counters(LateDropped))
      state.finish(streamTime)
    }

    override def finishOutput: Iterator[InternalRow] = out.iterator

    /** Sessions with end <= close time are closed; a later row (a new session [ts, ts] with
     * ts >= close time, or a tombstone of an open session) ends at or after it. */
    override def outputTimeFloor: Long = closeTime

    override def metrics: KStateTask.Metrics = KStateTask.Metrics.ofCounters(CustomMetrics, counters,
      totalStateRows = state.records,
      updatedStateRows = counters(Updates),
      removedStateRows = counters(Closed))
  }

  override protected def withNewChildInternal(newChild: SparkPlan): KStateSessionAggregateExec =
    copy(child = newChild)
}

object KStateSessionAggregateExec {
  val CustomMetrics: Seq[(String, String)] = Seq(
    AggregateMetrics.Records,
    "sessionUpdates" -> "records aggregated into a session",
    "sessionsMerged" -> "sessions merged into another by a record bridging them",
    "lateRecordsDropped" -> "records dropped as late: no open session within the gap, and ts < stream time - grace - gap",
    AggregateMetrics.NullKeys,
    AggregateMetrics.NullTimestamps,
    "resultsEmitted" -> "rows emitted (updates and tombstones, or final results when suppressed)",
    "windowsClosed" -> "sessions closed and removed from state",
    AggregateMetrics.LatenessTotal,
    AggregateMetrics.LatenessMax,
    "bufferRecords" -> "open sessions kept in state",
    "bufferBytes" -> "bytes of the open sessions kept in state (keys and buffers)",
    "lateRecordsDroppedTotal" -> "late records dropped since the query started (kept with the state)")
  private val Records = 0
  private val Updates = 1
  private val Merged = 2
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
}
