package org.apache.spark.sql.kstate.processor

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

class StreamTimeSuite extends AnyFunSuite with ScalaCheckPropertyChecks {

  test("advance keeps the largest timestamp seen; it never goes back") {
    val t = new StreamTime(StreamTime.Unknown)
    assert(!t.isKnown)
    t.advance(10L); t.advance(5L)
    assert(t.current === 10L && t.isKnown)
    t.advance(11L)
    assert(t.current === 11L)
  }

  test("a window is closed once end <= stream time - grace (Kafka's rule)") {
    val t = new StreamTime(100L)
    assert(t.closeTime(10L) === 90L)
    assert(t.isClosed(90L, 10L), "end == close time: closed")
    assert(!t.isClosed(91L, 10L))
    assert(t.firstOpenEnd(10L) === 91L)
  }

  test("unknown stream time closes nothing; arithmetic saturates at both ends") {
    val unknown = new StreamTime(StreamTime.Unknown)
    assert(unknown.closeTime(5L) === Long.MinValue)
    assert(unknown.firstOpenEnd(5L) === Long.MinValue)
    assert(!unknown.isClosed(Long.MinValue + 1, 0L))
    assert(unknown.latenessOf(0L) === 0L, "no lateness before the first record")
    val near = new StreamTime(Long.MinValue + 3)
    assert(near.closeTime(10L) === Long.MinValue)
    val top = new StreamTime(Long.MaxValue)
    assert(top.firstOpenEnd(0L) === Long.MaxValue)
    assert(StreamTime.plus(Long.MaxValue - 1, 5L) === Long.MaxValue)
    assert(StreamTime.plus(1L, 5L) === 6L)
  }

  test("lateness is stream time - ts when positive, measured before the record advances it") {
    val t = new StreamTime(50L)
    assert(t.latenessOf(40L) === 10L)
    assert(t.latenessOf(50L) === 0L)
    assert(t.latenessOf(60L) === 0L)
  }

  test(
    "lateness saturates at Long.MaxValue instead of wrapping (stream time near Long.MaxValue, ts near Long.MinValue)"
  ) {
    val t = new StreamTime(Long.MaxValue)
    assert(t.latenessOf(Long.MinValue + 1) === Long.MaxValue)
    assert(t.latenessOf(-1L) === Long.MaxValue)
    assert(t.latenessOf(0L) === Long.MaxValue)
    assert(new StreamTime(1L).latenessOf(Long.MinValue + 2) === Long.MaxValue)
    assert(new StreamTime(0L).latenessOf(Long.MinValue + 1) === Long.MaxValue)
  }

  test("closeTime and within agree with exact (BigInt) arithmetic on any input") {
    val anyLong = Gen.oneOf(
      Gen.choose(Long.MinValue, Long.MaxValue),
      Gen.oneOf(Long.MinValue, Long.MinValue + 1, -1L, 0L, 1L, Long.MaxValue - 1, Long.MaxValue)
    )
    val nonNeg = Gen.oneOf(Gen.choose(0L, Long.MaxValue), Gen.oneOf(0L, 1L, Long.MaxValue))
    forAll(anyLong, nonNeg) { (a, d) =>
      val exact = BigInt(a) - BigInt(d)
      val expected = if (exact < BigInt(Long.MinValue)) Long.MinValue else exact.toLong
      assert(new StreamTime(a).closeTime(d) === expected)
    }
    forAll(anyLong, anyLong, nonNeg) { (a, b, d) =>
      assert(StreamTime.within(a, b, d) === ((BigInt(a) - BigInt(b)).abs <= BigInt(d)))
    }
  }
}
