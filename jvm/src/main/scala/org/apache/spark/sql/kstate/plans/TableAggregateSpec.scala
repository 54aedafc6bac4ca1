package org.apache.spark.sql.kstate.plans

import org.apache.spark.sql.catalyst.expressions.{Add, Attribute, AttributeReference, Cast, CreateNamedStruct, Expression, GetStructField, Literal, Subtract}
import org.apache.spark.sql.types._

/**
 * How a grouped table's values fold into each group's aggregate (`count()`, `sum`, `reduce` on
 * `KGroupedTable`), as Catalyst expressions over [[aggregate]] (the group's current aggregate,
 * one attribute per aggregate column) followed by [[value]] (the grouped value added or
 * subtracted, one attribute per grouped value column). Evaluated by the aggregation's exec
 * (`execution.ExpressionTableAggregator`) behind the processor's `TableAggregator` contract.
 *
 *  - [[initial]]: the aggregate a group starts from before its first value (Kafka's
 *    initializer); None: the first value is the aggregate (Kafka's `reduce`).
 *  - [[add]] / [[subtract]]: the new aggregate's columns; an aggregate whose columns are ALL
 *    null is deleted (a tombstone is emitted), as Kafka deletes a null aggregate.
 *
 * The expressions' own attributes are not plan attributes: they are hidden from Catalyst (a
 * plan node holds the spec, not its expressions) and bound by the exec.
 */
final case class TableAggregateSpec(
    kind: String,
    aggregate: Seq[Attribute],
    value: Seq[Attribute],
    initial: Option[Seq[Expression]],
    add: Seq[Expression],
    subtract: Seq[Expression]) {
  def aggregateType: StructType = TableChangeColumns.valueType(aggregate)
  def valueType: StructType = TableChangeColumns.valueType(value)
}

object TableAggregateSpec {
  /** Kafka's `count()`: 0, +1 per value added, −1 per value subtracted (never deleted). */
  def count(value: Seq[Attribute], name: String): TableAggregateSpec = {
    val agg = AttributeReference(name, LongType)()
    TableAggregateSpec("count", Seq(agg), value, Some(Seq(Literal(0L))),
      Seq(Add(agg, Literal(1L))), Seq(Subtract(agg, Literal(1L))))
  }

  /** The type `sum` adds values of type `t` in, or None when `t` is not numeric. */
  def sumType(t: DataType): Option[DataType] = t match {
    case ByteType | ShortType | IntegerType | LongType => Some(LongType)
    case FloatType | DoubleType => Some(DoubleType)
    case d: DecimalType => Some(DecimalType.bounded(d.precision + 10, d.scale))
    case _ => None
  }

  /**
   * kstate's `sum` of the one grouped value `v` (numeric): 0, + v per value added, − v per value
   * subtracted, in [[sumType]] (never deleted; a null `v` contributes nothing, stage 1 skips it).
   */
  def sum(v: Attribute, name: String): TableAggregateSpec = {
    val t = sumType(v.dataType).get
    val agg = AttributeReference(name, t)()
    def fold(op: (Expression, Expression) => Expression) = Seq(Cast(op(agg, Cast(v, t)), t))
    TableAggregateSpec("sum", Seq(agg), Seq(v), Some(Seq(Cast(Literal(0), t))),
      fold(Add(_, _)), fold(Subtract(_, _)))
  }

  /**
   * Kafka's `reduce(adder, subtractor)` on the grouped values: the aggregate has the value's
   * columns. `adder` / `subtractor` are resolved over the two placeholders
   * ([[placeholder]]); each must return the placeholders' type.
   */
  def reduce(value: Seq[Attribute], adder: Expression, subtractor: Expression,
      aggPlaceholder: Attribute, valuePlaceholder: Attribute): TableAggregateSpec = {
    val agg = value.map(a => AttributeReference(a.name, a.dataType)())
    def asOne(attrs: Seq[Attribute]): Expression =
      if (attrs.length == 1) attrs.head
      else CreateNamedStruct(attrs.flatMap(a => Seq(Literal(a.name), a)))
    def fields(e: Expression): Seq[Expression] = {
      val bound = e.transform {
        case a: Attribute if a.exprId == aggPlaceholder.exprId => asOne(agg)
        case a: Attribute if a.exprId == valuePlaceholder.exprId => asOne(value)
      }
      if (value.length == 1) Seq(bound) else value.indices.map(i => GetStructField(bound, i, Some(value(i).name)))
    }
    TableAggregateSpec("reduce", agg, value, None, fields(adder), fields(subtractor))
  }

  /**
   * The type a reduce placeholder has for grouped values `value`: the value's type when it is one
   * column, else a struct of the columns (the functions then return such a struct).
   */
  def placeholderType(value: Seq[Attribute]): DataType =
    if (value.length == 1) value.head.dataType else TableChangeColumns.valueType(value)

  val AggregatePlaceholder = "__kstate_agg"
  val ValuePlaceholder = "__kstate_value"
}
