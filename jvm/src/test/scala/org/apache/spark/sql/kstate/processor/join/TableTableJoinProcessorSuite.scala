package org.apache.spark.sql.kstate.processor.join

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.kstate.processor.table.{InMemoryTableState, TableChange, TableSource}
import org.scalatest.funsuite.AnyFunSuite

/**
 * Unit tests of [[TableTableJoinProcessor]] over heap tables (no Spark): KIP-914's A/B join
 * sequences exactly as the KIP text gives them, then one test per numbered rule and per
 * deliberate difference. Keys and values are Strings; results print as "(left,right)".
 */
class TableTableJoinProcessorSuite extends AnyFunSuite {
  import TableTableJoinKind._
  import TableTableJoinProcessorSuite._

  // ------------------------------------------------------------------ KIP-914's sequences

  test("KIP-914 problem example, unversioned: the out-of-order b1 replaces (a4,b2) with (a4,b1) at ts 4") {
    val h = new Harness(Inner, leftVersioned = false, rightVersioned = false)
    h.a("k", "a0", 0); h.a("k", "a4", 4)
    assert(h.b("k", "b2", 2) === Seq(r("(a4,b2)", null, 4)))
    assert(h.b("k", "b1", 1) === Seq(r("(a4,b1)", "(a4,b2)", 4)))
  }

  test("KIP-914 problem example, versioned: B's out-of-order b1 produces no join result") {
    val h = new Harness(Inner, leftVersioned = true, rightVersioned = true)
    assert(h.a("k", "a0", 0) === Nil)
    assert(h.a("k", "a4", 4) === Nil)
    assert(h.b("k", "b2", 2) === Seq(r("(a4,b2)", null, 4)))
    assert(h.b("k", "b1", 1) === Nil)
    assert(h.counters(TableTableJoinMetrics.OutOfOrderIgnored) === 1)
  }

  test("KIP-914 Attempt-1 sequence under the accepted rule: only latest records join") {
    val h = new Harness(Inner, leftVersioned = true, rightVersioned = true)
    assert(h.a("k", "a0", 0) === Nil)
    assert(h.b("k", "b0", 0) === Seq(r("(a0,b0)", null, 0)))
    assert(h.a("k", "a4", 4) === Seq(r("(a4,b0)", "(a0,b0)", 4)))
    assert(h.b("k", "b3", 3) === Seq(r("(a4,b3)", "(a4,b0)", 4)))
    assert(h.b("k", "b2", 2) === Nil, "out of order on B")
    assert(h.a("k", "a1", 1) === Nil, "out of order on A")
  }

  test("KIP-914 accepted rule, first sequence: (a5,b2), (a5,b3), (a5,b4) at 5; a1 emits nothing") {
    val h = new Harness(Inner, leftVersioned = true, rightVersioned = true)
    assert(h.a("k", "a0", 0) === Nil)
    assert(h.a("k", "a5", 5) === Nil)
    assert(h.b("k", "b2", 2) === Seq(r("(a5,b2)", null, 5)))
    assert(h.b("k", "b3", 3) === Seq(r("(a5,b3)", "(a5,b2)", 5)))
    assert(h.b("k", "b4", 4) === Seq(r("(a5,b4)", "(a5,b3)", 5)))
    assert(h.a("k", "a1", 1) === Nil)
    assert(h.all.map(_.timestamp) === Seq(5L, 5L, 5L), "result timestamps never decrease")
  }

  test("KIP-914 accepted rule, second sequence: (a0,b2)@2, (a5,b2)@5, a1 emits nothing") {
    val h = new Harness(Inner, leftVersioned = true, rightVersioned = true)
    assert(h.a("k", "a0", 0) === Nil)
    assert(h.b("k", "b2", 2) === Seq(r("(a0,b2)", null, 2)))
    assert(h.a("k", "a5", 5) === Seq(r("(a5,b2)", "(a0,b2)", 5)))
    assert(h.a("k", "a1", 1) === Nil)
  }

  test("KIP-914 mixed versioning: out-of-order records of the unversioned side still join") {
    val h = new Harness(Inner, leftVersioned = true, rightVersioned = false)
    h.a("k", "a0", 0); h.a("k", "a5", 5)
    assert(h.b("k", "b2", 2) === Seq(r("(a5,b2)", null, 5)))
    assert(h.b("k", "b1", 1) === Seq(r("(a5,b1)", "(a5,b2)", 5)), "unversioned B: b1 is its latest")
    assert(h.a("k", "a1", 1) === Nil, "versioned A: a1 is out of order")
  }

  // ------------------------------------------------------------------------------- rules

  test("rule 1: null keys and null timestamps are dropped, counted, not stored") {
    val h = new Harness(Outer, leftVersioned = false, rightVersioned = true)
    h.p.processLeft(null, true, "x", 1, false, h.out += _)
    h.p.processRight("k", false, "y", 0, true, h.out += _)
    assert(h.out.isEmpty)
    assert(h.counters(TableTableJoinMetrics.NullKeys) === 1)
    assert(h.counters(TableTableJoinMetrics.NullTimestamps) === 1)
    assert(h.right.state.get("k") === null)
  }

  test("rule 2: an update a versioned side does not store (older than stream time - grace) is dropped as late") {
    val h = new Harness(Left, leftVersioned = true, rightVersioned = false, graceMs = 5)
    assert(h.a("k", "a10", 10) === Seq(r("(a10,null)", null, 10)))
    assert(h.a("j", "a4", 4) === Nil, "4 < 10 - 5")
    assert(h.counters(TableTableJoinMetrics.LateDropped) === 1)
    assert(h.left.state.get("j") === null)
    assert(h.a("j", "a5", 5) === Seq(r("(a5,null)", null, 5, key = "j")), "5 = 10 - 5 is within grace")
  }

  test("rule 3: out-of-order updates of a versioned side are stored but produce nothing; unversioned ones join") {
    val v = new Harness(Outer, leftVersioned = true, rightVersioned = true)
    v.a("k", "a5", 5)
    assert(v.a("k", "a3", 3) === Nil)
    assert(v.left.state.getAsOf("k", 3).value === "a3", "stored in history")
    val u = new Harness(Outer, leftVersioned = false, rightVersioned = false)
    u.a("k", "a5", 5)
    assert(u.a("k", "a3", 3) === Seq(r("(a3,null)", "(a5,null)", 3)))
  }

  test("rule 4: the other side's latest is by timestamp when versioned, by processing order when not") {
    val v = new Harness(Inner, leftVersioned = true, rightVersioned = false)
    v.a("k", "a5", 5); v.a("k", "a3", 3)
    assert(v.b("k", "b1", 1) === Seq(r("(a5,b1)", null, 5)))
    val u = new Harness(Inner, leftVersioned = false, rightVersioned = false)
    u.a("k", "a5", 5); u.a("k", "a3", 3)
    assert(u.b("k", "b1", 1) === Seq(r("(a3,b1)", null, 3)))
  }

  test("rule 5: inner join emits a tombstone for deleting an absent key while the other side has a value") {
    val h = new Harness(Inner, leftVersioned = false, rightVersioned = false)
    h.b("k", "b1", 1)
    assert(h.a("k", null, 2) === Seq(r(null, null, 2)))
    assert(h.a("j", null, 2) === Nil, "no value on either side: nothing")
  }

  test("rule 5: left join — the right side emits only while the left has a value; the left side always") {
    val h = new Harness(Left, leftVersioned = false, rightVersioned = false)
    assert(h.b("k", "b1", 1) === Nil)
    assert(h.a("k", "a2", 2) === Seq(r("(a2,b1)", null, 2)))
    assert(h.b("k", null, 3) === Seq(r("(a2,null)", "(a2,b1)", 3)), "a right delete keeps the left row")
    assert(h.a("k", null, 4) === Seq(r(null, "(a2,null)", 4)))
    assert(h.a("k", null, 5) === Nil, "delete of a deleted key with no right value: nothing")
    assert(h.b("k", "b6", 6) === Nil)
  }

  test("rule 5: outer join emits on either side alone and tombstones when both are gone") {
    val h = new Harness(Outer, leftVersioned = false, rightVersioned = false)
    assert(h.b("k", "b1", 1) === Seq(r("(null,b1)", null, 1)))
    assert(h.a("k", "a2", 2) === Seq(r("(a2,b1)", "(null,b1)", 2)))
    assert(h.b("k", null, 3) === Seq(r("(a2,null)", "(a2,b1)", 3)))
    assert(h.a("k", null, 4) === Seq(r(null, "(a2,null)", 4)))
    assert(h.b("k", null, 5) === Nil)
  }

  test("rule 6: the old value joins this side's previous latest with the other side's value") {
    val h = new Harness(Inner, leftVersioned = false, rightVersioned = false)
    h.b("k", "b1", 1)
    assert(h.a("k", "a1", 1) === Seq(r("(a1,b1)", null, 1)))
    assert(h.a("k", "a2", 2) === Seq(r("(a2,b1)", "(a1,b1)", 2)))
    assert(h.b("k", "b3", 3) === Seq(r("(a2,b3)", "(a2,b1)", 3)))
  }

  test("rule 7: result timestamp is the max of both, the update's own without another value") {
    val h = new Harness(Left, leftVersioned = false, rightVersioned = false)
    assert(h.a("k", "a9", 9) === Seq(r("(a9,null)", null, 9)))
    assert(h.b("k", "b3", 3) === Seq(r("(a9,b3)", "(a9,null)", 9)))
    assert(h.a("k", "a1", 1) === Seq(r("(a1,b3)", "(a9,b3)", 3)))
  }

  test("difference D2: a negative timestamp with no other value stays itself (Kafka: max(ts, -1))") {
    val h = new Harness(Left, leftVersioned = false, rightVersioned = false)
    assert(h.a("k", "a", -5) === Seq(r("(a,null)", null, -5)))
  }

  test("metrics: join results and no-match updates are counted") {
    val h = new Harness(Inner, leftVersioned = false, rightVersioned = false)
    h.a("k", "a", 1); h.b("k", "b", 2); h.b("j", "b", 2)
    assert(h.counters(TableTableJoinMetrics.JoinResults) === 1)
    assert(h.counters(TableTableJoinMetrics.NoMatch) === 2)
    assert(h.counters.reported.keySet === Set(
      "joinResults",
      "outOfOrderRecordsIgnored",
      "lateRecordsDropped",
      "nullKeysDropped",
      "nullTimestampsDropped",
      "leftTableVersions",
      "rightTableVersions"
    ))
  }
}

object TableTableJoinProcessorSuite {
  def show(v: String): String = if (v == null) "null" else v
  val joiner: (String, String) => String = (l, r) => s"(${show(l)},${show(r)})"

  /** A result as the tests write it: key "k" unless given. */
  def r(newValue: String, oldValue: String, ts: Long, key: String = "k"): TableChange[String, String] =
    TableChange(key, newValue, oldValue, ts, isLatest = true)

  final class Harness(
      kind: TableTableJoinKind,
      leftVersioned: Boolean,
      rightVersioned: Boolean,
      retentionMs: Long = 100,
      graceMs: Long = 100
  ) {
    private def state(versioned: Boolean) =
      if (versioned) InMemoryTableState.versioned[String, String](retentionMs, graceMs)
      else InMemoryTableState.unversioned[String, String]()
    val left = new TableSource(state(leftVersioned))
    val right = new TableSource(state(rightVersioned))
    val p = new TableTableJoinProcessor[String, String, String, String](kind, left, right, joiner)
    def counters = p.counters
    val out = ArrayBuffer.empty[TableChange[String, String]]
    val all = ArrayBuffer.empty[TableChange[String, String]]
    private def collect(f: => Unit): Seq[TableChange[String, String]] = {
      out.clear(); f; all ++= out; out.toList
    }
    def a(k: String, v: String, ts: Long): Seq[TableChange[String, String]] =
      collect(p.processLeft(k, false, v, ts, false, out += _))
    def b(k: String, v: String, ts: Long): Seq[TableChange[String, String]] =
      collect(p.processRight(k, false, v, ts, false, out += _))
  }
}
