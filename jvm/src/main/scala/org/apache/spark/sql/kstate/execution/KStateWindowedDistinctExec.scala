package org.apache.spark.sql.kstate.execution

import org.apache.spark.sql.kstate.errors.KStateErrors
import io.kstate.windows.{SessionWindows, TimeWindows, Windows}

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Attribute,
  BoundReference,
  Expression,
  JoinedRow,
  UnsafeProjection,
  UnsafeRow
}
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.processor.{Counters, MetricSet}
import org.apache.spark.sql.kstate.processor.dedup.{DedupState, InMemoryDedupState}
import org.apache.spark.sql.kstate.processor.distinct._
import org.apache.spark.sql.kstate.operatorstate.{StoreDedupState, StoreSessionState}
import org.apache.spark.sql.types._

/**
 * Physical windowed `distinct()`: [[TumblingDistinctProcessor]] or [[SessionDistinctProcessor]]
 * per state partition. `output` is the input row followed by the window start and end, of the
 * timestamp column's type (TIMESTAMP/TIMESTAMP_NTZ) or epoch milliseconds (BIGINT).
 */
case class KStateWindowedDistinctExec(
    windows: Windows,
    key: Expression,
    timestamp: Expression,
    output: Seq[Attribute],
    context: KStateOperatorContext,
    child: SparkPlan
) extends KStateContextExec {

  override def shortName: String = "kstate_distinct"
  override def storeCapabilities: Set[StoreCapability] = Set(StoreCapability.ColumnFamilies)
  override def partitionBy: Seq[Expression] = Seq(key)

  private def keyField = StructField("key", key.dataType, nullable = true)

  override protected def stateKeySchema: StructType = windows match {
    case _: TimeWindows => StructType(Seq(keyField, StructField("window_start", LongType, nullable = false)))
    case _: SessionWindows => StructType(Seq(keyField))
    case other => throw KStateErrors.unsupportedWindowsForDistinct(other.describe) // rejected when built
  }
  override protected def stateValueSchema: StructType = windows match {
    case _: TimeWindows => StoreDedupState.ValueSchema
    case _: SessionWindows => StoreSessionState.ValueSchema
    case other => throw KStateErrors.unsupportedWindowsForDistinct(other.describe)
  }
  override protected def metricSet: MetricSet = DistinctMetrics

  override protected def newTask(store: Option[StateStore]): KStateTask = windows match {
    case w: TimeWindows =>
      val state = store match {
        case Some(s) => new StoreDedupState(s, stateKeySchema, sweepStepMs = w.sizeMs)
        case None => new InMemoryDedupState[UnsafeRow](_.copy())
      }
      new TumblingTask(w, state)
    case w: SessionWindows =>
      val state = store match {
        case Some(s) => new StoreSessionState(s, stateKeySchema)
        case None => new InMemorySessionState[UnsafeRow](_.copy())
      }
      new SessionTask(w, state)
    case other => throw KStateErrors.unsupportedWindowsForDistinct(other.describe)
  }

  /** Row plumbing shared by both window kinds. */
  private abstract class DistinctTask extends KStateTask {
    protected def counters: Counters
    private val in = child.output
    private val keyProj = UnsafeProjection.create(Seq(key), in)
    private val windowAttrs = output.takeRight(2)
    private val outProj = UnsafeProjection.create(output, in ++ windowAttrs)
    private val windowWriter = new UnsafeRowWriter(2)
    private val joined = new JoinedRow()
    private val toOutputTime: Long => Long = windowAttrs.head.dataType match {
      case LongType => identity
      case _ => ms => Math.multiplyExact(ms, 1000L)
    }

    /** Decides one record; returns its window when it is emitted. */
    protected def decide(key: UnsafeRow, keyIsNull: Boolean, ts: Long, tsIsNull: Boolean): Option[(Long, Long)]
    protected def storedWindows: Long

    override def process(row: InternalRow, ts: Long, emit: InternalRow => Unit): Unit = {
      val k = keyProj(row)
      decide(k, k.isNullAt(0), ts, ts == KStateStatefulExec.NullTime).foreach { case (start, end) =>
        windowWriter.reset(); windowWriter.zeroOutNullBytes()
        windowWriter.write(0, toOutputTime(start)); windowWriter.write(1, toOutputTime(end))
        emit(outProj(joined(row, windowWriter.getRow)))
      }
    }

    override def metrics: KStateTask.Metrics = KStateTask.Metrics.of(
      counters,
      totalStateRows = storedWindows,
      updatedStateRows = counters(DistinctMetrics.WindowsStored),
      removedStateRows = counters(DistinctMetrics.WindowsPurged)
    )
  }

  private final class TumblingTask(w: TimeWindows, state: DedupState[UnsafeRow])
      extends DistinctTask {
    private val processor = new TumblingDistinctProcessor(w.sizeMs, w.graceMs, state)
    override protected def counters: Counters = processor.counters
    private val startWriter = new UnsafeRowWriter(1)
    private val joinedKey = new JoinedRow()
    private val toIdentity = UnsafeProjection.create(Seq(
      BoundReference(0, key.dataType, nullable = true),
      BoundReference(1, LongType, nullable = false)
    ))

    override def advanceStreamTime(t: Long): Unit = processor.advanceStreamTime(t)
    override def finish(): Unit = processor.finish()
    override protected def storedWindows: Long = state.numEntries

    override protected def decide(k: UnsafeRow, keyIsNull: Boolean, ts: Long, tsIsNull: Boolean) = {
      val identityOf: Long => UnsafeRow = start => {
        startWriter.reset(); startWriter.zeroOutNullBytes(); startWriter.write(0, start)
        toIdentity(joinedKey(k, startWriter.getRow))
      }
      if (processor.process(identityOf, keyIsNull, ts, tsIsNull)) {
        val start = processor.windowStart(ts)
        Some((start, processor.windowEnd(start)))
      } else None
    }
  }

  private final class SessionTask(w: SessionWindows, state: SessionState[UnsafeRow])
      extends DistinctTask {
    private val processor = new SessionDistinctProcessor(w.gapMs, w.graceMs, state)
    override protected def counters: Counters = processor.counters
    override def advanceStreamTime(t: Long): Unit = processor.advanceStreamTime(t)
    override def finish(): Unit = processor.finish()
    override protected def storedWindows: Long = state.numSessions
    override protected def decide(k: UnsafeRow, keyIsNull: Boolean, ts: Long, tsIsNull: Boolean) =
      if (processor.process(k, keyIsNull, ts, tsIsNull)) Some((ts, ts)) else None
  }

  override protected def withNewChildInternal(newChild: SparkPlan): KStateWindowedDistinctExec =
    copy(child = newChild)
}
