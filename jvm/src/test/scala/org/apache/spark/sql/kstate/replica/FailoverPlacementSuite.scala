package org.apache.spark.sql.kstate.replica

import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.kstate.replica.FailoverPlacement.Slot

/** The rules of [[FailoverPlacement]]: examples, then invariants on random inputs. */
class FailoverPlacementSuite extends AnyFunSuite {
  private def store(p: Int) = ReplicaStore("q", "/cp/state", 0L, p, "default")

  test("a lost executor's stores spread over their copies: the one running fewer stores first") {
    // executor 3 (stores 0-2) is lost; 0 runs stores 3-5; 4 replaced a lost executor earlier and
    // holds a warm-up copy of store 0, one version behind the standby on 0
    val slots = Seq(
      Slot(store(0), Map("0" -> 16L, "4" -> 15L)),
      Slot(store(1), Map("0" -> 16L)),
      Slot(store(2), Map("0" -> 16L))
    )
    val out = FailoverPlacement.assign(slots, Map("0" -> 3), committed = 15, acceptableLag = 1)
    // without the rule all three went to the newest copy: 0 ran 6 stores, 4 none
    assert(out == Map(store(0) -> "4", store(1) -> "0", store(2) -> "0"))
  }

  test("two stores whose copies are on the same two executors: one on each") {
    val slots = Seq(Slot(store(0), Map("2" -> 5L, "3" -> 5L)), Slot(store(1), Map("2" -> 5L, "3" -> 5L)))
    assert(FailoverPlacement.assign(slots, Map("2" -> 2, "3" -> 2), 5, 1) == Map(store(0) -> "2", store(1) -> "3"))
  }

  test("a copy lagging more than the acceptable lag is not a candidate while a nearer one exists") {
    val slots = Seq(Slot(store(0), Map("1" -> 10L, "2" -> 8L)))
    assert(FailoverPlacement.assign(slots, Map("1" -> 5), 10, 1) == Map(store(0) -> "1"))
    assert(FailoverPlacement.assign(slots, Map("1" -> 5), 10, 2) == Map(store(0) -> "2"))
    // none within the lag: the newest copy (the least to replay), however loaded its executor
    val far = Seq(Slot(store(0), Map("1" -> 4L, "2" -> 6L)))
    assert(FailoverPlacement.assign(far, Map("2" -> 9), 10, 1) == Map(store(0) -> "2"))
  }

  test("equal load: the newest copy, then the executor id in numeric order") {
    assert(FailoverPlacement.assign(Seq(Slot(store(0), Map("1" -> 9L, "2" -> 10L))), Map.empty, 10, 1) ==
      Map(store(0) -> "2"))
    assert(FailoverPlacement.assign(Seq(Slot(store(0), Map("10" -> 10L, "9" -> 10L))), Map.empty, 10, 1) ==
      Map(store(0) -> "9"))
  }

  test("a store with fewer candidates chooses first") {
    // store 0 could go to 1 or 2, store 1 only to 1: in partition order store 0 would take 1
    // (both empty, id order) and store 1 pile onto it
    val slots = Seq(Slot(store(0), Map("1" -> 5L, "2" -> 5L)), Slot(store(1), Map("1" -> 5L)))
    assert(FailoverPlacement.assign(slots, Map.empty, 5, 1) == Map(store(0) -> "2", store(1) -> "1"))
  }

  test("a store without a copy gets no choice (it restores wherever Spark runs it)") {
    assert(FailoverPlacement.assign(Seq(Slot(store(0), Map.empty)), Map("1" -> 1), 5, 1) == Map.empty)
  }

  test("invariants on random inputs") {
    for (seed <- 1 to 300) {
      val rnd = new Random(seed)
      val execs = (1 to 1 + rnd.nextInt(5)).map(_.toString)
      val committed = 20L
      val lag = rnd.nextInt(3).toLong
      val slots = (0 until rnd.nextInt(8)).map { p =>
        Slot(store(p), execs.filter(_ => rnd.nextBoolean()).map(e => e -> (committed - rnd.nextInt(4))).toMap)
      }
      val actives = execs.map(e => e -> rnd.nextInt(4)).toMap
      val out = FailoverPlacement.assign(slots, actives, committed, lag)
      val what = s"seed $seed: $slots over $actives, lag $lag -> $out"
      assert(out.keySet == slots.filter(_.copies.nonEmpty).map(_.store).toSet, what)
      slots.filter(_.copies.nonEmpty).foreach { s =>
        val e = out(s.store)
        assert(s.copies.contains(e), what)
        val near = s.copies.filter(_._2 >= committed - lag)
        if (near.nonEmpty) assert(near.contains(e), s"a copy within the lag exists: $what")
        else assert(s.copies(e) == s.copies.values.max, s"none within the lag: the newest: $what")
      }
      // no store could have gone to a candidate executor that ended with 2 fewer stores than its own
      val load = (actives.toSeq ++ out.values.map(_ -> 1)).groupBy(_._1).map { case (e, l) => e -> l.map(_._2).sum }
        .withDefaultValue(0)
      slots.filter(_.copies.nonEmpty).foreach { s =>
        val near = s.copies.filter(_._2 >= committed - lag)
        val candidates = if (near.nonEmpty) near.keySet else s.copies.filter(_._2 == s.copies.values.max).keySet
        candidates.foreach { c =>
          assert(load(c) + 2 > load(out(s.store)), s"${s.store.partition} on ${out(s.store)} could go to $c: $what")
        }
      }
    }
  }
}
