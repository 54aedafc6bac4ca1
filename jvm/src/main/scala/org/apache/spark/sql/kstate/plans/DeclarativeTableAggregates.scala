package org.apache.spark.sql.kstate.plans

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.kstate.errors.KStateErrors

import org.apache.spark.sql.catalyst.expressions.{
  Add,
  Alias,
  Coalesce,
  Attribute,
  AttributeReference,
  Cast,
  EqualTo,
  Expression,
  If,
  IsNull,
  Literal,
  NamedExpression,
  Or,
  Subtract
}
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, Average, Count, Sum}
import org.apache.spark.sql.types.{DataType, LongType, NumericType}

/**
 * `agg` of Spark's declarative aggregates on a grouped table (`KGroupedTable.agg`) as a
 * [[TableAggregateSpec]]: only aggregates that can take a value out again (a subtractor) are
 * accepted, each kept in state columns that add and subtract exactly:
 *
 *  - `count(*)` / `count(1)`: the group's row count; `count(e, ...)`: a count of the rows whose
 *    arguments are all non-null (BIGINT);
 *  - `sum(e)`: a sum of the non-null `e` plus their count; the result is null while the count is
 *    0 (Spark: a sum of no values is null), in Spark's `sum` type;
 *  - `avg(e)` / `mean(e)`: Spark's own average buffer (a sum in its sum type, nulls added as 0, and
 *    a count of the non-null `e`), evaluated by Spark's own `avg` result expression.
 *
 * Every spec also keeps the group's row count (its first state column). A subtraction that takes
 * it to 0 deletes the group (all state columns null: a tombstone), so the result table holds
 * exactly the groups Spark's batch `groupBy(...).agg(...)` of the current table has, with the
 * same values. The columns are the user's expressions with each aggregate replaced by its result
 * over the state (`sum(v) / count(v)`, `(sum(v) + 1).alias("s")` work), named as Spark names them.
 *
 * Anything else is rejected at construction: an aggregate with no subtractor (`min`, `max`,
 * `first`, `collect_list`, ...), a DISTINCT or FILTER aggregate
 * (`KSTATE_TABLE_AGGREGATE_WITHOUT_SUBTRACTOR`), a column that reads a grouped value outside an
 * aggregate (`KSTATE_INVALID_TABLE_AGGREGATE`).
 */
object DeclarativeTableAggregates {

  /** `columns`: resolved aggregate expressions over `value` (a global `Aggregate`'s output). */
  def spec(value: Seq[Attribute], columns: Seq[NamedExpression]): TableAggregateSpec = {
    val rows = AttributeReference("__kstate_rows", LongType)()
    val states = ArrayBuffer[State](State(rows, Literal(0L), Literal(1L)))
    val results = columns.map { c =>
      val replaced = c.transformDown {
        case a: AggregateExpression => resultOf(a, c, states)
      }
      replaced.foreach {
        case a: Attribute if value.exists(_.exprId == a.exprId) =>
          throw KStateErrors.invalidTableAggregate(
            s"agg column ${c.sql}",
            s"it reads the grouped value " +
              s"column '${a.name}' outside an aggregate function (wrap it in one, e.g. sum(${a.name}))"
          )
        case _ =>
      }
      replaced.asInstanceOf[NamedExpression]
    }
    // a group is deleted when its last row leaves: every state column null then
    val rowsAfterSubtract = Subtract(rows, Literal(1L))
    def deletedWhenEmpty(e: Expression): Expression =
      If(EqualTo(rowsAfterSubtract, Literal(0L)), Literal(null, e.dataType), e)
    TableAggregateSpec(
      "agg",
      states.map(_.attr).toSeq,
      value,
      Some(states.map(_.initial).toSeq),
      states.map(s => s.fold(Add(_, _))).toSeq,
      states.map(s => deletedWhenEmpty(s.fold(Subtract(_, _)))).toSeq,
      results
    )
  }

  /** One state column: its initial value, and the amount a value adds (subtracts), in its type. */
  private final case class State(attr: Attribute, initial: Expression, delta: Expression) {
    def fold(op: (Expression, Expression) => Expression): Expression = Cast(op(attr, delta), attr.dataType)
  }

  /** 1 when none of `es` is null, else 0 (Spark's count of a row). */
  private def nonNull(es: Seq[Expression]): Expression =
    if (es.forall(!_.nullable)) Literal(1L)
    else If(es.map(IsNull(_): Expression).reduce(Or(_, _)), Literal(0L), Literal(1L))

  /** `e` in type `t`, 0 when null (a null value adds nothing). */
  private def orZero(e: Expression, t: DataType): Expression = Coalesce(Seq(Cast(e, t), Literal.default(t)))

  private def newState(
      states: ArrayBuffer[State],
      name: String,
      t: DataType,
      initial: Expression,
      delta: Expression
  ): Attribute = {
    val a = AttributeReference(s"__kstate_${states.length}_$name", t)()
    states += State(a, Cast(initial, t), Cast(delta, t))
    a
  }

  /** The result of aggregate `a` (in column `c`) over new state columns added to `states`. */
  private def resultOf(a: AggregateExpression, c: NamedExpression, states: ArrayBuffer[State]): Expression = {
    def refuse(why: String) = KStateErrors.tableAggregateWithoutSubtractor(a.sql, columnName(c), why)
    if (a.isDistinct) throw refuse("a DISTINCT aggregate cannot take a value out again (it would need every value)")
    if (a.filter.isDefined) throw refuse("a FILTER clause is not supported (filter the table, or sum a " +
      "when(...) expression)")
    def numeric(e: Expression): Unit = if (!e.dataType.isInstanceOf[NumericType]) {
      throw KStateErrors.invalidTableAggregate(
        a.sql,
        s"its input has type ${e.dataType.sql}, not a numeric type " +
          "(cast it, e.g. F.col('amount').cast('bigint'))"
      )
    }
    a.aggregateFunction match {
      case Count(children) =>
        newState(states, "count", LongType, Literal(0L), nonNull(children))
      case s: Sum =>
        numeric(s.child)
        val t = s.dataType
        val n = newState(states, "n", LongType, Literal(0L), nonNull(Seq(s.child)))
        val sum = newState(states, "sum", t, Literal(0), orZero(s.child, t))
        If(EqualTo(n, Literal(0L)), Literal(null, t), sum)
      case avg: Average =>
        numeric(avg.child)
        // Spark's own buffer (sum with nulls as 0, count of non-null values) and result expression
        val t = avg.sumDataType
        val sum = newState(states, "sum", t, Literal(0), orZero(avg.child, t))
        val n = newState(states, "n", LongType, Literal(0L), nonNull(Seq(avg.child)))
        avg.evaluateExpression.transform {
          case r: AttributeReference if r.exprId == avg.sum.exprId => sum
          case r: AttributeReference if r.exprId == avg.count.exprId => n
        }
      case f => throw refuse(s"${f.prettyName} has no subtractor (a value leaving the group cannot be taken out " +
          "of it)")
    }
  }

  private def columnName(c: NamedExpression): String = c match {
    case Alias(_, name) => name
    case other => other.name
  }
}
