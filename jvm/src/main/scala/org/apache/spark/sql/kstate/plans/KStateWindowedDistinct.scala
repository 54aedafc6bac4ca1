package org.apache.spark.sql.kstate.plans

import io.kstate.ProcessingOrder
import io.kstate.windows.Windows

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet, Expression}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}

/**
 * The windowed `distinct()` of KIP-655's original proposal: per key, the first record of each
 * window; output is the record plus its window's bounds (`windowStart`, `windowEnd`).
 */
case class KStateWindowedDistinct(
    windows: Windows,
    operatorName: Option[String],
    key: Expression,
    timestamp: Expression,
    windowStart: Attribute,
    windowEnd: Attribute,
    processingOrder: Option[ProcessingOrder],
    child: LogicalPlan
) extends UnaryNode with KStateStatefulNode {

  override def output: Seq[Attribute] = child.output :+ windowStart :+ windowEnd
  override def producedAttributes: AttributeSet = AttributeSet(Seq(windowStart, windowEnd))
  override def kind: String = "distinct"

  override def fingerprint: Map[String, String] = Map(
    "kind" -> kind,
    "windows" -> windows.describe,
    "keyType" -> key.dataType.catalogString,
    "timestampType" -> timestamp.dataType.catalogString
  )

  override protected def withNewChildInternal(newChild: LogicalPlan): KStateWindowedDistinct =
    copy(child = newChild)
}
