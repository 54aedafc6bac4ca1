package org.apache.spark.sql.kstate.processor.table

import org.scalatest.funsuite.AnyFunSuite

/** [[TableFilterProcessor]]'s rules, one test each, and KIP-914's filter example both ways. */
class TableFilterProcessorSuite extends AnyFunSuite {
  import TableFixtures._
  private val even: (String, java.lang.Long) => Boolean = (_, v) => v % 2 == 0

  test("rule 1: a rejected new value becomes a tombstone; a kept one is passed on; tombstones stay tombstones") {
    val f = new TableFilterProcessor(even, versioned = false)
    assert(f.process(C("k", L(2), null, 1)) == C("k", L(2), null, 1))
    assert(f.process(C("k", L(3), L(2), 2)) == C("k", null, L(2), 2))
    assert(f.process(C("k", Tomb, L(4), 3)) == C("k", null, L(4), 3))
  }

  test("rule 1: the predicate is never called on null, and sees the key") {
    var calls = List.empty[(String, java.lang.Long)]
    val f =
      new TableFilterProcessor[String, java.lang.Long]((k, v) => { calls ::= ((k, v)); k == "k" }, versioned = true)
    f.process(C("k", Tomb, Tomb, 1))
    assert(calls.isEmpty)
    assert(f.process(C("j", L(1), Tomb, 2)) == C("j", null, null, 2))
    assert(calls == List(("j", L(1))))
  }

  test("rule 2: the old value is filtered too; without sendOldValues it is null and the predicate is called once") {
    val f = new TableFilterProcessor(even, versioned = false)
    assert(f.process(C("k", L(2), L(3), 1)) == C("k", L(2), null, 1))
    assert(f.process(C("k", L(4), L(2), 2)) == C("k", L(4), L(2), 2))
    var calls = 0
    val g = new TableFilterProcessor[String, java.lang.Long](
      (_, v) => { calls += 1; v % 2 == 0 },
      versioned = false,
      sendOldValues = false
    )
    assert(g.process(C("k", L(4), L(2), 2)) == C("k", L(4), null, 2))
    assert(calls == 1)
  }

  test("rule 3: unversioned, a change whose filtered new and old values are both null is dropped and counted") {
    val f = new TableFilterProcessor(even, versioned = false)
    assert(f.process(C("k", L(3), L(5), 1)) == null) // both rejected
    assert(f.process(C("k", Tomb, L(5), 2)) == null) // a tombstone after a rejected value
    assert(f.process(C("k", Tomb, Tomb, 3)) == null) // a tombstone after a tombstone
    assert(f.process(C("k", L(3), Tomb, 4)) == null)
    assert(f.counters(TableMetrics.DuplicateTombstonesDropped) == 4)
  }

  test("rule 3: versioned, such a change is forwarded (KIP-914)") {
    val f = new TableFilterProcessor(even, versioned = true)
    assert(f.process(C("k", L(3), L(5), 1)) == C("k", null, null, 1))
    assert(f.process(C("k", Tomb, Tomb, 3, latest = false)) == C("k", null, null, 3, latest = false))
    assert(f.counters(TableMetrics.DuplicateTombstonesDropped) == 0)
  }

  test("rule 3: unversioned without sendOldValues (Kafka's unmaterialized source) drops nothing") {
    val f = new TableFilterProcessor(even, versioned = false, sendOldValues = false)
    assert(f.process(C("k", Tomb, Tomb, 3)) == C("k", null, null, 3))
    assert(f.process(C("k", L(3), L(5), 4)) == C("k", null, null, 4))
  }

  test("rule 4: key, timestamp and isLatest are passed on unchanged") {
    val f = new TableFilterProcessor(even, versioned = true)
    assert(f.process(C("x", L(8), L(9), -7, latest = false)) == C("x", L(8), null, -7, latest = false))
  }

  test("filterNot(p) is filter(!p); tombstones stay tombstones") {
    val f = TableFilterProcessor.filterNot(even, versioned = false)
    assert(f.process(C("k", L(3), L(2), 1)) == C("k", L(3), null, 1))
    assert(f.process(C("k", Tomb, L(3), 2)) == C("k", null, L(3), 2))
    assert(f.process(C("k", L(2), Tomb, 3)) == null)
  }

  // KIP-914, "Table Filter Processors Applied to Versioned Tables Do Not Drop Duplicate
  // Tombstones": filter results v1@1, null@2, null@4, v2@3 for one key. As source updates:
  // the nulls are either tombstones or values the filter rejects.
  private val keepV: (String, String) => Boolean = (_, v) => v.startsWith("v")
  private def kipExample(versioned: Boolean, updates: Seq[(String, Long)]): Seq[(String, Long)] = {
    val state = if (versioned) InMemoryTableState.versioned[String, String](100, 100)
    else InMemoryTableState.unversioned[String, String]()
    val source = new TableSource(state)
    val filter = new TableFilterProcessor(keepV, versioned)
    updates.flatMap { case (v, ts) => Option(filter.process(source.update("k", v, ts))) }
      .map(c => (c.newValue, c.timestamp))
  }
  private val withTombstones = Seq("v1" -> 1L, (null: String) -> 2L, (null: String) -> 4L, "v2" -> 3L)
  private val withRejected = Seq("v1" -> 1L, "x" -> 2L, "y" -> 4L, "v2" -> 3L)

  test("KIP-914 filter example, unversioned: (null, ts=4) is not forwarded") {
    val expected = Seq("v1" -> 1L, (null: String) -> 2L, "v2" -> 3L)
    assert(kipExample(versioned = false, withTombstones) == expected)
    assert(kipExample(versioned = false, withRejected) == expected)
  }

  test("KIP-914 filter example, versioned: every result is forwarded and the downstream latest is null@4") {
    val expected = Seq("v1" -> 1L, (null: String) -> 2L, (null: String) -> 4L, "v2" -> 3L)
    assert(kipExample(versioned = true, withTombstones) == expected)
    assert(kipExample(versioned = true, withRejected) == expected)
    // the downstream table, interpreted as versioned, has the right latest value
    val downstream = InMemoryTableState.versioned[String, String](100, 100)
    expected.foreach { case (v, ts) => downstream.put("k", v, ts) }
    assert(downstream.get("k") == null)
    assert(downstream.getAsOf("k", 3) == TableState.Versioned("v2", 3))
  }

  test(
    "filter difference D1: a materialized table's filter drops the tombstones Kafka's unmaterialized source forwards"
  ) {
    def run(sendOldValues: Boolean) = {
      val source = new TableSource(InMemoryTableState.unversioned[String, java.lang.Long]())
      val f = new TableFilterProcessor[String, java.lang.Long]((_, v) => v > 0, versioned = false, sendOldValues)
      Seq(L(-1) -> 1L, L(-2) -> 2L).flatMap { case (v, ts) => Option(f.process(source.update("k", v, ts))) }
        .map(c => (c.newValue, c.timestamp))
    }
    assert(run(sendOldValues = true).isEmpty) // kstate
    assert(run(sendOldValues = false) == Seq((null, 1L), (null, 2L))) // Kafka's builder.table(topic)
  }
}
