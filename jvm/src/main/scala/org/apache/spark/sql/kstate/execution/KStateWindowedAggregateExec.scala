package org.apache.spark.sql.kstate.execution

import scala.collection.mutable.ArrayBuffer

import io.kstate.ProcessingOrder
import io.kstate.suppress.UntilWindowCloses
import io.kstate.windows.TimeWindows

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperatorStateInfo
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.processor.MetricSet
import org.apache.spark.sql.kstate.processor.suppress.BufferLimits
import org.apache.spark.sql.kstate.processor.window.{InMemoryTimeWindowState, TimeWindowAggregateMetrics, TimeWindowAggregateProcessor, TimeWindowSpec, TimeWindowState, WindowResults}
import org.apache.spark.sql.kstate.state.{RunningTotal, StateMeta, StoreWindowAggState}
import org.apache.spark.sql.types._

/**
 * Physical windowed aggregation ([[org.apache.spark.sql.kstate.plans.KStateWindowedAggregate]]):
 * a [[TimeWindowAggregateProcessor]] (Kafka's `KStreamWindowAggregate` rules, optionally fused
 * with `suppress(untilWindowCloses)`) per state partition, over [[StoreWindowAggState]]
 * (streaming) or [[InMemoryTimeWindowState]] (batch). Keys are one-column key rows, aggregates
 * Spark's aggregate buffers ([[BufferAggregator]]); results become rows of
 * (key, window start, window end, results..., max timestamp) ([[WindowResultRows]]).
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
  override protected def metricSet: MetricSet = TimeWindowAggregateMetrics

  override protected def newTask(store: Option[StateStore]): KStateTask = {
    // two entries per window: its value and its time index entry
    FinalResultsBuffer.boundHeap(finalResults, store, entriesPerRecord = 2)
    new AggregateTask(
      store.map(s => new StoreWindowAggState(s, stateKeySchema, bufferAttributes.map(_.dataType)))
        .getOrElse(new InMemoryTimeWindowState[UnsafeRow, UnsafeRow](_.copy(), StoreWindowAggState.bytesOf)),
      new RunningTotal(store.map(new StateMeta(_)), StateMeta.LateDroppedTotal))
  }

  private final class AggregateTask(state: TimeWindowState[UnsafeRow, UnsafeRow], lateTotal: RunningTotal)
    extends KStateTask with WindowResults[UnsafeRow, UnsafeRow] {
    private val in = child.output
    private val keyProj = UnsafeProjection.create(Seq(key), in)
    private val rows = new WindowResultRows(key.dataType, output, bufferAttributes, resultExpressions)
    private val out = ArrayBuffer.empty[InternalRow]
    private val processor = new TimeWindowAggregateProcessor[InternalRow, UnsafeRow, UnsafeRow](
      TimeWindowSpec(windows.sizeMs, windows.advanceMs, windows.graceMs),
      new BufferAggregator(in, bufferAttributes, initialValues, updateExpressions),
      state, _.copy(), finalResults.map(f => BufferLimits.of(f.bufferConfig)), operatorName, this)

    override def advanceStreamTime(t: Long): Unit = processor.advanceStreamTime(t)

    override def process(row: InternalRow, ts: Long, emit: InternalRow => Unit): Unit = {
      val tsNull = ts == KStateStatefulExec.NullTime
      val k = if (tsNull) null else keyProj(row)
      processor.process(row, k, tsNull || k.isNullAt(0), ts, tsNull)
    }

    override def result(k: UnsafeRow, start: Long, end: Long, agg: UnsafeRow, maxTs: Long): Unit =
      out += rows(k, start, end, agg, maxTs)

    override def finish(): Unit = {
      import TimeWindowAggregateMetrics._
      processor.finish()
      processor.counters.set(LateDroppedTotal, lateTotal.save(processor.counters(LateDropped)))
    }

    override def finishOutput: Iterator[InternalRow] = out.iterator

    /** Windows with end <= close time are closed: a later row is for a window ending after it. */
    override def outputTimeFloor: Long = processor.outputTimeFloor

    override def metrics: KStateTask.Metrics = KStateTask.Metrics.of(processor.counters,
      totalStateRows = state.records,
      updatedStateRows = processor.counters(TimeWindowAggregateMetrics.Updates),
      removedStateRows = processor.counters(TimeWindowAggregateMetrics.Closed))
  }

  override protected def withNewChildInternal(newChild: SparkPlan): KStateWindowedAggregateExec =
    copy(child = newChild)
}
