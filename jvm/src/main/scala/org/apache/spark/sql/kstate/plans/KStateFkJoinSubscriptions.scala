package org.apache.spark.sql.kstate.plans

import io.kstate.ProcessingOrder

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, AttributeSet, Expression}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}
import org.apache.spark.sql.types.{DataType, LongType, StructType}

/**
 * Stage 1 of a foreign-key join (Kafka's subscription and foreign-table join processors, rules in
 * `processor.join.ForeignKeySubscriptionProcessor`) over a [[TwoInputs]] envelope keyed by
 * foreign key: left = the [[KStateFkSubscribe]] rows (`subscriptionSchema`, its output as a
 * struct), right = the right table's change rows (`right`). State per foreign-key partition: the
 * right table's latest values and the subscriptions. Output: the responses for stage 2
 * ([[KStateFkJoin]]), to be partitioned by the left key:
 * {{{
 *   <left key>            the subscribing left key
 *   __kstate_fk_value     STRUCT of the left value columns (the subscribed value), null: deleted
 *   __kstate_fk_right     STRUCT of the right value columns, null: no right value
 *   __kstate_fk_version   BIGINT, the subscription's version
 *   __kstate_fk_ts        BIGINT, the response's event time (epoch ms)
 * }}}
 * `foreignKeySql` (the foreign-key expression) is only recorded in the fingerprint.
 */
case class KStateFkJoinSubscriptions(
    subscriptionSchema: StructType,
    right: TableJoinSide,
    foreignKeySql: String,
    envelopeKey: Attribute,
    envelopeTimestamp: Attribute,
    envelopeColumns: Seq[Attribute],
    operatorName: Option[String],
    output: Seq[Attribute],
    child: LogicalPlan
) extends UnaryNode with KStateStatefulNode {

  override def kind: String = "fk_join_subscriptions"
  override def producedAttributes: AttributeSet = outputSet

  /** Subscriptions and right updates in the order their tables passed them on. */
  override def processingOrder: Option[ProcessingOrder] = Some(ProcessingOrder.Task)

  override def fingerprint: Map[String, String] = Map(
    "kind" -> kind,
    "foreignKey" -> foreignKeySql,
    "foreignKeyType" -> envelopeKey.dataType.catalogString,
    "timestampType" -> envelopeTimestamp.dataType.catalogString,
    "subscriptionType" -> subscriptionSchema.catalogString,
    "rightValueType" -> right.valueTypes.catalogString,
    "rightVersioning" -> KStateTableJoin.describe(right.versioning)
  )

  override protected def withNewChildInternal(newChild: LogicalPlan): KStateFkJoinSubscriptions =
    copy(child = newChild)
}

object KStateFkJoinSubscriptions {
  val RightValue = "__kstate_fk_right"

  def outputOf(keyName: String, keyType: DataType, leftValues: StructType, rightValues: StructType): Seq[Attribute] =
    Seq(
      AttributeReference(keyName, keyType, nullable = false)(),
      AttributeReference(KStateFkSubscribe.Value, leftValues, nullable = true)(),
      AttributeReference(RightValue, rightValues, nullable = true)(),
      AttributeReference(KStateFkSubscribe.Version, LongType, nullable = false)(),
      AttributeReference(KStateFkSubscribe.Timestamp, LongType, nullable = false)()
    )
}
