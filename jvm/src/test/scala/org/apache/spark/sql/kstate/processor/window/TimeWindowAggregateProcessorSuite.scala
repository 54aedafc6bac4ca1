package org.apache.spark.sql.kstate.processor.window

import scala.collection.mutable.ArrayBuffer

import io.kstate.KStateException
import org.apache.spark.sql.kstate.processor.Counters
import io.kstate.suppress.WhenFull
import org.apache.spark.sql.kstate.processor.suppress.BufferLimits
import org.scalatest.funsuite.AnyFunSuite

/**
 * Unit tests of [[TimeWindowAggregateProcessor]] over [[InMemoryTimeWindowState]] (no Spark): one
 * test per numbered rule, with KIP-328's final-results example (hourly counts, 10 minutes grace),
 * plus window enumeration and batch boundaries. Aggregates are counts.
 */
class TimeWindowAggregateProcessorSuite extends AnyFunSuite {
  import TimeWindowAggregateProcessorSuite._
  import TimeWindowAggregateMetrics._

  private val Min = 60 * 1000L
  private val Hour = 60 * Min

  test("rule 1: a null timestamp is dropped and counted; stream time unchanged") {
    val h = new Harness(TimeWindowSpec(10, 10, 0))
    h.p.process(1, "a", keyIsNull = false, 0L, tsIsNull = true)
    assert(h.counters(NullTimestamps) === 1 && h.p.currentStreamTime === Long.MinValue)
    h.finish()
    assert(h.results.isEmpty && h.state.records === 0)
  }

  test("rule 2: a null key is dropped and counted; stream time unchanged") {
    val h = new Harness(TimeWindowSpec(10, 10, 0))
    h.p.process(1, null, keyIsNull = true, 5L, tsIsNull = false)
    assert(h.counters(NullKeys) === 1 && h.p.currentStreamTime === Long.MinValue)
    assert(h.counters(Records) === 0)
  }

  test("rule 3: lateness is measured before the record advances stream time") {
    val h = new Harness(TimeWindowSpec(100, 100, 100))
    h.record("a", 50L)
    h.record("a", 20L)
    h.record("a", 40L)
    assert(h.p.currentStreamTime === 50L)
    assert(h.counters(LatenessTotal) === 30 + 10)
    assert(h.counters(LatenessMax) === 30)
    assert(h.counters(Records) === 3)
  }

  test("rule 4: a record joins every window containing it, ascending; late per window when end <= close time") {
    val h = new Harness(TimeWindowSpec(10, 5, 0))
    h.record("a", 12L) // windows [5,15) and [10,20)
    h.record("a", 16L) // stream time 16: [5,15) closed at close time 16; [10,20), [15,25) open
    h.record("a", 13L) // [5,15) late, [10,20) updated
    assert(h.counters(LateDropped) === 1, "late for one window, counted per window")
    assert(h.counters(Updates) === 2 + 2 + 1)
    assert(TimeWindowSpec(10, 5, 0).windowStarts(12L).toSeq === Seq(5L, 10L))
    assert(TimeWindowSpec(10, 5, 0).windowStarts(3L).toSeq === Seq(0L), "no window starts before 0")
    assert(TimeWindowSpec(10, 5, 0).windowStarts(-3L).toSeq === Seq(-10L, -5L), "negative: every window")
  }

  test("rule 5: windows with end <= stream time - grace close at the end of the batch and leave the state") {
    val h = new Harness(TimeWindowSpec(10, 10, 2))
    h.record("a", 1L)
    h.record("a", 12L) // close time 10: [0,10) closes
    h.finish()
    assert(h.counters(Closed) === 1 && h.state.records === 1)
    assert(h.p.outputTimeFloor === 11L)
  }

  test("rule 6: without suppression, each changed window is emitted once per batch with its latest value") {
    val h = new Harness(TimeWindowSpec(10, 10, 0))
    h.record("a", 1L); h.record("a", 2L); h.record("b", 3L)
    h.finish()
    assert(h.results.map(r => (r.key, r.start, r.agg)) === Seq(("a", 0L, 2L), ("b", 0L, 1L)))
    val next = h.nextBatch()
    next.record("b", 4L)
    next.finish()
    assert(
      next.results.map(r => (r.key, r.start, r.agg, r.maxTs)) === Seq(("b", 0L, 2L, 4L)),
      "a unchanged: not emitted"
    )
  }

  test("rule 6: order: stored windows closing now first, then the batch's changes in the order they first changed") {
    val h = new Harness(TimeWindowSpec(10, 10, 20))
    h.record("a", 1L); h.record("b", 12L)
    h.finish()
    val b2 = h.nextBatch()
    b2.record("c", 15L) // new window [10,20), closes in this batch
    b2.record("a", 5L) // stored window [0,10), changed, closes in this batch
    b2.record("d", 45L) // close time 25 closes [0,10) and [10,20); b's [10,20) unchanged
    b2.finish()
    assert(b2.results.map(r => (r.key, r.start, r.agg)) === Seq(("a", 0L, 2L), ("c", 10L, 1L), ("d", 40L, 1L)))
    assert(b2.counters(Closed) === 3)
  }

  test("rule 7: final results of windows created in the batch merge into the stored windows' end order") {
    val h = new Harness(TimeWindowSpec(10, 10, 10), Some(BufferLimits()))
    h.record("a", 15L) // [10,20), stored at the end of the batch
    h.finish()
    val b2 = h.nextBatch()
    b2.record("b", 5L) // [0,10): close time 5, still open; new in this batch
    b2.record("x", 12L) // [10,20), new in this batch, same end as a's
    b2.record("c", 40L) // close time 30: all three close
    b2.finish()
    assert(
      b2.results.map(r => (r.key, r.end)) === Seq(("b", 10L), ("a", 20L), ("x", 20L)),
      "end order; on equal ends the stored window first"
    )
  }

  test("rule 7: KIP-328 final results: hourly counts with 10 minutes grace, one result per window, in end order") {
    val h = new Harness(TimeWindowSpec(Hour, Hour, 10 * Min), Some(BufferLimits()))
    h.record("user1", 10 * Min)
    h.record("user2", 30 * Min)
    h.record("user1", 65 * Min) // second hour
    h.finish()
    assert(h.results.isEmpty, "close time 55 min: no window closed")
    val b2 = h.nextBatch()
    b2.record("user1", 59 * Min) // late but within grace: counts
    b2.record("user3", 2 * Hour + 11 * Min) // close time 2h01: the first hour and the second closed
    b2.finish()
    assert(b2.results.map(r => (r.key, r.start, r.agg)) ===
      Seq(("user1", 0L, 2L), ("user2", 0L, 1L), ("user1", Hour, 1L)))
    val b3 = b2.nextBatch()
    b3.record("user1", 30 * Min) // its window closed: dropped, no second result
    b3.finish()
    assert(b3.results.isEmpty && b3.counters(LateDropped) === 1)
  }

  test("rule 8: final results with shut down when full: KSTATE_BUFFER_FULL when the open windows pass the limit") {
    val h = new Harness(TimeWindowSpec(10, 10, 100), Some(BufferLimits(maxRecords = 2, whenFull = WhenFull.ShutDown)))
    h.record("a", 1L); h.record("b", 1L); h.record("c", 1L)
    val e = intercept[KStateException](h.finish())
    assert(e.errorClass === "KSTATE_BUFFER_FULL" && e.getMessage.contains("'op'"))
  }

  test("extremes: windows near Long.MinValue and Long.MaxValue saturate; a record there does not overflow") {
    val h = new Harness(TimeWindowSpec(10, 5, 0))
    h.record("a", Long.MinValue + 1) // its aligned start would be before Long.MinValue
    h.record("a", Long.MaxValue - 1)
    h.finish()
    assert(h.results.map(_.start).contains(Long.MinValue))
    assert(h.results.filter(_.start > 0).forall(_.end === Long.MaxValue))
  }
}

object TimeWindowAggregateProcessorSuite {
  object Count extends Aggregator[Int, Long] {
    override def initial(): Long = 0L
    override def add(agg: Long, record: Int): Long = agg + 1
  }
  final case class Out(key: String, start: Long, end: Long, agg: Long, maxTs: Long)

  final class Harness(
      windows: TimeWindowSpec,
      finalResults: Option[BufferLimits] = None,
      val state: InMemoryTimeWindowState[String, Long] =
        new InMemoryTimeWindowState[String, Long](identity, (k, _) => k.length + 8L),
      val counters: Counters = TimeWindowAggregateMetrics.newCounters()
  ) {
    val results: ArrayBuffer[Out] = ArrayBuffer.empty
    val p = new TimeWindowAggregateProcessor[Int, String, Long](
      windows,
      Count,
      state,
      identity,
      finalResults,
      "op",
      new WindowResults[String, Long] {
        override def result(key: String, start: Long, end: Long, agg: Long, maxTs: Long): Unit =
          results += Out(key, start, end, agg, maxTs)
      },
      counters
    )
    def record(k: String, ts: Long): Unit = p.process(1, k, keyIsNull = false, ts, tsIsNull = false)
    def finish(): Unit = p.finish()
    def nextBatch(): Harness = new Harness(windows, finalResults, state, counters)
  }
}
