package org.apache.spark.sql.kstate.execution

import io.kstate.ProcessingOrder
import io.kstate.suppress.UntilWindowCloses
import io.kstate.windows.SessionWindows

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, UnsafeRow}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperatorStateInfo
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.processor.MetricSet
import org.apache.spark.sql.kstate.processor.window.{SessionAggregateProcessor, SessionMetrics}
import org.apache.spark.sql.kstate.state.SessionAggState
import org.apache.spark.sql.types.StructType

/**
 * Physical session-window aggregation ([[org.apache.spark.sql.kstate.plans.KStateWindowedAggregate]]
 * over [[SessionWindows]]): Kafka's `KStreamSessionWindowAggregate` per state partition,
 * optionally fused with `suppress(untilWindowCloses)`. The rules are [[SessionAggregateProcessor]]'s;
 * this exec projects the key, folds rows with Spark's buffers ([[AggregateBuffers]]) and turns
 * sessions into rows ([[SpanRows]], with the `tombstone` column).
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
  override protected def metricSet: MetricSet = SessionMetrics

  override protected def newTask(store: Option[StateStore]): KStateTask = {
    val (state, lateTotal) = openState(store)
    val rows = newRows(tombstones = true)
    val processor = new SessionAggregateProcessor[UnsafeRow, InternalRow, UnsafeRow](windows.gapMs, windows.graceMs,
      finalResults.isDefined, state, newBuffers(), rows, _.copy())
    new SpanTask(processor, state, rows, lateTotal)
  }

  override protected def withNewChildInternal(newChild: SparkPlan): KStateSessionAggregateExec =
    copy(child = newChild)
}
