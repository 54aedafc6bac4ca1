package org.apache.spark.sql.kstate.processor.join

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.kstate.processor.MicroBatches
import org.apache.spark.sql.kstate.processor.table.{InMemoryTableState, TableChange, TableSource}
import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

/**
 * [[TableTableJoinProcessor]] against [[TableTableJoinModel]] on random updates of both sides
 * (keys from a small space and null, values and tombstones, null timestamps, out-of-order and
 * late records), cut into random micro-batches: a new processor per batch over the same two
 * tables, as an exec creates one per task. Every kind, every versioning of the two sides;
 * every emitted result (key, new, old, timestamp) and every counter must match.
 */
class TableTableJoinPropertySuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  import TableTableJoinModel._

  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 300)

  /** No shrinking: a shrunk input leaves the generators' domain (keys, values, timestamps). */
  private implicit def noShrink[A]: org.scalacheck.Shrink[A] = org.scalacheck.Shrink.shrinkAny

  private val joiner = TableTableJoinProcessorSuite.joiner

  private val upd: Gen[Upd] = for {
    left <- Gen.oneOf(true, false)
    k <- Gen.frequency(8 -> Gen.oneOf("a", "b", "c"), 1 -> Gen.const(null: String))
    v <- Gen.frequency(5 -> Gen.oneOf("x", "y", "z", "w"), 2 -> Gen.const(null: String))
    // negative timestamps too: a version may end at -1 ("latest" is Long.MinValue + 1)
    ts <- Gen.frequency(12 -> Gen.choose(-10L, 30L).map(Some(_)), 1 -> Gen.const(None))
  } yield Upd(left, k, v, ts)

  private def check(
      kind: TableTableJoinKind,
      lv: Boolean,
      rv: Boolean,
      graceMs: Long,
      batches: Seq[MicroBatches.Batch[Upd]]
  ): Unit = {
    def state(v: Boolean) =
      if (v) InMemoryTableState.versioned[String, String](graceMs + 3, graceMs)
      else InMemoryTableState.unversioned[String, String]()
    val left = new TableSource(state(lv))
    val right = new TableSource(state(rv))
    val model = new Join(kind, lv, rv, graceMs, joiner)
    val counters = TableTableJoinMetrics.newCounters()
    // the Spark path: each table materialized upstream, its changes joined over unversioned mirrors
    val (upLeft, upRight) = (new TableSource(state(lv)), new TableSource(state(rv)))
    val (mirrorLeft, mirrorRight) = (new TableSource(state(false)), new TableSource(state(false)))
    var results = 0L
    batches.zipWithIndex.foreach { case (b, bi) =>
      val p = new TableTableJoinProcessor[String, String, String, String](kind, left, right, joiner, counters)
      val m = new TableTableJoinProcessor[String, String, String, String](kind, mirrorLeft, mirrorRight, joiner)
      b.recs.zipWithIndex.foreach { case (u, ri) =>
        val got = ArrayBuffer.empty[TableChange[String, String]]
        if (u.left) p.processLeft(u.key, u.key == null, u.value, u.ts.getOrElse(0L), u.ts.isEmpty, got += _)
        else p.processRight(u.key, u.key == null, u.value, u.ts.getOrElse(0L), u.ts.isEmpty, got += _)
        val viaChanges = ArrayBuffer.empty[TableChange[String, String]]
        if (u.key != null && u.ts.isDefined) {
          val up = (if (u.left) upLeft else upRight).update(u.key, u.value, u.ts.get)
          if (up != null) {
            if (u.left) m.joinLeft(up, viaChanges += _) else m.joinRight(up, viaChanges += _)
          }
        }
        val expected = model.update(u).toList
        results += expected.length
        def of(cs: ArrayBuffer[TableChange[String, String]]) =
          cs.toList.map(c => Res(c.key, Option(c.newValue), Option(c.oldValue), c.timestamp))
        assert(of(got) === expected, s"batch $bi record $ri $u; $kind lv=$lv rv=$rv grace=$graceMs; batches $batches")
        assert(of(viaChanges) === expected, s"joinLeft/joinRight: batch $bi record $ri $u; $kind lv=$lv rv=$rv")
        assert(got.forall(_.isLatest))
      }
    }
    assert(counters(TableTableJoinMetrics.JoinResults) === results)
    assert(counters(TableTableJoinMetrics.OutOfOrderIgnored) === model.outOfOrder)
    assert(counters(TableTableJoinMetrics.LateDropped) === model.late)
    assert(counters(TableTableJoinMetrics.NullKeys) === model.nullKeys)
    assert(counters(TableTableJoinMetrics.NullTimestamps) === model.nullTs)
  }

  for (kind <- Seq(TableTableJoinKind.Inner, TableTableJoinKind.Left, TableTableJoinKind.Outer))
    test(s"$kind join: random updates and batch splits, same results as the naive model") {
      forAll(
        Gen.oneOf(true, false),
        Gen.oneOf(true, false),
        Gen.choose(0L, 8L),
        MicroBatches.gen(upd, Gen.const(None))
      ) { (lv, rv, grace, batches) =>
        check(kind, lv, rv, grace, batches)
      }
    }
}
