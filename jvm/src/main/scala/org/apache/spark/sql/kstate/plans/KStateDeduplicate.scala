package org.apache.spark.sql.kstate.plans

import io.kstate.ProcessingOrder
import org.apache.spark.sql.kstate.plans.DedupMode

import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}
import org.apache.spark.sql.kstate.shim.StatefulLogicalNode

/**
 * A kstate logical operator that keeps state; `operatorName` is the user's `name=`. Spark 4.3
 * sees it as stateful on a streaming plan ([[StatefulLogicalNode]]).
 */
trait KStateStatefulNode extends LogicalPlan with StatefulLogicalNode {
  def kind: String
  def operatorName: Option[String]

  /** The configuration recorded in the checkpoint; a change on restart is an error. */
  def fingerprint: Map[String, String]

  /**
   * The operator's own processing order; None: the session's `spark.kstate.processingOrder`.
   * Not part of the fingerprint: a restart may change it.
   */
  def processingOrder: Option[ProcessingOrder]
}

/**
 * KIP-655 deduplication (`deduplicate_by_key`, `deduplicate_by_key_value`, `deduplicate`).
 * Output is the child's rows, a subset, unchanged. `key`/`id` are set as `mode` requires.
 */
case class KStateDeduplicate(
    mode: DedupMode,
    intervalMs: Long,
    operatorName: Option[String],
    key: Option[Expression],
    id: Option[Expression],
    timestamp: Expression,
    processingOrder: Option[ProcessingOrder],
    child: LogicalPlan
) extends UnaryNode with KStateStatefulNode {

  override def output: Seq[Attribute] = child.output
  override def kind: String = mode.name

  /** Deduplication identity: what two records must share to be duplicates. */
  def identity: Seq[Expression] = mode match {
    case DedupMode.ByKey => key.toSeq
    case DedupMode.ByKeyValue => key.toSeq ++ id.toSeq
    case DedupMode.ById => id.toSeq
  }

  /** Records with equal values here meet in one state partition (a Kafka task). */
  def partitionBy: Seq[Expression] = mode match {
    case DedupMode.ById => id.toSeq
    case _ => key.toSeq
  }

  override def fingerprint: Map[String, String] = Map(
    "kind" -> kind,
    "intervalMs" -> intervalMs.toString,
    "identityTypes" -> identity.map(_.dataType.catalogString).mkString(","),
    "timestampType" -> timestamp.dataType.catalogString
  )

  override protected def withNewChildInternal(newChild: LogicalPlan): KStateDeduplicate =
    copy(child = newChild)
}
