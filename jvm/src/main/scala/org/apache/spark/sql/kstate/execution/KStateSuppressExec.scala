package org.apache.spark.sql.kstate.execution

import scala.collection.mutable.ArrayBuffer

import io.kstate.ProcessingOrder
import io.kstate.KStateErrors
import io.kstate.suppress.Suppressed

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperatorStateInfo
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.state.{KStateStore, StateMeta}
import org.apache.spark.sql.kstate.state.buffer.{BufferLimits, BufferedRecord, TimeOrderedBuffer}
import org.apache.spark.sql.types.{BinaryType, StructField, StructType}

/**
 * Physical `suppress` on a table ([[org.apache.spark.sql.kstate.plans.KStateSuppress]]): Kafka's
 * `KTableSuppressProcessor` per state partition, on kstate's [[TimeOrderedBuffer]]. Buffer
 * time is the record's timestamp (`untilTimeLimit`) or its window's end (`untilWindowCloses`),
 * and `limitMs` the time limit or the grace.
 *
 * Per record, in task order (Kafka's order of steps):
 *  - a null timestamp, null key or null window end: dropped (counted), stream time unchanged;
 *  - stream time := max(stream time, ts);
 *  - final results only: an update for a window already closed (end <= stream time - grace) is
 *    dropped as late, so that a window's result is emitted once;
 *  - the row is buffered under its key: a new key at its buffer time, a buffered key keeps its
 *    buffer time (the replaced row counts as a suppressed intermediate update);
 *  - every row with buffer time <= stream time - limit is emitted, oldest first;
 *  - the buffer's limits are enforced: emit the oldest early, fail with `KSTATE_BUFFER_FULL`
 *    (the batch does not commit), or spill to disk (strict, heap bounded).
 * At the end of the batch (stream time may have been raised to the watermark) expired rows are
 * emitted too. Emitted rows are the buffered input rows, unchanged.
 */
case class KStateSuppressExec(
    suppressed: Suppressed,
    limitMs: Long,
    operatorName: String,
    fingerprint: Map[String, String],
    key: Expression,
    timestamp: Expression,
    windowEnd: Option[Expression],
    output: Seq[Attribute],
    providerClass: String,
    followWatermark: Boolean,
    processingOrder: ProcessingOrder,
    stateInfo: Option[StatefulOperatorStateInfo],
    child: SparkPlan) extends KStateStatefulExec {

  override def shortName: String = "kstate_suppress"
  override def storeCapabilities: Set[StoreCapability] = StoreCapability.ofSuppress(suppressed.bufferConfig)
  override def partitionBy: Seq[Expression] = Seq(key)
  override protected def emitsOnTime: Boolean = true
  // windowed tables: later rows are for windows ending after the close time; time limits: a
  // buffered row can be of any age
  override protected def tracksOutputTime: Boolean = windowEnd.isDefined
  override protected def delaysOutput: Boolean = windowEnd.isEmpty

  // The buffer lives in column families of its own; the default family only records the schema.
  override protected def stateKeySchema: StructType = StructType(Seq(StructField("key", key.dataType)))
  override protected def stateValueSchema: StructType = StructType(Seq(StructField("row", BinaryType)))
  override protected def customMetricDescriptions: Seq[(String, String)] = KStateSuppressExec.CustomMetrics
  override protected def maxMetrics: Set[String] = Set("bufferRecordsMax", "bufferBytesMax")

  override protected def newTask(store: Option[StateStore]): KStateTask = store match {
    case Some(k: KStateStore) => new SuppressTask(k)
    case Some(other) => throw KStateErrors.suppressNeedsKStateProvider(operatorName, other.getClass.getName)
    case None => throw KStateErrors.unsupportedSuppress("suppress runs on streaming DataFrames only")
  }

  private final class SuppressTask(store: KStateStore) extends KStateTask {
    import KStateSuppressExec._
    private val meta = new StateMeta(store)
    private val buffer = new TimeOrderedBuffer(store, operatorName, BufferLimits.of(suppressed.bufferConfig))
    private val in = child.output
    private val keyProj = UnsafeProjection.create(Seq(key), in)
    private val rowProj = UnsafeProjection.create(output, in)
    private val endOf: Option[InternalRow => Long] = windowEnd.map(e => KStateStatefulExec.eventTimeOf(e, in))
    private var streamTime = meta.get(StateMeta.StreamTime, Long.MinValue)
    private val counters = new Array[Long](CustomMetrics.length)
    private val out = ArrayBuffer.empty[InternalRow]

    override def advanceStreamTime(t: Long): Unit = if (t > streamTime) streamTime = t

    private def rowOf(r: BufferedRecord): InternalRow = {
      val row = new UnsafeRow(output.length)
      row.pointTo(r.value, r.value.length)
      row
    }

    private def expiry: Long =
      if (streamTime == Long.MinValue || streamTime < Long.MinValue + limitMs) Long.MinValue
      else streamTime - limitMs

    private def evict(emit: InternalRow => Unit): Unit = {
      if (expiry != Long.MinValue) buffer.evictUpTo(expiry) { r => counters(Emitted) += 1; emit(rowOf(r)) }
      buffer.enforceLimits { r => counters(EarlyEvictions) += 1; counters(Emitted) += 1; emit(rowOf(r)) }
    }

    override def process(row: InternalRow, ts: Long, emit: InternalRow => Unit): Unit = {
      if (ts == KStateStatefulExec.NullTime) { counters(NullTimestamps) += 1; return }
      val k = keyProj(row)
      if (k.isNullAt(0)) { counters(NullKeys) += 1; return }
      val bufferTime = endOf match {
        case Some(f) =>
          val end = f(row)
          if (end == KStateStatefulExec.NullTime) { counters(NullTimestamps) += 1; return }
          end
        case None => ts
      }
      if (ts > streamTime) streamTime = ts
      if (endOf.isDefined && expiry != Long.MinValue && bufferTime <= expiry) {
        counters(LateDropped) += 1 // its window closed: its result was emitted (or never will be)
        return
      }
      if (buffer.put(k.getBytes, rowProj(row).getBytes, ts, bufferTime)) counters(SuppressedUpdates) += 1
      notePeak()
      evict(emit)
    }

    /** The buffer's largest size in this micro-batch (after a put, before evictions). */
    private def notePeak(): Unit = {
      if (buffer.numRecords > counters(BufferRecordsMax)) counters(BufferRecordsMax) = buffer.numRecords
      if (buffer.numBytes > counters(BufferBytesMax)) counters(BufferBytesMax) = buffer.numBytes
    }

    override def finish(): Unit = {
      notePeak() // a micro-batch without puts: its size at the start
      evict(r => out += r)
      counters(BufferRecords) = buffer.numRecords
      counters(BufferBytes) = buffer.numBytes
      meta.put(StateMeta.StreamTime, streamTime)
    }

    override def finishOutput: Iterator[InternalRow] = out.iterator

    /** Windowed tables: windows with end <= stream time - grace were emitted or are dropped. */
    override def outputTimeFloor: Long =
      if (expiry == Long.MinValue || expiry == Long.MaxValue) expiry else expiry + 1

    override def metrics: KStateTask.Metrics = KStateTask.Metrics.ofCounters(CustomMetrics, counters,
      totalStateRows = buffer.numRecords,
      updatedStateRows = 0L,
      removedStateRows = counters(Emitted))
  }

  override protected def withNewChildInternal(newChild: SparkPlan): KStateSuppressExec = copy(child = newChild)
}

object KStateSuppressExec {
  val CustomMetrics: Seq[(String, String)] = Seq(
    "resultsEmitted" -> "rows emitted (time limit reached, or early)",
    "updatesSuppressed" -> "buffered rows replaced by a later update of their key (never emitted)",
    "earlyEvictions" -> "rows emitted early because the buffer was full (emit_early_when_full)",
    "nullKeysDropped" -> "records dropped: null key",
    "nullTimestampsDropped" -> "records dropped: null timestamp or window end",
    "bufferRecords" -> "rows in the buffer at the end of the micro-batch",
    "bufferBytes" -> "bytes in the buffer at the end of the micro-batch (keys, rows, timestamps)",
    "lateRecordsDropped" -> "updates dropped: their window had closed (until_window_closes)",
    "bufferRecordsMax" -> "most rows in a partition's buffer during the micro-batch (the largest over partitions)",
    "bufferBytesMax" -> "most bytes in a partition's buffer during the micro-batch (the largest over partitions)")
  private val Emitted = 0
  private val SuppressedUpdates = 1
  private val EarlyEvictions = 2
  private val NullKeys = 3
  private val NullTimestamps = 4
  private val BufferRecords = 5
  private val BufferBytes = 6
  private val LateDropped = 7
  private val BufferRecordsMax = 8
  private val BufferBytesMax = 9
}
