package org.apache.spark.sql.kstate.processor.window

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

class EndOrderSuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 300)

  private def spans(ends: Seq[Long]): Array[(Int, StoredSession[String])] =
    ends.zipWithIndex.map { case (e, i) => (i, StoredSession(0L, e, 0L, s"span $i")) }.toArray

  // few distinct ends (many ties), ends near each other, and ends far apart or at the extremes
  private val endGen: Gen[Long] = Gen.frequency(
    4 -> Gen.choose(0L, 5L),
    4 -> Gen.choose(1700000000000L, 1700000100000L),
    1 -> Gen.oneOf(Long.MinValue, Long.MaxValue, -1L, 1L << 40, -(1L << 50)),
    1 -> Gen.choose(Long.MinValue, Long.MaxValue)
  )

  test("property: the same order as a stable sort by end, on the packed path and the comparator path") {
    forAll(Gen.listOf(endGen)) { ends =>
      val a = spans(ends)
      val expected = a.sortBy(_._2.end).toSeq // Scala's sortBy is stable
      EndOrder.sortInPlace(a)
      assert(a.toSeq == expected)
    }
  }

  test("ties keep the order they were closed in, among many spans") {
    val a = spans(Seq.tabulate(5000)(i => (i * 7919L) % 13))
    val expected = a.sortBy(_._2.end).toSeq
    EndOrder.sortInPlace(a)
    assert(a.toSeq == expected)
    assert(a.sliding(2).forall { case Array(x, y) => x._2.end < y._2.end || x._1 < y._1 })
  }
}
