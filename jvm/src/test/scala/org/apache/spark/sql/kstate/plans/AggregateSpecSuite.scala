package org.apache.spark.sql.kstate.plans

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.catalyst.expressions.{Alias, AttributeReference, Expression, Literal}
import org.apache.spark.sql.catalyst.expressions.aggregate.{Average, Count, First, Max, Min, Sum}
import org.apache.spark.sql.types.{DataType, DecimalType, DoubleType, IntegerType, LongType, StringType, TimestampType}

/** [[AggregateSpec.orderInsensitive]]: which declarative aggregates may be folded in any grouping. */
class AggregateSpecSuite extends AnyFunSuite {

  private def col(t: DataType) = AttributeReference("c", t)()
  private def spec(fs: Expression*): AggregateSpec =
    AggregateSpec.of(fs.zipWithIndex.map { case (f, i) =>
      Alias(
        f.asInstanceOf[org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction].toAggregateExpression(),
        s"a$i"
      )()
    })

  test("count, sum of integers, min and max of exact values are order-insensitive, also together") {
    assert(spec(Count(Seq(Literal(1)))).orderInsensitive)
    assert(spec(Sum(col(IntegerType))).orderInsensitive)
    assert(spec(Sum(col(LongType))).orderInsensitive)
    assert(spec(Min(col(StringType))).orderInsensitive)
    assert(spec(Max(col(TimestampType))).orderInsensitive)
    assert(spec(Max(col(DecimalType(10, 2)))).orderInsensitive)
    assert(spec(Count(Seq(Literal(1))), Sum(col(LongType)), Max(col(LongType))).orderInsensitive)
  }

  test(
    "floating-point or decimal sums, avg, min or max of floating point, first: order-sensitive, also beside others"
  ) {
    assert(!spec(Sum(col(DoubleType))).orderInsensitive)
    assert(!spec(Sum(col(DecimalType(10, 2)))).orderInsensitive)
    assert(!spec(Average(col(LongType))).orderInsensitive)
    assert(!spec(Min(col(DoubleType))).orderInsensitive)
    assert(!spec(First(col(LongType), ignoreNulls = false)).orderInsensitive)
    assert(!spec(Count(Seq(Literal(1))), First(col(LongType), ignoreNulls = false)).orderInsensitive)
  }
}
