package org.apache.spark.sql.kstate.plans

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, AttributeSet, Expression}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}
import org.apache.spark.sql.types.{ByteType, DataType, LongType, StructType}

/**
 * The subscription sender of a foreign-key join (Kafka's `SubscriptionSendProcessorSupplier`,
 * rules in `processor.join.ForeignKeySubscriptionSender`): stateless, over the left table's
 * change rows in their processing order (a narrow map: rows stay in the left table's partition),
 * each change becomes 0–2 subscription rows, in that order:
 * {{{
 *   __kstate_fk           the foreign key (the right table's key type), null: none
 *   <left key>            the left key
 *   __kstate_fk_instr     TINYINT, `ForeignKeyInstruction.code`
 *   __kstate_fk_value     STRUCT of the left value columns: the change's new value, null if deleted
 *   __kstate_fk_version   BIGINT: the change's version (below)
 *   __kstate_fk_ts        the change's timestamp, in the left table's timestamp type
 * }}}
 * `foreignKey` is over the child's columns (the new value), `oldForeignKey` the same over the
 * old-value struct. Version of a change: (micro-batch id << 32) | its position in its partition
 * (the exec numbers the rows), strictly increasing per left key across micro-batches and
 * restarts with no state (docs/tables.md, "Foreign-key joins").
 */
case class KStateFkSubscribe(
    foreignKey: Expression,
    oldForeignKey: Expression,
    key: Expression,
    tableValues: Seq[Attribute],
    oldValue: Attribute,
    latest: Attribute,
    timestamp: Expression,
    leftJoin: Boolean,
    output: Seq[Attribute],
    child: LogicalPlan
) extends UnaryNode {

  override def producedAttributes: AttributeSet = AttributeSet(output)
  def foreignKeyAttr: Attribute = output(0)
  def timestampAttr: Attribute = output(5)

  override protected def withNewChildInternal(newChild: LogicalPlan): KStateFkSubscribe = copy(child = newChild)
}

object KStateFkSubscribe {
  val ForeignKey = "__kstate_fk"
  val Instruction = "__kstate_fk_instr"
  val Value = "__kstate_fk_value"
  val Version = "__kstate_fk_version"
  val Timestamp = "__kstate_fk_ts"

  /** Output of a sender: foreign key of `fkType`, left key `keyName` of `keyType`, values, ts. */
  def outputOf(
      fkType: DataType,
      keyName: String,
      keyType: DataType,
      valueType: StructType,
      tsType: DataType
  ): Seq[Attribute] = Seq(
    AttributeReference(ForeignKey, fkType, nullable = true)(),
    AttributeReference(keyName, keyType, nullable = false)(),
    AttributeReference(Instruction, ByteType, nullable = false)(),
    AttributeReference(Value, valueType, nullable = true)(),
    AttributeReference(Version, LongType, nullable = false)(),
    AttributeReference(Timestamp, tsType, nullable = false)()
  )
}
