package org.apache.spark.sql.kstate.plans

import io.kstate.ProcessingOrder
import org.apache.spark.sql.kstate.errors.KStateErrors
import io.kstate.tables.VersionedTable

import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, AttributeReference, AttributeSet, Cast, Expression}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}
import org.apache.spark.sql.types.{DataType, NumericType, StructType}

/**
 * Stage 2 of a foreign-key join (`left.join(right, foreign_key=...)`, KIP-213; Kafka's response
 * join processor and the result's materialization, rules in
 * `processor.join.ForeignKeyResponseProcessor`): over the responses of
 * [[KStateFkJoinSubscriptions]] (its child), partitioned by the left key, it drops stale
 * responses (an older version than one already resolved for the key in the micro-batch), joins
 * the subscribed left value with the right value, keeps the result table and emits its change
 * rows: the left key (the child's key attribute), the left value columns, the right value
 * columns, the result timestamp (the left table's timestamp type), [[TableChangeColumns.OldValue]]
 * and [[TableChangeColumns.Latest]] (always true: the result is unversioned, KIP-914).
 */
case class KStateFkJoin(
    how: String,
    operatorName: Option[String],
    key: Attribute,
    leftValue: Attribute,
    rightValue: Attribute,
    version: Attribute,
    timestamp: Attribute,
    values: Seq[Attribute],
    timestampOut: Attribute,
    oldValue: Attribute,
    latest: Attribute,
    child: LogicalPlan
) extends UnaryNode with KStateStatefulNode {

  override def output: Seq[Attribute] = (key +: values) ++ Seq(timestampOut, oldValue, latest)
  override def producedAttributes: AttributeSet = AttributeSet(values ++ Seq(timestampOut, oldValue, latest))
  override def kind: String = "fk_join"

  /** Each stage-1 partition's responses in the order it sent them (docs/tables.md). */
  override def processingOrder: Option[ProcessingOrder] = Some(ProcessingOrder.Task)

  override def fingerprint: Map[String, String] = Map(
    "kind" -> kind,
    "how" -> how,
    "keyType" -> key.dataType.catalogString,
    "leftValueType" -> leftValue.dataType.catalogString,
    "rightValueType" -> rightValue.dataType.catalogString,
    "timestampType" -> timestampOut.dataType.catalogString
  )

  override protected def withNewChildInternal(newChild: LogicalPlan): KStateFkJoin = copy(child = newChild)
}

object KStateFkJoin {
  val Hows: Seq[String] = Seq("inner", "left")

  /**
   * Both stages of the foreign-key join of the tables whose change rows are `left` and `right`;
   * `foreignKey` is resolved over `left.plan` (deterministic: the caller checks). Checked: `how`,
   * the foreign key's type against the right key's (equal, or widened by an up-cast), equal
   * timestamp types, distinct output column names, both tables streaming or both batch.
   */
  def of(
      left: TableTransforms.Changes,
      right: TableTransforms.Changes,
      rightVersioning: Option[VersionedTable],
      foreignKey: Expression,
      how: String,
      name: Option[String]
  ): KStateFkJoin = {
    val kind = Option(how).map(_.trim.toLowerCase(java.util.Locale.ROOT)).orNull
    if (!Hows.contains(kind)) throw KStateErrors.invalidForeignKeyJoinType(String.valueOf(how))
    KStateTableJoin.checkTables(left, right)
    val fk = foreignKeyOf(foreignKey, right)
    val leftKey = left.attr(left.key)
    val leftTs = left.attr(left.timestamp)
    val leftValues = TableChangeColumns.valueType(left.valueAttrs)
    val sub = KStateFkSubscribe(
      fk,
      TableTransforms.onOld(left, fk),
      leftKey,
      left.valueAttrs,
      left.oldValue,
      left.latest,
      leftTs,
      kind == "left",
      KStateFkSubscribe.outputOf(fk.dataType, left.key, leftKey.dataType, leftValues, leftTs.dataType),
      left.plan
    )
    val env = TwoInputs(
      sub,
      sub.foreignKeyAttr,
      sub.timestampAttr,
      right.plan,
      right.attr(right.key),
      right.attr(right.timestamp)
    )
    val rightSide = TableJoinSide.of(right, rightVersioning)
    val responses = KStateFkJoinSubscriptions.outputOf(left.key, leftKey.dataType, leftValues, rightSide.valueTypes)
    val stage1 = KStateFkJoinSubscriptions(
      TableChangeColumns.valueType(sub.output),
      rightSide,
      foreignKey.sql,
      env.key,
      env.timestamp,
      env.plan.output,
      name.map(_ + "-subscriptions"),
      responses,
      env.plan
    )
    val values =
      (left.valueAttrs ++ right.valueAttrs).map(a => AttributeReference(a.name, a.dataType, nullable = true)())
    KStateFkJoin(
      kind,
      name,
      responses(0),
      responses(1),
      responses(2),
      responses(3),
      responses(4),
      values,
      AttributeReference(leftTs.name, leftTs.dataType, nullable = false)(),
      TableChangeColumns.oldValueAttribute(values),
      TableChangeColumns.latestAttribute(),
      stage1
    )
  }

  /** A numeric type the right key's numeric type holds every value of (INT -> BIGINT, DECIMAL(5,2) -> DECIMAL(10,2)). */
  private def widens(from: DataType, to: DataType): Boolean = (from, to) match {
    case (_: NumericType, _: NumericType) => Cast.canUpCast(from, to)
    case _ => false
  }

  /** The foreign key as a value of the right key's type: equal, or up-cast; else a named error. */
  private def foreignKeyOf(foreignKey: Expression, right: TableTransforms.Changes): Expression = {
    val fk = foreignKey match {
      case Alias(c, _) => c
      case e => e
    }
    val rightKey = right.attr(right.key)
    if (fk.dataType.sameType(rightKey.dataType)) fk
    else if (widens(fk.dataType, rightKey.dataType)) {
      Cast(fk, rightKey.dataType, Some(org.apache.spark.sql.internal.SQLConf.get.sessionLocalTimeZone))
    } else throw KStateErrors.foreignKeyTypeMismatch(foreignKey.sql, fk.dataType.sql, right.key, rightKey.dataType.sql)
  }
}
