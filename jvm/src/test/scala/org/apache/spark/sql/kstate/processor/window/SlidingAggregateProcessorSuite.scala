package org.apache.spark.sql.kstate.processor.window

import org.scalatest.funsuite.AnyFunSuite

/**
 * [[SlidingAggregateProcessor]]'s numbered rules, one test each, with docs/windows.md's examples
 * (Kafka's javadoc example, and the documented differences from Kafka 4.3.1, whose Kafka side
 * `KafkaStreamsDifferentialSuite` checks). Each micro-batch is a new processor over one heap
 * store, as Spark runs them.
 */
class SlidingAggregateProcessorSuite extends AnyFunSuite {
  import SlidingMetrics._
  import SpanFixtures._

  private type SRun = Run[InMemorySessionStore[(String, Boolean), Vector[Int]]]

  /**
   * Runs the batches with the order-sensitive aggregator (windows updated per record) and with
   * the same aggregator declared order-insensitive (windows folded per batch): both must give the
   * same rows (ids compared as sets), counters and stored spans; returns the first run.
   */
  private def run(d: Long, grace: Long, finalResults: Boolean, batches: Seq[Batch]): SRun = {
    def once(aggregator: MergingAggregator[Int, Vector[Int]]): SRun = {
      val store = new InMemorySessionStore[(String, Boolean), Vector[Int]](identity, identity)
      val counters = SlidingMetrics.newCounters()
      runAll(batches, store, counters)(sliding(d, grace, finalResults, store, aggregator, counters))
    }
    val perRecord = once(IdsAggregator)
    val folded = once(SlidingPropertySuite.UnorderedIds)
    def rows(r: SRun) = r.outputs.map(_.map(_.normalised).sortBy(_.toString))
    assert(rows(folded) === rows(perRecord), "folded per batch")
    Seq(NullTimestamps, NullKeys, Records, Created, Updates, LateDropped, Emitted, Closed).foreach { m =>
      assert(folded.counters(m) === perRecord.counters(m), s"${m.name}, folded per batch")
    }
    assert(folded.store.records === perRecord.store.records, "stored spans, folded per batch")
    perRecord
  }

  private def runPlain(d: Long, grace: Long, finalResults: Boolean, batches: Seq[(String, Long)]*): SRun =
    run(d, grace, finalResults, numbered(batches))

  test("rule 1: a null or negative timestamp, then a null key, is dropped and counted; stream time does not move") {
    val r = run(
      5,
      0,
      finalResults = false,
      Seq(Batch(
        None,
        Seq(
          Rec(1, Some("a"), None),
          Rec(2, Some("a"), Some(-1L)),
          Rec(3, None, Some(50L)),
          Rec(4, Some("a"), Some(5L))
        )
      ))
    )
    assert(r.counters(NullTimestamps) === 2)
    assert(r.counters(NullKeys) === 1)
    assert(r.counters(Records) === 1)
    assert(r.streamTime === 5L)
    assert(r.outputs === Seq(Seq(Out("a", 0, 5, Some(Vector(4)), 5))))
  }

  test("rule 2: lateness is stream time - ts before the record, counted also for dropped records") {
    val r = runPlain(1, 0, finalResults = false, batch("a" -> 10, "b" -> 7, "a" -> 4, "c" -> 12))
    assert(r.counters(LatenessTotal) === 3 + 6)
    assert(r.counters(LatenessMax) === 6)
    assert(r.counters(Records) === 4)
    assert(r.counters(LateDropped) === 2) // b@7 and a@4: ts + 1 < close time 10
  }

  test("rule 3: close time = stream time - grace; a window is open while end >= close time") {
    // d 5, grace 2: at stream time 12 close time is 10, so [5,10] is still open and a@7 joins it;
    // at stream time 13 (close time 11) it closes
    val r = runPlain(5, 2, finalResults = true, batch("a" -> 10, "z" -> 12, "a" -> 7), batch("z" -> 13))
    assert(r.outputs === Seq(Nil, Seq(Out("a", 5, 10, Some(Vector(1, 3)), 10))))
  }

  test("rule 4: a record with ts + d < close time is late; ts + d = close time is on time") {
    val r = runPlain(5, 0, finalResults = false, batch("z" -> 20, "a" -> 15, "a" -> 14))
    assert(r.counters(LateDropped) === 1) // a@14
    assert(r.counters(Records) === 3)
    assert(r.outputs === Seq(Seq(Out("z", 15, 20, Some(Vector(1)), 20)))) // a@15's windows are closed or empty
    assert(r.store.get(("a", false)).map(_.start).toSeq === Seq(15L), "a@15 is kept for its right window")
  }

  test("rule 5: a record joins every open window containing it (Kafka's javadoc example, d = 5 s)") {
    val r = runPlain(5000, 0, finalResults = false, batch("a" -> 8000), batch("a" -> 9200, "a" -> 12400))
    assert(r.outputs(0) === Seq(Out("a", 3000, 8000, Some(Vector(1)), 8000)))
    assert(r.outputs(1).toSet === Set(
      Out("a", 4200, 9200, Some(Vector(1, 2)), 9200),
      Out("a", 7400, 12400, Some(Vector(1, 2, 3)), 12400),
      Out("a", 8001, 13001, Some(Vector(2, 3)), 12400),
      Out("a", 9201, 14201, Some(Vector(3)), 12400)
    ))
    // the batches' records counted into windows: a@8 in [3,8]; a@9.2 in [4.2,9.2] and [8.001,13.001]
    // (created); a@12.4 joins [8.001,13.001] and is in [7.4,12.4] (with a@9.2) and [9.201,14.201]
    assert(r.counters(Updates) === 7)
    assert(r.counters(Created) === 5)
  }

  test("rule 6: left, right and the previous record's right window are built from every record in range") {
    // difference (a) of docs/windows.md: d 5, grace 0, (b,16),(a,14),(a,16)
    val r = runPlain(5, 0, finalResults = false, batch("b" -> 16, "a" -> 14, "a" -> 16))
    assert(r.outputs(0).toSet === Set(
      Out("b", 11, 16, Some(Vector(1)), 16),
      Out("a", 11, 16, Some(Vector(2, 3)), 16),
      Out("a", 15, 20, Some(Vector(3)), 16)
    ))
    // early records share [0, d]; a@2's right window holds a@3
    val early = runPlain(5, 0, finalResults = false, batch("a" -> 2, "a" -> 3))
    assert(early.outputs(0).toSet === Set(Out("a", 0, 5, Some(Vector(1, 2)), 3), Out("a", 3, 8, Some(Vector(2)), 3)))
  }

  test("retention: a record is kept while its right window is open (ts + d + 1 >= close time)") {
    // d 2: a@10 is kept at close time 13 = 10 + 2 + 1, so a@12 creates a@10's right window [11,13]
    val r = runPlain(2, 0, finalResults = false, batch("a" -> 10), batch("z" -> 13), batch("a" -> 12))
    assert(r.outputs(2) === Seq(Out("a", 11, 13, Some(Vector(3)), 12)))
  }

  test("output: suppressed windows are emitted once, when no record can change them, in end order") {
    // docs/windows.md: d 5, grace 0, (a,10) | (a,7) | (b,20)
    val r = runPlain(5, 0, finalResults = true, batch("a" -> 10), batch("a" -> 7), batch("b" -> 20))
    assert(r.outputs === Seq(
      Nil,
      Nil,
      Seq(Out("a", 5, 10, Some(Vector(1, 2)), 10), Out("a", 8, 13, Some(Vector(1)), 10))
    ))
    assert(r.counters(Emitted) === 2)
    assert(r.counters(Closed) === 2)
  }

  test("output: unsuppressed, each window the batch created or changed once, with its value at batch end") {
    val r = runPlain(5, 0, finalResults = false, batch("a" -> 10), batch("a" -> 7, "a" -> 9))
    // a@7 and a@9 join [5,10]; a@7 creates its right window [8,13] (a@9 joins it), a@9 its right
    // window [10,15]; their left windows [2,7] and [4,9] are closed (end < close time 10)
    assert(r.outputs(1).toSet === Set(
      Out("a", 5, 10, Some(Vector(1, 2, 3)), 10),
      Out("a", 8, 13, Some(Vector(1, 3)), 10),
      Out("a", 10, 15, Some(Vector(1)), 10)
    ))
    assert(r.outputs(1).size === 3)
  }

  test("extremes: a record at Long.MaxValue has no right window; window ends saturate") {
    val r = runPlain(Long.MaxValue, 0, finalResults = false, batch("a" -> Long.MaxValue))
    assert(r.outputs === Seq(Seq(Out("a", 0, Long.MaxValue, Some(Vector(1)), Long.MaxValue))))
  }
}
