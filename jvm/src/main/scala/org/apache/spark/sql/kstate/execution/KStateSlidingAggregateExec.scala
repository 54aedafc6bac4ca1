package org.apache.spark.sql.kstate.execution

import io.kstate.ProcessingOrder
import io.kstate.suppress.UntilWindowCloses
import io.kstate.windows.SlidingWindows

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, UnsafeRow}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperatorStateInfo
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.processor.MetricSet
import org.apache.spark.sql.kstate.processor.window.{SlidingAggregateProcessor, SlidingMetrics}
import org.apache.spark.sql.types.StructType

/**
 * Physical sliding-window aggregation ([[org.apache.spark.sql.kstate.plans.KStateWindowedAggregate]]
 * over [[SlidingWindows]]): Kafka's `KStreamSlidingWindowAggregate` per state partition,
 * optionally fused with `suppress(untilWindowCloses)`, with the differences docs/windows.md
 * states. The rules are [[SlidingAggregateProcessor]]'s; this exec projects the key, folds rows
 * with Spark's buffers ([[AggregateBuffers]]), keeps a key's windows and records under two state
 * keys ([[SlidingRowKeys]]) and turns windows into rows ([[SpanRows]]).
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

  override protected def stateKeySchema: StructType = SlidingRowKeys.schema(key.dataType)
  override protected def metricSet: MetricSet = SlidingMetrics

  override protected def newTask(store: Option[StateStore]): KStateTask = {
    val (state, lateTotal) = openState(store)
    val rows = newRows(tombstones = false)
    val processor = new SlidingAggregateProcessor[UnsafeRow, UnsafeRow, InternalRow, UnsafeRow](
      windows.timeDifferenceMs, windows.graceMs, finalResults.isDefined, state, new SlidingRowKeys(key.dataType),
      newBuffers(), rows, _.copy())
    new SpanTask(processor, state, rows, lateTotal)
  }

  override protected def withNewChildInternal(newChild: SparkPlan): KStateSlidingAggregateExec =
    copy(child = newChild)
}
