package org.apache.spark.sql.kstate.execution

import io.kstate.suppress.UntilWindowCloses
import io.kstate.windows.{SessionWindows, SlidingWindows, TimeWindows, Windows}

import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.processor.MetricSet
import org.apache.spark.sql.kstate.processor.window.{SessionMetrics, SlidingMetrics, TimeWindowAggregateMetrics}
import org.apache.spark.sql.types.StructType

/**
 * Physical windowed aggregation ([[org.apache.spark.sql.kstate.plans.KStateWindowedAggregate]]),
 * one exec for every kind of windows, as the logical node is one: per state partition and
 * micro-batch a task runs the windows' processor, optionally fused with
 * `suppress(untilWindowCloses)`:
 *  - time windows (tumbling, hopping): [[TimeWindowTask]] (Kafka's `KStreamWindowAggregate`);
 *  - session windows: [[SpanTask]] over a `SessionAggregateProcessor`
 *    (`KStreamSessionWindowAggregate`; output has the `tombstone` column);
 *  - sliding windows: [[SpanTask]] over a `SlidingAggregateProcessor`
 *    (`KStreamSlidingWindowAggregate`, with the differences docs/windows.md states).
 * The rules are the processors'; the tasks only adapt rows. The kind also names the operator in
 * progress (`shortName`), its state layout and its metrics.
 */
case class KStateWindowedAggregateExec(
    windows: Windows,
    key: Expression,
    timestamp: Expression,
    bufferAttributes: Seq[Attribute],
    initialValues: Seq[Expression],
    updateExpressions: Seq[Expression],
    inputBufferAttributes: Seq[Attribute],
    mergeExpressions: Seq[Expression],
    orderInsensitive: Boolean,
    resultExpressions: Seq[Expression],
    finalResults: Option[UntilWindowCloses],
    output: Seq[Attribute],
    context: KStateOperatorContext,
    child: SparkPlan
) extends KStateContextExec {

  override def shortName: String = windows match {
    case _: TimeWindows => "kstate_windowed_aggregate"
    case _: SessionWindows => "kstate_session_aggregate"
    case _: SlidingWindows => "kstate_sliding_aggregate"
  }
  override def storeCapabilities: Set[StoreCapability] = StoreCapability.ofAggregate(finalResults)
  override def partitionBy: Seq[Expression] = Seq(key)
  override protected def emitsOnTime: Boolean = true
  override protected def tracksOutputTime: Boolean = true

  override protected def stateKeySchema: StructType = windows match {
    case _: TimeWindows => TimeWindowTask.keySchema(this)
    case _ => SpanTask.keySchema(this)
  }
  override protected def stateValueSchema: StructType = windows match {
    case _: TimeWindows => TimeWindowTask.valueSchema(this)
    case _ => SpanTask.valueSchema(this)
  }
  override protected def metricSet: MetricSet = windows match {
    case _: TimeWindows => TimeWindowAggregateMetrics
    case _: SessionWindows => SessionMetrics
    case _: SlidingWindows => SlidingMetrics
  }

  override protected def newTask(store: Option[StateStore]): KStateTask = windows match {
    case w: TimeWindows => TimeWindowTask(this, w, store)
    case _ => SpanTask(this, store)
  }

  override protected def withNewChildInternal(newChild: SparkPlan): KStateWindowedAggregateExec =
    copy(child = newChild)
}
