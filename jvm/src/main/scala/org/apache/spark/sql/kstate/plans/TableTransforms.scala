package org.apache.spark.sql.kstate.plans

import org.apache.spark.sql.catalyst.expressions.{
  Alias,
  And,
  Or,
  Attribute,
  Coalesce,
  CreateNamedStruct,
  Expression,
  GetStructField,
  If,
  IsNotNull,
  IsNull,
  Literal,
  NamedExpression,
  Not
}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan, Project}

/**
 * The stateless table operations, as plans over a table's change rows (the table's own columns,
 * then [[TableChangeColumns.OldValue]] and [[TableChangeColumns.Latest]]); the change rows are in
 * processing order within each partition, and these plans keep that order.
 *
 * A value is a tombstone when all its value columns are null. Both operations apply to the
 * change's new value and to its old value (Kafka's `Change<V>` carries both), so a downstream
 * aggregation subtracts exactly what it added:
 *  - `filter(condition)` (Kafka's `KTable#filter`): a value the condition does not keep (false or
 *    null) becomes a tombstone. On an unversioned table a change whose filtered new and old values
 *    are both tombstones is dropped (Kafka's duplicate-tombstone optimization); on a versioned
 *    table it is kept (KIP-914: the tombstone may be a newer version downstream).
 *  - `mapValues(columns)` (Kafka's `KTable#mapValues`): the value columns become `columns`,
 *    computed from the key, value and timestamp columns; a tombstone stays a tombstone, and a
 *    value mapped to all nulls becomes one.
 * The timestamp column in a condition or mapping is the change's timestamp, for the old value too.
 */
object TableTransforms {

  /** A table's change rows: its plan and which of its columns are what. */
  final case class Changes(plan: LogicalPlan, key: String, timestamp: String, values: Seq[String]) {
    def attr(name: String): Attribute = plan.output.find(_.name == name).get
    def valueAttrs: Seq[Attribute] = values.map(attr)
    def oldValue: Attribute = attr(TableChangeColumns.OldValue)
    def latest: Attribute = attr(TableChangeColumns.Latest)
    def userColumns: Seq[Attribute] = plan.output.filterNot(a => TableChangeColumns.isChangeColumn(a.name))
  }

  private def allNull(values: Seq[Expression]): Expression = values.map(IsNull(_): Expression).reduce(And)
  private def holds(condition: Expression): Expression = Coalesce(Seq(condition, Literal(false)))

  /** `e` evaluated on the old value: value columns read from the old-value struct. */
  def onOld(c: Changes, e: Expression): Expression = {
    val index = c.valueAttrs.map(_.exprId).zipWithIndex.toMap
    e.transform {
      case a: Attribute if index.contains(a.exprId) =>
        GetStructField(c.oldValue, index(a.exprId), Some(a.name))
    }
  }

  /** `condition` is resolved over `c.plan`. */
  def filter(c: Changes, condition: Expression, versioned: Boolean): LogicalPlan = {
    val keepNew = And(Not(allNull(c.valueAttrs)), holds(condition))
    val keepOld = And(IsNotNull(c.oldValue), holds(onOld(c, condition)))
    val values = c.valueAttrs.map(_.exprId).toSet
    val projected = c.plan.output.map {
      case a if values.contains(a.exprId) => Alias(If(keepNew, a, Literal(null, a.dataType)), a.name)()
      case a if a.name == TableChangeColumns.OldValue => Alias(If(keepOld, a, Literal(null, a.dataType)), a.name)()
      case a => a
    }
    val p = Project(projected, c.plan)
    if (versioned) p
    else {
      val out = Changes(p, c.key, c.timestamp, c.values)
      Filter(Not(And(allNull(out.valueAttrs), IsNull(out.oldValue))), p)
    }
  }

  /** `columns` are resolved over `c.plan`; returns the plan and the new value columns' names. */
  def mapValues(c: Changes, columns: Seq[NamedExpression]): (LogicalPlan, Seq[String]) = {
    val newIsTomb = allNull(c.valueAttrs)
    val newValues = columns.map(e => Alias(If(newIsTomb, Literal(null, e.dataType), e), e.name)())
    val oldFields = columns.map(e => onOld(c, e))
    val oldStruct = CreateNamedStruct(columns.zip(oldFields).flatMap { case (e, f) => Seq(Literal(e.name), f) })
    // an old value mapped to all nulls is a tombstone too: absent
    val oldAbsent = Or(IsNull(c.oldValue), allNull(oldFields))
    val old = Alias(If(oldAbsent, Literal(null, oldStruct.dataType), oldStruct), TableChangeColumns.OldValue)()
    val plan = Project(Seq(c.attr(c.key)) ++ newValues ++ Seq(c.attr(c.timestamp), old, c.latest), c.plan)
    (plan, columns.map(_.name))
  }
}
