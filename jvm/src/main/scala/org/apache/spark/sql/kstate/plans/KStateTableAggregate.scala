package org.apache.spark.sql.kstate.plans

import io.kstate.ProcessingOrder

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet, Expression}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}

/**
 * Stage 2 of a table aggregation (Kafka's `KTableAggregate` / `KTableReduce`): over the group
 * changes of [[KStateTableRegroup]] (its child), partitioned by group, keeps each group's
 * aggregate ([[TableAggregateSpec]]) and its timestamp, and emits the result table's change
 * rows: the group key (the child's group attribute), the aggregate's result columns
 * ([[TableAggregateSpec.output]]), the timestamp (in
 * the source table's timestamp type), [[TableChangeColumns.OldValue]] (the previous aggregate)
 * and [[TableChangeColumns.Latest]] (always true: the result is an unversioned table).
 *
 * Processing order within a micro-batch: always Kafka task order over the stage-1 partitions
 * (each stage-1 partition's group changes in the order it sent them, merged by their running
 * maximum event time), never event-time order, which would reorder one key's subtract and add.
 */
case class KStateTableAggregate(
    spec: TableAggregateSpec,
    operatorName: Option[String],
    group: Attribute,
    add: Attribute,
    subtract: Attribute,
    timestamp: Attribute,
    aggregate: Seq[Attribute],
    timestampOut: Attribute,
    oldValue: Attribute,
    latest: Attribute,
    child: LogicalPlan
) extends UnaryNode with KStateStatefulNode {

  override def output: Seq[Attribute] = (group +: aggregate) ++ Seq(timestampOut, oldValue, latest)
  override def producedAttributes: AttributeSet = AttributeSet(aggregate ++ Seq(timestampOut, oldValue, latest))
  override def kind: String = "table_aggregate"
  override def processingOrder: Option[ProcessingOrder] = Some(ProcessingOrder.Task)
  def partitionBy: Seq[Expression] = Seq(group)

  override def fingerprint: Map[String, String] = Map(
    "kind" -> kind,
    "aggregation" -> spec.kind,
    "groupType" -> group.dataType.catalogString,
    "valueType" -> spec.valueType.catalogString,
    "aggregateType" -> spec.aggregateType.catalogString
  ) ++
    (if (spec.result.isEmpty) Map.empty else Map("resultType" -> spec.outputType.catalogString))

  override protected def withNewChildInternal(newChild: LogicalPlan): KStateTableAggregate = copy(child = newChild)
}
