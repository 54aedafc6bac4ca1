package org.apache.spark.sql.kstate.plans

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, AttributeSet, Expression}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}
import org.apache.spark.sql.types.{LongType, StructType}

/**
 * Stage 1 of a table aggregation (`table.group_by(key, value)`, Kafka's `KTableRepartitionMap`):
 * stateless, over a table's change rows (the table's columns, [[TableChangeColumns.OldValue]],
 * [[TableChangeColumns.Latest]]) in their processing order, it maps each change to 0–2 group
 * changes (`processor.tableagg.TableRegroupProcessor`'s rules), in that order:
 * {{{
 *   <name>     the group key, named as the group_by key column (never null)
 *   add        STRUCT of the grouped value columns to add to the group, or null
 *   subtract   STRUCT of the grouped value columns to subtract from the group, or null
 *   ts         the table change's event time, epoch ms (BIGINT)
 * }}}
 * `group` / `values` select the group and grouped value of the change's new value (over the
 * child's columns); `oldGroup` / `oldValues` the same of its old value (reading the old-value
 * struct). A value whose columns are all null contributes to no group. On a versioned table an
 * out-of-order change (latest false) sends nothing.
 */
case class KStateTableRegroup(
    group: Expression,
    values: Seq[Expression],
    oldGroup: Expression,
    oldValues: Seq[Expression],
    tableValues: Seq[Attribute],
    oldValue: Attribute,
    latest: Attribute,
    timestamp: Expression,
    versioned: Boolean,
    output: Seq[Attribute],
    child: LogicalPlan
) extends UnaryNode {

  override def producedAttributes: AttributeSet = AttributeSet(output)
  def groupAttr: Attribute = output(0)
  def addAttr: Attribute = output(1)
  def subtractAttr: Attribute = output(2)
  def timestampAttr: Attribute = output(3)

  override protected def withNewChildInternal(newChild: LogicalPlan): KStateTableRegroup = copy(child = newChild)
}

object KStateTableRegroup {

  /**
   * The node's output attributes for a group named `groupName` (the result table's key column)
   * of `group`'s type and grouped values of `valueType`.
   */
  def outputOf(groupName: String, group: Expression, valueType: StructType): Seq[Attribute] = Seq(
    AttributeReference(groupName, group.dataType, nullable = false)(),
    AttributeReference("__kstate_add", valueType, nullable = true)(),
    AttributeReference("__kstate_subtract", valueType, nullable = true)(),
    AttributeReference("__kstate_ts", LongType, nullable = false)()
  )
}
