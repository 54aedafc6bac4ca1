package org.apache.spark.sql.kstate.processor.join

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.kstate.processor.join.ForeignKeyInstruction._
import org.apache.spark.sql.kstate.processor.join.ForeignKeyJoinDriver.{Left, Right, Upd}
import org.apache.spark.sql.kstate.processor.table.{InMemoryTableState, TableChange, TableSource, TableState}
import org.scalatest.funsuite.AnyFunSuite

/**
 * Unit tests of the foreign-key join's pieces (no Spark): the subscription sender's rules
 * (Kafka 4.3's instructions), stage 1's and stage 2's rules, and the two stages together through
 * [[ForeignKeyJoinDriver]]: no stale result after a foreign key changes, KIP-914 on versioned
 * sides, and what several stage-1 partitions change. Left values are "name>fk" (no '>' or an
 * empty fk: null foreign key), right values plain strings, results "left+right".
 */
class ForeignKeyJoinSuite extends AnyFunSuite {
  import ForeignKeyJoinSuite._

  // ------------------------------------------------------------------ the sender's rules

  private def instructions(
      leftJoin: Boolean,
      oldV: String,
      newV: String,
      isLatest: Boolean = true
  ): Seq[(String, ForeignKeyInstruction)] = {
    val out = ArrayBuffer.empty[ForeignKeySubscription[String, String, String]]
    val c = ForeignKeyJoinMetrics.newCounters()
    new ForeignKeySubscriptionSender[String, String, String](fk, _ == _, leftJoin, c)
      .send(TableChange("k", newV, oldV, 5, isLatest), 1, out += _)
    assert(out.forall(s => s.key == "k" && s.leftValue == newV && s.version == 1 && s.timestamp == 5))
    out.map(s => (s.foreignKey, s.instruction)).toList
  }

  test("sender, inner join: insert, same fk, changed fk, null fk, delete (Kafka 4.3's instructions)") {
    assert(instructions(false, null, "x>f1") === Seq(("f1", PropagateOnlyIfMatch)))
    assert(instructions(false, "x>f1", "y>f1") === Seq(("f1", PropagateOnlyIfMatch)))
    assert(instructions(false, "x>f1", "y>f2") === Seq(("f1", DeleteNoPropagate), ("f2", PropagateNullIfNoMatch)))
    assert(instructions(false, "x>f1", "y") === Seq(("f1", DeleteAndPropagate)))
    assert(instructions(false, "x", "y>f2") === Seq(("f2", PropagateOnlyIfMatch)))
    assert(instructions(false, null, "y") === Nil)
    assert(instructions(false, "x>f1", null) === Seq(("f1", DeleteAndPropagate)))
    assert(instructions(false, "x", null) === Nil)
    assert(instructions(false, null, null) === Nil)
  }

  test("sender, left join: every change but delete-of-absent subscribes its new fk, null included") {
    assert(instructions(true, null, "x>f1") === Seq(("f1", PropagateNullIfNoMatch)))
    assert(instructions(true, "x>f1", "y>f1") === Seq(("f1", PropagateNullIfNoMatch)))
    assert(instructions(true, "x>f1", "y>f2") === Seq(("f1", DeleteNoPropagate), ("f2", PropagateNullIfNoMatch)))
    assert(instructions(true, "x>f1", "y") === Seq(("f1", DeleteNoPropagate), (null, PropagateNullIfNoMatch)))
    assert(instructions(true, "x>f1", null) === Seq(("f1", DeleteNoPropagate), (null, PropagateNullIfNoMatch)))
    assert(instructions(true, "x", null) === Seq((null, PropagateNullIfNoMatch)))
    assert(instructions(true, null, null) === Nil)
  }

  test("sender rule 0: an out-of-order change of a versioned left table sends nothing") {
    assert(instructions(false, "x>f1", "y>f2", isLatest = false) === Nil)
    assert(instructions(true, "x>f1", "y>f2", isLatest = false) === Nil)
  }

  // ------------------------------------------------------------------ stage 1 and stage 2

  test("stage 1: responses by instruction, at max(subscription, right value) timestamps") {
    val right = new TableSource(InMemoryTableState.unversioned[String, String]())
    val p = new ForeignKeySubscriptionProcessor[String, String, String, String](
      right,
      new InMemoryForeignKeySubscriptionState[String, String, String]
    )
    val out = ArrayBuffer.empty[ForeignKeyResponse[String, String, String]]
    def sub(fk: String, k: String, i: ForeignKeyInstruction, v: String, ver: Long, ts: Long) =
      p.processSubscription(ForeignKeySubscription(fk, k, i, v, ver, ts), out += _)
    sub("f1", "k", PropagateOnlyIfMatch, "x>f1", 1, 3)
    assert(out.isEmpty, "no match: no response")
    p.processRight("f1", false, "A", 7, false, out += _)
    assert(out.toList === Seq(ForeignKeyResponse("k", "x>f1", "A", 1, 7)))
    out.clear()
    sub("f1", "j", PropagateNullIfNoMatch, "z>f1", 2, 5)
    assert(out.toList === Seq(ForeignKeyResponse("j", "z>f1", "A", 2, 7)))
    out.clear()
    sub("f2", "i", PropagateNullIfNoMatch, "w>f2", 3, 5)
    assert(out.toList === Seq(ForeignKeyResponse("i", "w>f2", null, 3, 5)))
    out.clear()
    p.processRight("f1", false, null, 9, false, out += _)
    assert(
      out.toList === Seq(ForeignKeyResponse("j", "z>f1", null, 2, 9), ForeignKeyResponse("k", "x>f1", null, 1, 9)),
      "subscribers in key order, the delete's null value"
    )
    out.clear()
    sub("f1", "k", DeleteNoPropagate, "y>f2", 4, 10)
    sub("f1", "j", DeleteAndPropagate, null, 5, 10)
    assert(out.toList === Seq(ForeignKeyResponse("j", null, null, 5, 10)))
    out.clear()
    p.processRight("f1", false, "A3", 11, false, out += _)
    assert(out.isEmpty, "both unsubscribed")
    p.finish()
    assert(p.counters(ForeignKeyJoinMetrics.Subscriptions) === 1)
  }

  test("stage 1 rule 1: a null foreign key is answered only for PropagateNullIfNoMatch") {
    val p = new ForeignKeySubscriptionProcessor[String, String, String, String](
      new TableSource(InMemoryTableState.unversioned[String, String]()),
      new InMemoryForeignKeySubscriptionState
    )
    val out = ArrayBuffer.empty[ForeignKeyResponse[String, String, String]]
    p.processSubscription(ForeignKeySubscription(null, "k", PropagateNullIfNoMatch, "x", 1, 4), out += _)
    p.processSubscription(ForeignKeySubscription(null, "k", DeleteAndPropagate, "x", 2, 4), out += _)
    assert(out.toList === Seq(ForeignKeyResponse("k", "x", null, 1, 4)))
    assert(p.counters(ForeignKeyJoinMetrics.NullForeignKeys) === 1)
  }

  test("stage 2: stale (older version) responses are dropped; tombstones by join kind") {
    def run(leftJoin: Boolean, rs: ForeignKeyResponse[String, String, String]*) = {
      val p = new ForeignKeyResponseProcessor[String, String, String, String](
        leftJoin,
        joiner,
        new TableSource(InMemoryTableState.unversioned[String, String]())
      )
      val out = ArrayBuffer.empty[TableChange[String, String]]
      rs.foreach(p.processResponse(_, out += _))
      (out.toList, p.counters(ForeignKeyJoinMetrics.StaleResponses))
    }
    assert(run(false, ForeignKeyResponse("k", "y>f2", "B", 2, 5), ForeignKeyResponse("k", "x>f1", "A", 1, 6)) ===
      ((Seq(TableChange("k", "y>f2+B", null, 5, true)), 1L)))
    assert(run(false, ForeignKeyResponse("k", "x>f1", "A", 1, 6), ForeignKeyResponse("k", "y>f2", "B", 2, 5)) ===
      ((Seq(TableChange("k", "x>f1+A", null, 6, true), TableChange("k", "y>f2+B", "x>f1+A", 5, true)), 0L)))
    assert(run(false, ForeignKeyResponse("k", "x>f1", null, 1, 6))._1 === Seq(TableChange("k", null, null, 6, true)))
    assert(run(
      true,
      ForeignKeyResponse("k", "x>f1", null, 1, 6)
    )._1 === Seq(TableChange("k", "x>f1+null", null, 6, true)))
    assert(run(true, ForeignKeyResponse("k", null, null, 1, 6))._1 === Seq(TableChange("k", null, null, 6, true)))
  }

  // ------------------------------------------------------------------ both stages

  test("a changed foreign key: the old right value no longer reaches the key") {
    val d = driver(leftJoin = false)
    assert(d.runBatch(Seq(R("f1", "A", 1), R("f2", "B", 1), L("k", "x>f1", 2))) === Seq(res("k", "x>f1+A", null, 2)))
    assert(d.runBatch(Seq(L("k", "y>f2", 3))) === Seq(res("k", "y>f2+B", "x>f1+A", 3)))
    assert(d.runBatch(Seq(R("f1", "A2", 4))) === Nil)
    assert(d.runBatch(Seq(R("f2", "B2", 5))) === Seq(res("k", "y>f2+B2", "y>f2+B", 5)))
  }

  test("no stale result: delete and re-insert without match in one micro-batch (inner join)") {
    val d = driver(leftJoin = false)
    assert(d.runBatch(Seq(R("f1", "A", 1), L("k", "x>f1", 2))) === Seq(res("k", "x>f1+A", null, 2)))
    // Kafka: the delete's tombstone, then nothing for the unmatched insert; the result is gone
    assert(d.runBatch(Seq(L("k", null, 3), L("k", "y>f9", 4))) === Seq(res("k", null, "x>f1+A", 3)))
    assert(d.runBatch(Seq(R("f1", "A2", 5))) === Nil)
  }

  test("left join: a null foreign key and a delete") {
    val d = driver(leftJoin = true)
    assert(d.runBatch(Seq(L("k", "x", 2))) === Seq(res("k", "x+null", null, 2)))
    assert(d.runBatch(Seq(R("f1", "A", 3), L("k", "y>f1", 4))) === Seq(res("k", "y>f1+A", "x+null", 4)))
    assert(d.runBatch(Seq(L("k", null, 5))) === Seq(res("k", null, "y>f1+A", 5)))
  }

  test("KIP-914: out-of-order updates of versioned sides produce no result") {
    val d = driver(leftJoin = false, leftVersioned = true, rightVersioned = true)
    assert(d.runBatch(Seq(R("f1", "A", 5), L("k", "x>f1", 5))) === Seq(res("k", "x>f1+A", null, 5)))
    assert(d.runBatch(Seq(R("f1", "A0", 1), L("k", "y>f1", 2))) === Nil)
    assert(d.counters(ForeignKeyJoinMetrics.OutOfOrderIgnored) === 2)
  }

  test("several stage-1 partitions: a response of the old foreign key after the new one's is dropped as stale") {
    // fa, fb on different stage-1 partitions, fb's first: fb's response is resolved before fa's
    val keys = (0 until 50).map(i => s"f$i")
    val part = (k: String) => Math.floorMod(k.hashCode, 3)
    val (fa, fb) = (for (a <- keys; b <- keys if part(b) < part(a)) yield (a, b)).head
    val d = driver(leftJoin = false, partitions = 3)
    d.runBatch(Seq(R(fa, "A", 1), R(fb, "B", 1), L("k", s"x>$fa", 2)))
    // Kafka, depth-first: k+A2 (fa's update), then y+B (k moved to fb)
    assert(d.runBatch(Seq(R(fa, "A2", 3), L("k", s"y>$fb", 4))) === Seq(res("k", s"y>$fb+B", s"x>$fa+A", 4)))
    assert(d.counters(ForeignKeyJoinMetrics.StaleResponses) === 1)
  }
}

object ForeignKeyJoinSuite {
  val fk: String => String = v => {
    val i = v.indexOf('>')
    if (i < 0 || i == v.length - 1) null else v.substring(i + 1)
  }
  val joiner: (String, String) => String =
    (l, r) => s"${TableTableJoinProcessorSuite.show(l)}+${TableTableJoinProcessorSuite.show(r)}"

  def L(k: String, v: String, ts: Long): Upd[String, String, String] = Left(k, v, ts)
  def R(k: String, v: String, ts: Long): Upd[String, String, String] = Right(k, v, ts)
  def res(k: String, nw: String, old: String, ts: Long): TableChange[String, String] =
    TableChange(k, nw, old, ts, isLatest = true)

  private def state[K](versioned: Boolean): () => TableState[K, String] =
    () =>
      if (versioned) InMemoryTableState.versioned[K, String](100, 100) else InMemoryTableState.unversioned[K, String]()

  def driver(
      leftJoin: Boolean,
      leftVersioned: Boolean = false,
      rightVersioned: Boolean = false,
      partitions: Int = 1
  ): ForeignKeyJoinDriver[String, String, String, String] =
    new ForeignKeyJoinDriver[String, String, String, String](
      leftJoin,
      fk,
      joiner,
      state[String](leftVersioned),
      state[String](rightVersioned),
      partitions
    )
}
