package org.apache.spark.sql.kstate.processor.window

import org.scalatest.funsuite.AnyFunSuite

/**
 * [[SessionAggregateProcessor]]'s numbered rules, one test each, with docs/windows.md's examples
 * (issue 13's, checked against Kafka 4.3.1 in `KafkaStreamsDifferentialSuite`). Each micro-batch
 * is a new processor over one heap store, as Spark runs them.
 */
class SessionAggregateProcessorSuite extends AnyFunSuite {
  import SessionMetrics._
  import SpanFixtures._

  private type SRun = Run[InMemorySessionStore[String, Vector[Int]]]

  private def run(gap: Long, grace: Long, finalResults: Boolean, batches: Seq[Batch]): SRun = {
    val store = new InMemorySessionStore[String, Vector[Int]](identity, identity)
    val counters = SessionMetrics.newCounters()
    runAll(batches, store, counters)(out =>
      new SessionAggregateProcessor[String, Int, Vector[Int]](
        gap,
        grace,
        finalResults,
        store,
        IdsAggregator,
        out,
        identity,
        counters
      )
    )
  }

  private def runPlain(gap: Long, grace: Long, finalResults: Boolean, batches: Seq[(String, Long)]*): SRun =
    run(gap, grace, finalResults, numbered(batches))

  test("rule 1: a null timestamp, then a null key, is dropped and counted; stream time does not move") {
    val r = run(
      2,
      0,
      finalResults = false,
      Seq(Batch(
        None,
        Seq(
          Rec(1, Some("a"), None),
          Rec(2, None, Some(50L)),
          Rec(3, None, None),
          Rec(4, Some("a"), Some(5L))
        )
      ))
    )
    assert(r.counters(NullTimestamps) === 2) // a null timestamp is checked first
    assert(r.counters(NullKeys) === 1)
    assert(r.counters(Records) === 1)
    assert(r.streamTime === 5L) // not 50: the null-key record did not advance it
    assert(r.outputs === Seq(Seq(Out("a", 5, 5, Some(Vector(4)), 5))))
  }

  test("rule 2: lateness is stream time - ts before the record, counted also for dropped records") {
    val r = runPlain(1, 0, finalResults = false, batch("a" -> 10, "b" -> 7, "a" -> 4, "c" -> 12))
    assert(r.counters(LatenessTotal) === 3 + 6)
    assert(r.counters(LatenessMax) === 6)
    assert(r.counters(Records) === 4)
    assert(r.counters(LateDropped) === 2) // b@7 and a@4: ts < close time 9
  }

  test("rule 3: close time = stream time - grace - gap; a session closes once end <= close time") {
    // gap 2, grace 3: at stream time 10 close time is 5: a[5,5] closes, b[6,6] stays open
    val r = runPlain(2, 3, finalResults = true, batch("a" -> 5, "b" -> 6, "c" -> 10))
    assert(r.outputs === Seq(Seq(Out("a", 5, 5, Some(Vector(1)), 5))))
    assert(r.counters(Closed) === 1)
    assert(r.store.records === 2)
    val p = new SessionAggregateProcessor[String, Int, Vector[Int]](
      2,
      3,
      true,
      r.store,
      IdsAggregator,
      new Collect,
      identity
    )
    assert(p.closeTime === 5L)
  }

  test("rule 4: open sessions within the gap merge with the record, merged in start order, then the record") {
    // gap 2: a[1,1] and a[5,5] are 4 apart; a@3 is within the gap of both and bridges them
    val r = runPlain(2, 10, finalResults = false, batch("a" -> 5, "a" -> 1), batch("a" -> 3))
    assert(r.outputs(1).toSet === Set(
      Out("a", 1, 1, None, 1),
      Out("a", 5, 5, None, 5),
      Out("a", 1, 5, Some(Vector(2, 1, 3)), 5)
    ))
    assert(r.counters(Merged) === 1)
    assert(r.counters(Updates) === 3)
  }

  test("rule 4: a session open before the record merges even if the record's own advance closes it") {
    // gap 2, grace 0: a[4,4]; a@6 raises stream time to 6 (close time 4) but [4,4] was open before
    val r = runPlain(2, 0, finalResults = true, batch("a" -> 4, "a" -> 6), batch("z" -> 20))
    assert(r.outputs === Seq(Nil, Seq(Out("a", 4, 6, Some(Vector(1, 2)), 6))))
  }

  test(
    "rule 5: with no open session to merge, ts < close time is late; a closed session within the gap does not merge"
  ) {
    // issue 13, gap 2, grace 0, suppressed: (a,4),(b,6) | (a,5) | (c,20)
    val r = runPlain(2, 0, finalResults = true, batch("a" -> 4, "b" -> 6), batch("a" -> 5), batch("c" -> 20))
    assert(r.outputs === Seq(
      Seq(Out("a", 4, 4, Some(Vector(1)), 4)),
      Nil,
      Seq(Out("a", 5, 5, Some(Vector(3)), 5), Out("b", 6, 6, Some(Vector(2)), 6))
    ))
    // (c,5),(x,7) | (c,4): c[5,5] is final at close time 5, c@4 is dropped as late
    val late = runPlain(2, 0, finalResults = true, batch("c" -> 5, "x" -> 7), batch("c" -> 4))
    assert(late.outputs === Seq(Seq(Out("c", 5, 5, Some(Vector(1)), 5)), Nil))
    assert(late.counters(LateDropped) === 1)
  }

  test("rule 5: a record at ts = close time starts a session that is closed at once") {
    val r = runPlain(2, 0, finalResults = true, batch("z" -> 10, "a" -> 8))
    assert(r.outputs === Seq(Seq(Out("a", 8, 8, Some(Vector(2)), 8))))
    assert(r.counters(LateDropped) === 0)
  }

  test(
    "output: unsuppressed, changed sessions once per batch (also when closing), tombstones for stored ones merged away"
  ) {
    val r = runPlain(
      2,
      10,
      finalResults = false,
      batch("a" -> 1, "a" -> 2, "a" -> 6), // [1,2] and [6,6]
      batch("a" -> 4, "a" -> 8, "b" -> 5, "b" -> 7)
    ) // a@4 bridges; b[5,5] created and merged in one batch
    assert(r.outputs(0).toSet === Set(Out("a", 1, 2, Some(Vector(1, 2)), 2), Out("a", 6, 6, Some(Vector(3)), 6)))
    assert(r.outputs(1).toSet === Set(
      Out("a", 1, 2, None, 2),
      Out("a", 6, 6, None, 6),
      Out("a", 1, 8, Some(Vector(1, 2, 3, 4, 5)), 8),
      Out("b", 5, 7, Some(Vector(6, 7)), 7)
    ))
    assert(r.outputs(1).indexWhere(_.ids.isEmpty) < r.outputs(1).indexWhere(_.ids.isDefined), "tombstones first")
  }

  test("output: suppressed, each session once when it closes, in end order, no tombstones") {
    // gap 1, grace 5: a[1,3] (a@2 bridges [1,1] and [3,3]) and d[8,8] stay open at close time 2;
    // at stream time 30 d[8,9] (touched in the batch) and a[1,3] (not touched) close: in end order
    val r = runPlain(
      1,
      5,
      finalResults = true,
      batch("a" -> 3, "a" -> 1, "a" -> 2, "d" -> 8),
      batch("d" -> 9, "c" -> 30)
    )
    assert(r.outputs === Seq(Nil, Seq(Out("a", 1, 3, Some(Vector(2, 1, 3)), 3), Out("d", 8, 9, Some(Vector(4, 5)), 9))))
    assert(r.counters(Emitted) === 2)
    assert(r.counters(Merged) === 1)
  }

  test("extremes: gap and grace of Long.MaxValue and timestamps at the ends of the range do not overflow") {
    // gap Long.MaxValue: a@0 and a@Long.MaxValue are within it (Long.MaxValue - gap = 0); then
    // close time = Long.MaxValue - grace - gap = Long.MinValue + 1 (exact), so b@Long.MinValue + 1
    // is on time and its session closes at once
    val r = runPlain(
      Long.MaxValue,
      Long.MaxValue,
      finalResults = false,
      batch("a" -> 0L, "a" -> Long.MaxValue, "b" -> (Long.MinValue + 1))
    )
    assert(r.outputs.map(_.toSet) === Seq(Set(
      Out("a", 0, Long.MaxValue, Some(Vector(1, 2)), Long.MaxValue),
      Out("b", Long.MinValue + 1, Long.MinValue + 1, Some(Vector(3)), Long.MinValue + 1)
    )))
    assert(r.counters(LateDropped) === 0 && r.counters(Closed) === 1)
  }
}
