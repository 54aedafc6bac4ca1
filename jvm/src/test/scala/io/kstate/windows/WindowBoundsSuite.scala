package io.kstate.windows

import org.apache.spark.sql.kstate.processor.dedup.InMemoryDedupState
import org.apache.spark.sql.kstate.processor.distinct.TumblingDistinctProcessor
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.kstate.processor.window.TimeWindowSpec

/** Window bounds saturate at both ends of the Long range instead of wrapping. */
class WindowBoundsSuite extends AnyFunSuite {
  private val NearMin = Long.MinValue + 5
  private val NearMax = Long.MaxValue - 5

  test("a timestamp near Long.MinValue gets a window starting at Long.MinValue, not a wrapped one") {
    assert(WindowBounds.alignedStart(NearMin, 10000L) === Long.MinValue)
    assert(WindowBounds.end(Long.MinValue, 10000L) === Long.MinValue + 10000L)
    // Long.MinValue itself is aligned to every advance that divides 2^63
    assert(WindowBounds.alignedStart(Long.MinValue, 1024L) === Long.MinValue)
  }

  test("a timestamp near Long.MaxValue gets a window ending at Long.MaxValue (unchanged)") {
    val start = WindowBounds.alignedStart(NearMax, 10000L)
    assert(start <= NearMax && NearMax - start < 10000L)
    assert(WindowBounds.end(start, 10000L) === Long.MaxValue)
  }

  test("ordinary timestamps are epoch-aligned as before") {
    assert(WindowBounds.alignedStart(12345L, 10000L) === 10000L)
    assert(WindowBounds.alignedStart(-1L, 10000L) === -10000L)
    assert(WindowBounds.alignedStart(0L, 10000L) === 0L)
    assert(WindowBounds.end(10000L, 10000L) === 20000L)
  }

  test("tumbling and hopping time windows of a timestamp near Long.MinValue hold it, without wrapping") {
    val tumbling = TimeWindowSpec(10000L, 10000L, 0L).windowStarts(NearMin)
    assert(tumbling.toSeq === Seq(Long.MinValue))
    val hopping = TimeWindowSpec(10000L, 5000L, 0L)
    val starts = hopping.windowStarts(NearMin)
    assert(starts.toSeq === Seq(Long.MinValue))
    starts.foreach(s => assert(s <= NearMin && NearMin < hopping.windowEnd(s)))
  }

  test("windowed distinct's tumbling windows saturate too") {
    val p = new TumblingDistinctProcessor[String](
      10000L,
      0L,
      new InMemoryDedupState[String](identity)
    )
    assert(p.windowStart(NearMin) === Long.MinValue)
    assert(p.windowEnd(p.windowStart(NearMax)) === Long.MaxValue)
  }
}
