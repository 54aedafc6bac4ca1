package org.apache.spark.sql.kstate.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Alias, AttributeReference, UnsafeRow}
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, Complete, Count, Max, Min}
import org.apache.spark.sql.kstate.plans.AggregateSpec
import org.apache.spark.unsafe.types.UTF8String
import org.apache.spark.sql.types.{LongType, StringType}
import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

/**
 * [[AggregateBuffers]] over Spark's own declarative aggregates: `mergeAll`, which reuses two
 * projections' output rows for its intermediate results, gives what `merge` folded one by one
 * gives, and a result that later calls do not change (string buffers: variable-length fields).
 */
class AggregateBuffersSuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  private val s = AttributeReference("s", StringType)()
  private val v = AttributeReference("v", LongType)()

  private val spec = AggregateSpec.of(Seq(
    Alias(AggregateExpression(Count(Seq(v)), Complete, isDistinct = false), "n")(),
    Alias(AggregateExpression(Max(s), Complete, isDistinct = false), "top")(),
    Alias(AggregateExpression(Min(v), Complete, isDistinct = false), "low")()
  ))

  private def buffers = new AggregateBuffers(
    Seq(s, v),
    spec.bufferAttributes,
    spec.initialValues,
    spec.updateExpressions,
    spec.inputBufferAttributes,
    spec.mergeExpressions,
    spec.orderInsensitive
  )

  private def bufferOf(b: AggregateBuffers, records: Seq[(String, Long)]): UnsafeRow =
    records.foldLeft(b.initial()) { case (acc, (str, n)) =>
      b.add(acc, InternalRow(UTF8String.fromString(str), n))
    }

  private def fields(r: UnsafeRow): (Long, String, Any) =
    (r.getLong(0), Option(r.getUTF8String(1)).map(_.toString).orNull, if (r.isNullAt(2)) null else r.getLong(2))

  test("mergeAll equals merge folded left to right, and its result stays as it was") {
    val record = for {
      len <- Gen.choose(0, 40) // strings of different lengths: the buffers' variable-length part
      str <- Gen.listOfN(len, Gen.alphaChar).map(_.mkString)
      n <- Gen.choose(-1000L, 1000L)
    } yield (str, n)
    val gen = Gen.choose(1, 9).flatMap(k => Gen.listOfN(k, Gen.listOf(record)))
    forAll(gen) { groups =>
      val b = buffers
      val parts = groups.map(bufferOf(b, _))
      val before = parts.map(fields)
      val want = fields(parts.tail.foldLeft(parts.head)(b.merge))
      val got = b.mergeAll(parts.toArray[Any], parts.length)
      assert(fields(got) === want)
      // later merges (both projections' rows reused) leave the result and the inputs untouched
      b.mergeAll(parts.reverse.toArray[Any], parts.length)
      b.mergeAll((parts ++ parts).toArray[Any], 2 * parts.length)
      assert(fields(got) === want)
      assert(parts.map(fields) === before)
    }
  }

  test("mergeAll of one aggregate is that aggregate, of none a named failure") {
    val b = buffers
    val one = bufferOf(b, Seq(("x", 3L)))
    assert(b.mergeAll(Array[Any](one, null), 1) eq one)
    val e = intercept[IllegalArgumentException](b.mergeAll(Array[Any](one), 0))
    assert(e.getMessage.contains("mergeAll of 0 of 1 aggregates"))
  }
}
