package org.apache.spark.sql.kstate.plans

import io.kstate.ProcessingOrder
import io.kstate.suppress.{Suppressed, UntilTimeLimit, UntilWindowCloses}

import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}

/**
 * KIP-328 `suppress` on a streaming table (a DataFrame of keyed updates), as its own operator:
 *  - `UntilTimeLimit`: per key, the first update starts a timer (buffer time = its timestamp),
 *    later ones replace the buffered row without restarting it, and the latest row is emitted
 *    once stream time >= buffer time + `limitMs`;
 *  - `UntilWindowCloses` on a windowed table whose windows kstate did not compute: buffer time
 *    = `windowEnd`, `limitMs` = grace; the window's latest row is emitted once stream time >=
 *    window end + grace, and updates for a window already closed are dropped.
 * Output is the child's rows, unchanged (a subset, delayed).
 */
case class KStateSuppress(
    suppressed: Suppressed,
    limitMs: Long,
    operatorName: Option[String],
    key: Expression,
    timestamp: Expression,
    windowEnd: Option[Expression],
    processingOrder: Option[ProcessingOrder],
    child: LogicalPlan
) extends UnaryNode with KStateStatefulNode {

  override def output: Seq[Attribute] = child.output
  override def kind: String = "suppress"

  override def fingerprint: Map[String, String] = Map(
    "kind" -> kind,
    // the mode and its time, not the buffer's limits: a larger buffer on restart must work
    "suppress" -> (suppressed match {
      case _: UntilTimeLimit => s"untilTimeLimit($limitMs)"
      case _: UntilWindowCloses => s"untilWindowCloses(grace=$limitMs)"
    }),
    "keyType" -> key.dataType.catalogString,
    "timestampType" -> timestamp.dataType.catalogString,
    "rowType" -> child.schema.catalogString
  )

  override protected def withNewChildInternal(newChild: LogicalPlan): KStateSuppress = copy(child = newChild)
}
