package org.apache.spark.sql.kstate.plans

import io.kstate.ProcessingOrder
import io.kstate.suppress.UntilWindowCloses
import io.kstate.windows.Windows

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet, Expression}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}

/**
 * A windowed aggregation by key (Kafka's `windowedBy(...).aggregate`), optionally fused with
 * `suppress(untilWindowCloses(...))`.
 *
 * Output: `keyAttr`, `windowStart`, `windowEnd`, one column per aggregate (`resultAttrs`) and
 * `timestampAttr` (the largest record timestamp in the window), and for session windows
 * `tombstoneAttr` (true: the session was merged into another and no longer exists). Without
 * suppression it emits each (key, window) changed by a micro-batch once, with its value at the
 * end of the batch; with `finalResults` it emits each (key, window) exactly once, when the
 * window closes.
 *
 * The aggregates are kept taken apart ([[AggregateSpec]]): their buffer attributes are produced
 * here, so no aggregate expression reaches Spark's analyzer outside an `Aggregate`.
 * `orderInsensitive` ([[AggregateSpec]]) lets sliding windows fold their records once per batch.
 */
case class KStateWindowedAggregate(
    windows: Windows,
    operatorName: Option[String],
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
    keyAttr: Attribute,
    windowStart: Attribute,
    windowEnd: Attribute,
    resultAttrs: Seq[Attribute],
    timestampAttr: Attribute,
    tombstoneAttr: Option[Attribute],
    processingOrder: Option[ProcessingOrder],
    child: LogicalPlan
) extends UnaryNode with KStateStatefulNode {

  override def output: Seq[Attribute] =
    (Seq(keyAttr, windowStart, windowEnd) ++ resultAttrs :+ timestampAttr) ++ tombstoneAttr
  override def producedAttributes: AttributeSet =
    AttributeSet(output) ++ AttributeSet(bufferAttributes) ++ AttributeSet(inputBufferAttributes)
  override def kind: String = "windowed_aggregate"

  override def fingerprint: Map[String, String] = Map(
    "kind" -> kind,
    "windows" -> windows.describe,
    "keyType" -> key.dataType.catalogString,
    "timestampType" -> timestamp.dataType.catalogString,
    "buffer" -> bufferAttributes.map(_.dataType.catalogString).mkString(","),
    "results" -> resultAttrs.map(a => s"${a.name}:${a.dataType.catalogString}").mkString(","),
    // the mode, not the buffer's limits: restarting with a larger buffer must work
    "suppress" -> finalResults.map(_ => "untilWindowCloses").getOrElse("none")
  )

  override protected def withNewChildInternal(newChild: LogicalPlan): KStateWindowedAggregate =
    copy(child = newChild)
}
