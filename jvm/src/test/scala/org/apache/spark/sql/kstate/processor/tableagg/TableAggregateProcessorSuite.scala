package org.apache.spark.sql.kstate.processor.tableagg

import scala.collection.mutable.ArrayBuffer

import io.kstate.oracle.{Ev, TableAggCase}
import io.kstate.oracle.KafkaTableAggregateOracle.AggOut
import org.apache.spark.sql.kstate.processor.table.{InMemoryTableState, TableChange, TableState}
import org.scalatest.funsuite.AnyFunSuite

/**
 * Unit tests of [[TableAggregateProcessor]] (stage 2, Kafka's `KTableAggregate` /
 * `KTableReduce`), one per rule, and KIP-914's aggregate example through both stages
 * ([[TableAggregationDriver]]), versioned and not.
 */
class TableAggregateProcessorSuite extends AnyFunSuite {
  type L = java.lang.Long
  private type Res = (String, L, L, Long) // group, new aggregate, old aggregate, timestamp

  private final class Harness[A](
      aggregator: TableAggregator[String, L, A],
      val state: TableState[String, A] = InMemoryTableState.unversioned[String, A]()
  ) {
    val p = new TableAggregateProcessor(aggregator, state)
    def apply(changes: GroupChange[String, L]*): Seq[TableChange[String, A]] = {
      val out = ArrayBuffer.empty[TableChange[String, A]]
      changes.foreach(p.process(_, out += _))
      out.toSeq
    }
  }

  private def add(g: String, v: L, ts: Long) = GroupChange[String, L](g, v, null, ts)
  private def sub(g: String, v: L, ts: Long) = GroupChange[String, L](g, null, v, ts)
  private def both(g: String, newV: L, oldV: L, ts: Long) = GroupChange[String, L](g, newV, oldV, ts)
  private def res(out: Seq[TableChange[String, L]]): Seq[Res] =
    out.map(c => (c.key, c.newValue, c.oldValue, c.timestamp))

  private val sum = TableAggregator.sum[String]
  private val deletingReduce = TableAggregator.reduce[String, L](_ + _, (a, v) => if (a - v == 0L) null else a - v)

  test("rule 1: a subtract applies to the group's aggregate") {
    val h = new Harness(sum)
    assert(res(h(add("g", 5L, 1L), add("g", 3L, 2L), sub("g", 5L, 3L))) ===
      Seq(("g", 5L, null, 1L), ("g", 8L, 5L, 2L), ("g", 3L, 8L, 3L)))
  }

  test("rule 1 + 5: a subtract from a group without aggregate is skipped and emits a tombstone of nothing (Kafka)") {
    val h = new Harness(sum)
    assert(res(h(sub("g", 5L, 3L))) === Seq(("g", null, null, 3L)))
    assert(h.p.counters(TableAggregateMetrics.SubtractsSkipped) === 1)
    assert(h.state.get("g") === null)
  }

  test("rule 2: after a subtract deleted the aggregate, add restarts from the initializer (aggregate)") {
    val chain = TableAggregator.aggregate[String, L, L](
      () => 100L,
      (_, v, a) => a + v,
      (_, v, a) => if (a - v == 100L) null else a - v
    )
    val h = new Harness(chain)
    // g: 100+5=105; then the row moves within g from 5 to 7: 105-5=100 -> null (deleted), add 7 to a fresh 100
    assert(res(h(add("g", 5L, 1L), both("g", 7L, 5L, 2L))) === Seq(("g", 105L, null, 1L), ("g", 107L, 105L, 2L)))
  }

  test("rule 2: after a subtract deleted the aggregate, add restarts from the value (reduce)") {
    val h = new Harness(deletingReduce)
    assert(res(h(add("g", 5L, 1L), both("g", 7L, 5L, 2L))) === Seq(("g", 5L, null, 1L), ("g", 7L, 5L, 2L)))
  }

  test("rule 3: a change carrying both values emits one result, the previous aggregate as old value") {
    val h = new Harness(sum)
    assert(res(h(add("g", 5L, 1L), add("g", 1L, 1L), both("g", 9L, 5L, 2L))) ===
      Seq(("g", 5L, null, 1L), ("g", 6L, 5L, 1L), ("g", 10L, 6L, 2L)))
    assert(h.p.counters(TableAggregateMetrics.Updates) === 3)
  }

  test("rule 4: the result timestamp is max(change, previous aggregate) while the group exists") {
    val h = new Harness(sum)
    assert(res(h(add("g", 1L, 10L), add("g", 1L, 4L), sub("g", 1L, 2L), both("g", 3L, 1L, 12L))).map(_._4) ===
      Seq(10L, 10L, 10L, 12L))
  }

  test("rule 4: a deleted group starts again from its next change's timestamp") {
    val h = new Harness(deletingReduce)
    assert(res(h(add("g", 5L, 10L), sub("g", 5L, 11L), add("g", 2L, 3L))) ===
      Seq(("g", 5L, null, 10L), ("g", null, 5L, 11L), ("g", 2L, null, 3L)))
  }

  test("rule 5: a count that reaches 0 is emitted as 0 and kept; a null from the subtractor deletes the group") {
    val c = new Harness(TableAggregator.count[String, L])
    assert(res(c(add("g", 5L, 1L), sub("g", 5L, 2L))) === Seq(("g", 1L, null, 1L), ("g", 0L, 1L, 2L)))
    assert(c.state.get("g") === TableState.Versioned(0L: L, 2L))
    assert(c.p.counters(TableAggregateMetrics.Deleted) === 0)
    val r = new Harness(deletingReduce)
    assert(res(r(add("g", 5L, 1L), sub("g", 5L, 2L))) === Seq(("g", 5L, null, 1L), ("g", null, 5L, 2L)))
    assert(r.state.get("g") === null)
    assert(r.p.counters(TableAggregateMetrics.Deleted) === 1)
  }

  test("rule 5: the sum of an empty group is 0, kept (not deleted)") {
    val h = new Harness(sum)
    assert(res(h(add("g", 5L, 1L), sub("g", 5L, 2L))) === Seq(("g", 5L, null, 1L), ("g", 0L, 5L, 2L)))
  }

  test(
    "rule 6: a versioned result store that rejects the aggregate: nothing emitted, counted; isLatest from the store"
  ) {
    val h = new Harness(sum, InMemoryTableState.versioned[String, L](5L, 5L))
    // g@20 then h@30 moves stream time to 30; a new group k at 3 < 30-5 is not stored
    val out = h(add("g", 1L, 20L), add("h", 1L, 30L), add("k", 1L, 3L), add("g", 1L, 26L))
    assert(out.map(c => (c.key, c.timestamp, c.isLatest)) === Seq(("g", 20L, true), ("h", 30L, true), ("g", 26L, true)))
    assert(h.p.counters(TableAggregateMetrics.NotPut) === 1)
    // a re-created group at an older time than its tombstone goes into history: isLatest false
    val d = new Harness(deletingReduce, InMemoryTableState.versioned[String, L](100L, 100L))
    val o2 = d(add("g", 5L, 10L), sub("g", 5L, 12L), add("g", 2L, 11L))
    assert(o2.map(c => (c.newValue, c.timestamp, c.isLatest)) === Seq(
      (5L, 10L, true),
      (null, 12L, true),
      (2L, 11L, false)
    ))
  }

  // ---- KIP-914's example through both stages ------------------------------------------------

  /** KIP-914: (v1, ts=1), (v2, ts=10), (v3, ts=5), same key, one micro-batch per record. */
  private def kip(c: TableAggCase, versioned: Boolean, v1: Long, v2: Long, v3: Long): Seq[Seq[AggOut]] = {
    val d = TableAggFixtures.driver(c, if (versioned) Some(100L) else None)
    Seq((v1, 1L), (v2, 10L), (v3, 5L)).map { case (v, ts) =>
      d.runBatch(Seq(TableAggFixtures.update(Ev("k", ts, Some(v))))).map(TableAggFixtures.out)
    }
  }
  private def o(g: String, v: Long, ts: Long) = AggOut(g, Some(v), ts)

  test("KIP-914 example, count, re-grouped rows: unversioned removes v2 and adds v3") {
    // groups: 0 -> g0, 1 -> g1, 3 -> g0 (v % 3)
    assert(kip(TableAggCase.Count, versioned = false, 0L, 1L, 3L) === Seq(
      Seq(o("g0", 1, 1)),
      Seq(o("g0", 0, 10), o("g1", 1, 10)),
      Seq(o("g1", 0, 10), o("g0", 1, 10))
    ))
  }

  test("KIP-914 example, count, re-grouped rows: versioned ignores v3 (older than v2)") {
    assert(kip(TableAggCase.Count, versioned = true, 0L, 1L, 3L) === Seq(
      Seq(o("g0", 1, 1)),
      Seq(o("g0", 0, 10), o("g1", 1, 10)),
      Nil
    ))
  }

  test("KIP-914 example, sum, one group: unversioned ends with v3, versioned with v2") {
    // 0, 3, 6 are all in g0
    assert(kip(TableAggCase.Sum, versioned = false, 3L, 6L, 0L) === Seq(
      Seq(o("g0", 3, 1)),
      Seq(o("g0", 6, 10)),
      Seq(o("g0", 0, 10))
    ))
    assert(kip(TableAggCase.Sum, versioned = true, 3L, 6L, 0L) === Seq(Seq(o("g0", 3, 1)), Seq(o("g0", 6, 10)), Nil))
  }

  test("driver: null keys, null timestamps and records past a versioned table's grace are dropped and counted") {
    val d = TableAggFixtures.driver(TableAggCase.Count, Some(5L))
    val out = d.runBatch(Seq(
      TableAggFixtures.update(Ev(null, 1L, Some(0L))),
      TableAggFixtures.update(Ev("k", 1L, Some(0L)), timestampIsNull = true),
      TableAggFixtures.update(Ev("k", 20L, Some(0L))),
      TableAggFixtures.update(Ev("j", 10L, Some(0L)))
    )) // 10 < 20 - 5: not stored
    assert(out.map(TableAggFixtures.out) === Seq(o("g0", 1, 20)))
    assert(d.regroupCounters(TableRegroupMetrics.NullKeys) === 1)
    assert(d.regroupCounters(TableRegroupMetrics.NullTimestamps) === 1)
    assert(d.regroupCounters(TableRegroupMetrics.NotPut) === 1)
  }

  test(
    "driver: each group partition merges the table partitions' changes in Kafka task order (running max time, then partition)"
  ) {
    // keys "a" and "b" in different table partitions, both moving rows into group g0
    val p = TableAggFixtures.partitionOf(2) _
    assert(p("a") != p("b"))
    val (first, second) = if (p("a") == 0) ("a", "b") else ("b", "a")
    val d = TableAggFixtures.driver(TableAggCase.Chain, None, sourcePartitions = 2)
    // Chain's subtract may delete the aggregate: the add then starts from the initializer
    def change(agg: java.lang.Long, sub: Long, add: Long): Long = {
      val rest = if (agg == null) null else TableAggCase.chainSubtract("g0", sub, agg)
      TableAggCase.chainAdd("g0", add, if (rest == null) TableAggCase.chainInit else rest)
    }
    // by time across partitions: partition 1's change at 1 before partition 0's at 2
    val out = d.runBatch(Seq(
      Ev(second, 1L, Some(0L)),
      Ev(first, 2L, Some(3L)),
      Ev(second, 3L, Some(6L))
    ).map(TableAggFixtures.update(_)))
    val s0 = TableAggCase.chainAdd("g0", 0L, TableAggCase.chainInit).longValue
    val f3 = TableAggCase.chainAdd("g0", 3L, s0).longValue
    val s6 = change(f3, 0L, 6L)
    assert(out.map(TableAggFixtures.out) === Seq(o("g0", s0, 1), o("g0", f3, 2), o("g0", s6, 3)))
    // a change older than its partition's running maximum keeps its place after it; on equal
    // running maxima partition 0 goes first
    val out2 = d.runBatch(Seq(Ev(second, 9L, Some(3L)), Ev(second, 4L, Some(0L)), Ev(first, 9L, Some(6L)))
      .map(TableAggFixtures.update(_)))
    val f6 = change(s6, 3L, 6L)
    val s3 = change(f6, 6L, 3L)
    val s0b = change(s3, 3L, 0L)
    assert(out2.map(TableAggFixtures.out) === Seq(o("g0", f6, 9), o("g0", s3, 9), o("g0", s0b, 9)))
  }
}
