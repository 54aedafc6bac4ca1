package org.apache.spark.sql.kstate.plans

import io.kstate.suppress.UntilTimeLimit

import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}

/**
 * KIP-328 `suppress(untilTimeLimit(...))` on a DataFrame of keyed updates (a table): per key,
 * the first update starts a timer, later ones replace the buffered row without restarting it,
 * and the latest row is emitted once stream time >= first buffered time + the limit. Output is
 * the child's rows, unchanged (a subset, delayed).
 */
case class KStateSuppress(
    suppressed: UntilTimeLimit,
    operatorName: Option[String],
    key: Expression,
    timestamp: Expression,
    child: LogicalPlan) extends UnaryNode with KStateStatefulNode {

  override def output: Seq[Attribute] = child.output
  override def kind: String = "suppress"

  override def fingerprint: Map[String, String] = Map(
    "kind" -> kind,
    // the mode and the time limit, not the buffer's limits: a larger buffer on restart must work
    "suppress" -> s"untilTimeLimit(${suppressed.timeLimitMs})",
    "keyType" -> key.dataType.catalogString,
    "timestampType" -> timestamp.dataType.catalogString,
    "rowType" -> child.schema.catalogString)

  override protected def withNewChildInternal(newChild: LogicalPlan): KStateSuppress = copy(child = newChild)
}
