package org.apache.spark.sql.kstate.plans

import org.apache.spark.sql.catalyst.expressions.{
  Add,
  Attribute,
  AttributeReference,
  Cast,
  CreateNamedStruct,
  Expression,
  GetStructField,
  Literal,
  NamedExpression,
  Subtract
}
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
 *  - [[result]]: the result table's value columns as expressions over [[aggregate]] (the stored
 *    state), evaluated on each stored aggregate as it is emitted (`agg`'s avg is its state's sum
 *    over its count); empty: the aggregate's columns are the result's ([[output]]).
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
    subtract: Seq[Expression],
    result: Seq[NamedExpression] = Nil
) {
  def aggregateType: StructType = TableChangeColumns.valueType(aggregate)
  def valueType: StructType = TableChangeColumns.valueType(value)

  /** The result table's value columns: [[result]]'s, else the stored aggregate's. */
  val output: Seq[Attribute] = if (result.isEmpty) aggregate else result.map(_.toAttribute)
  def outputType: StructType = TableChangeColumns.valueType(output)
}

object TableAggregateSpec {

  /** Kafka's `count()`: 0, +1 per value added, −1 per value subtracted (never deleted). */
  def count(value: Seq[Attribute], name: String): TableAggregateSpec = {
    val agg = AttributeReference(name, LongType)()
    TableAggregateSpec(
      "count",
      Seq(agg),
      value,
      Some(Seq(Literal(0L))),
      Seq(Add(agg, Literal(1L))),
      Seq(Subtract(agg, Literal(1L)))
    )
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
    TableAggregateSpec(
      "sum",
      Seq(agg),
      Seq(v),
      Some(Seq(Cast(Literal(0), t))),
      fold(Add(_, _)),
      fold(Subtract(_, _))
    )
  }

  /**
   * Kafka's `reduce(adder, subtractor)` on the grouped values: the aggregate has the value's
   * columns. `adder` / `subtractor` are resolved over the two placeholders
   * ([[placeholder]]); each must return the placeholders' type.
   */
  def reduce(
      value: Seq[Attribute],
      adder: Expression,
      subtractor: Expression,
      aggPlaceholder: Attribute,
      valuePlaceholder: Attribute
  ): TableAggregateSpec = {
    val agg = value.map(a => AttributeReference(a.name, a.dataType)())
    val bind = binder(agg, agg.length > 1, value, aggPlaceholder, valuePlaceholder)
    TableAggregateSpec("reduce", agg, value, None, bind(adder), bind(subtractor))
  }

  /**
   * Kafka's `aggregate(initializer, adder, subtractor)` on the grouped values: the aggregate has
   * the initializer's type (one column `name`, or one column per field of a struct initializer);
   * `adder` / `subtractor` are resolved over the placeholders (the aggregate's placeholder has
   * the initializer's type, the value's [[placeholderType]]) and return the initializer's type.
   */
  def aggregate(
      value: Seq[Attribute],
      initializer: Expression,
      name: String,
      adder: Expression,
      subtractor: Expression,
      aggPlaceholder: Attribute,
      valuePlaceholder: Attribute
  ): TableAggregateSpec = {
    val (agg, isStruct) = initializer.dataType match {
      case s: StructType => (s.fields.toSeq.map(f => AttributeReference(f.name, f.dataType)()), true)
      case t => (Seq(AttributeReference(name, t)()), false)
    }
    def fields(e: Expression): Seq[Expression] =
      if (isStruct) agg.indices.map(i => GetStructField(e, i, Some(agg(i).name))) else Seq(e)
    val bind = binder(agg, isStruct, value, aggPlaceholder, valuePlaceholder)
    TableAggregateSpec("aggregate", agg, value, Some(fields(initializer)), bind(adder), bind(subtractor))
  }

  /**
   * A function's expression over the placeholders as the aggregate's columns: the placeholders
   * bound to the aggregate (`aggAsStruct`: a struct of its columns, else its one column) and the
   * value ([[placeholderType]]), the result split into the aggregate's columns.
   */
  private def binder(
      agg: Seq[Attribute],
      aggAsStruct: Boolean,
      value: Seq[Attribute],
      aggPlaceholder: Attribute,
      valuePlaceholder: Attribute
  ): Expression => Seq[Expression] = {
    def asStruct(attrs: Seq[Attribute]): Expression = CreateNamedStruct(attrs.flatMap(a => Seq(Literal(a.name), a)))
    val aggBound = if (aggAsStruct) asStruct(agg) else agg.head
    val valueBound = if (value.length == 1) value.head else asStruct(value)
    e => {
      val bound = e.transform {
        case a: Attribute if a.exprId == aggPlaceholder.exprId => aggBound
        case a: Attribute if a.exprId == valuePlaceholder.exprId => valueBound
      }
      if (aggAsStruct) agg.indices.map(i => GetStructField(bound, i, Some(agg(i).name))) else Seq(bound)
    }
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
