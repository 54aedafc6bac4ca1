package org.apache.spark.sql.kstate.execution

import io.kstate.KStateException

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Alias,
  AttributeReference,
  BoundReference,
  Cast,
  Divide,
  Expression,
  UnsafeProjection,
  UnsafeRow
}
import org.apache.spark.sql.catalyst.expressions.aggregate.{
  AggregateExpression,
  Average,
  CollectList,
  Complete,
  Count,
  Max,
  Sum
}
import org.apache.spark.sql.kstate.plans.DeclarativeTableAggregates
import org.apache.spark.sql.types.{Decimal, DecimalType, DoubleType, LongType}
import org.scalatest.funsuite.AnyFunSuite

/**
 * `agg`'s declarative aggregates ([[DeclarativeTableAggregates]]) evaluated as stage 2 evaluates
 * them: the state folded by [[ExpressionTableAggregator]], the result columns projected from the
 * stored state by [[KStateTableAggregateExec.resultColumns]]. Spark's null rules and types, the
 * group deleted when its last row leaves, and the aggregates without subtractor refused.
 */
class DeclarativeTableAggregatesSuite extends AnyFunSuite {
  private val v = AttributeReference("v", LongType)()
  private val d = AttributeReference("d", DecimalType(6, 2))()
  private def agg(
      f: org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction,
      name: String,
      distinct: Boolean = false
  ) = Alias(AggregateExpression(f, Complete, distinct), name)()

  /** Folds adds (Some) and subtracts (None: subtract the given value) and returns each result row. */
  private final class Group(columns: Seq[org.apache.spark.sql.catalyst.expressions.NamedExpression]) {
    val spec = DeclarativeTableAggregates.spec(Seq(v, d), columns)
    private val aggregator = new ExpressionTableAggregator(spec)
    private val valueProj = UnsafeProjection.create(Seq(v, d), Seq(v, d))
    private val resultProj = UnsafeProjection.create(
      KStateTableAggregateExec.resultColumns(spec, BoundReference(0, spec.aggregateType, nullable = true))
    )
    private var state: UnsafeRow = _
    private def value(x: java.lang.Long, y: BigDecimal): UnsafeRow =
      valueProj(InternalRow(x, Option(y).map(Decimal(_)).orNull)).copy()
    def add(x: java.lang.Long, y: BigDecimal = null): Seq[Any] = {
      state = aggregator.add(null, state, value(x, y)); result
    }
    def sub(x: java.lang.Long, y: BigDecimal = null): Seq[Any] = {
      state = aggregator.subtract(null, state, value(x, y)); result
    }
    def deleted: Boolean = state == null
    private def result: Seq[Any] = {
      val r = resultProj(InternalRow(state))
      spec.output.indices.map(i => if (r.isNullAt(i)) null else r.get(i, spec.output(i).dataType))
    }
  }

  test("count(*), count(v), sum(v), avg(v): Spark's null rules; a group whose last row leaves is deleted") {
    val g = new Group(Seq(
      agg(Count(Seq(org.apache.spark.sql.catalyst.expressions.Literal(1))), "count(1)"),
      agg(Count(Seq(v)), "count(v)"),
      agg(Sum(v), "sum(v)"),
      agg(Average(v), "avg(v)")
    ))
    assert(g.spec.output.map(a => (a.name, a.dataType)) ===
      Seq(("count(1)", LongType), ("count(v)", LongType), ("sum(v)", LongType), ("avg(v)", DoubleType)))
    assert(g.add(null) === Seq(1L, 0L, null, null)) // nulls ignored; sum and avg of no value are null
    assert(g.add(4L) === Seq(2L, 1L, 4L, 4.0))
    assert(g.add(1L) === Seq(3L, 2L, 5L, 2.5))
    assert(g.sub(4L) === Seq(2L, 1L, 1L, 1.0))
    assert(g.sub(1L) === Seq(1L, 0L, null, null)) // back to the null row only: its count stays
    assert(!g.deleted)
    assert(g.sub(null) === Seq(null, null, null, null)) // the last row left: deleted, a tombstone
    assert(g.deleted)
    assert(g.add(7L) === Seq(1L, 1L, 7L, 7.0)) // re-created from the initial state
  }

  test("decimal sum and avg in Spark's types; expressions over aggregates") {
    val g = new Group(Seq(
      agg(Sum(d), "sum(d)"),
      agg(Average(d), "avg(d)"),
      Alias(
        Divide(
          Cast(AggregateExpression(Sum(v), Complete, isDistinct = false), DoubleType),
          Cast(AggregateExpression(Count(Seq(v)), Complete, isDistinct = false), DoubleType)
        ),
        "ratio"
      )()
    ))
    assert(g.spec.output.map(_.dataType) === Seq(DecimalType(16, 2), DecimalType(10, 6), DoubleType))
    assert(g.add(1L, BigDecimal("1.25")) === Seq(Decimal("1.25"), Decimal("1.250000"), 1.0))
    assert(g.add(2L, BigDecimal("2.00")) === Seq(Decimal("3.25"), Decimal("1.625000"), 1.5))
    assert(g.sub(1L, BigDecimal("1.25")) === Seq(Decimal("2.00"), Decimal("2.000000"), 2.0))
  }

  test("aggregates without a subtractor, DISTINCT, and grouped values outside an aggregate are refused") {
    def error(e: org.apache.spark.sql.catalyst.expressions.NamedExpression): KStateException =
      intercept[KStateException](DeclarativeTableAggregates.spec(Seq(v, d), Seq(e)))
    val max = error(agg(Max(v), "max(v)"))
    assert(max.errorClass === "KSTATE_TABLE_AGGREGATE_WITHOUT_SUBTRACTOR")
    assert(max.getMessage.contains("max") && max.getMessage.contains("reduce(adder, subtractor)"), max.getMessage)
    assert(error(agg(CollectList(v), "l")).errorClass === "KSTATE_TABLE_AGGREGATE_WITHOUT_SUBTRACTOR")
    val distinct = error(agg(Count(Seq(v)), "c", distinct = true))
    assert(distinct.errorClass === "KSTATE_TABLE_AGGREGATE_WITHOUT_SUBTRACTOR")
    assert(distinct.getMessage.contains("DISTINCT"), distinct.getMessage)
    assert(error(Alias(v: Expression, "bare")()).errorClass === "KSTATE_INVALID_TABLE_AGGREGATE")
  }
}
