package org.apache.spark.sql.kstate.replica

import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.kstate.replica.StandbyPlacement.Slot

/** The placement rules of [[StandbyPlacement]]: examples, then invariants on random inputs. */
class StandbyPlacementSuite extends AnyFunSuite {
  private def store(p: Int) = ReplicaStore("q", "/cp/state", 0L, p, "default")
  private def hosts(pairs: (String, String)*) = pairs.toMap

  test("a standby never sits on the active executor, and a store's standbys are distinct") {
    val out = StandbyPlacement.assign(Seq(Slot(store(0), Some("1"), Nil)), hosts("1" -> "h", "2" -> "h", "3" -> "h"), 2)
    assert(out(store(0)) == Seq("2", "3"))
  }

  test("fewer other executors than standbys wanted: as many as there are") {
    val out = StandbyPlacement.assign(Seq(Slot(store(0), Some("1"), Nil)), hosts("1" -> "h", "2" -> "h"), 3)
    assert(out(store(0)) == Seq("2"))
  }

  test("sticky: a standby stays while its executor is there and not active") {
    val ex = hosts("1" -> "h", "2" -> "h", "3" -> "h")
    assert(StandbyPlacement.assign(Seq(Slot(store(0), Some("1"), Seq("3"))), ex, 1)(store(0)) == Seq("3"))
    // its executor became the active one (the task ran there): replaced
    assert(StandbyPlacement.assign(Seq(Slot(store(0), Some("3"), Seq("3"))), ex, 1)(store(0)) == Seq("1"))
    // its executor is gone: replaced
    assert(StandbyPlacement.assign(Seq(Slot(store(0), Some("1"), Seq("3"))), ex - "3", 1)(store(0)) == Seq("2"))
  }

  test("another host than the active's and the other standbys' when one exists") {
    val ex = hosts("1" -> "a", "2" -> "a", "3" -> "b", "4" -> "b", "5" -> "c")
    assert(StandbyPlacement.assign(Seq(Slot(store(0), Some("1"), Nil)), ex, 2)(store(0)) == Seq("3", "5"))
    // one host only: the same host
    assert(StandbyPlacement.assign(
      Seq(Slot(store(0), Some("1"), Nil)),
      hosts("1" -> "a", "2" -> "a"),
      1
    )(store(0)) == Seq("2"))
  }

  test("balanced: a new standby goes to the executor with the fewest actives and standbys") {
    val ex = hosts("1" -> "h", "2" -> "h", "3" -> "h")
    val slots = Seq(Slot(store(0), Some("1"), Nil), Slot(store(1), Some("1"), Nil), Slot(store(2), Some("2"), Nil))
    val out = StandbyPlacement.assign(slots, ex, 1)
    // loads before: 1 -> 2 actives, 2 -> 1, 3 -> 0
    assert(out(store(0)) == Seq("3"))
    assert(out(store(1)) == Seq("2")) // 2 and 3 now both at 1: numeric id order
    assert(out(store(2)) == Seq("3")) // 1 has 2, 3 has 1
  }

  test("a standby moves to an executor with at least 2 fewer actives and standbys (one added since)") {
    val slots = Seq(
      Slot(store(0), Some("1"), Seq("2")),
      Slot(store(1), Some("1"), Seq("2")),
      Slot(store(2), Some("1"), Seq("2"))
    )
    // loads: 1 -> 3 actives, 2 -> 3 standbys, 3 (new) -> 0
    val out = StandbyPlacement.assign(slots, hosts("1" -> "h", "2" -> "h", "3" -> "h"), 1)
    assert(out.values.flatten.groupBy(identity).map { case (e, n) => e -> n.size } == Map("2" -> 2, "3" -> 1))
    // one fewer is not enough to move
    val two = StandbyPlacement.assign(slots.take(2), hosts("1" -> "h", "2" -> "h", "3" -> "h"), 1)
    assert(two(store(0)) == Seq("3") && two(store(1)) == Seq("2"))
    val settled = StandbyPlacement.assign(
      Seq(Slot(store(0), Some("1"), Seq("3")), Slot(store(1), Some("1"), Seq("2"))),
      hosts("1" -> "h", "2" -> "h", "3" -> "h"),
      1
    )
    assert(settled(store(0)) == Seq("3") && settled(store(1)) == Seq("2"), "balanced: nothing moves")
  }

  test("a young executor (no task of the operator yet) takes a new standby only when no other can") {
    // 3 replaced 2's lost executor and has run nothing of the operator: 2 is fuller but warm
    val ex = hosts("1" -> "h", "2" -> "h", "3" -> "h")
    val slots = Seq(Slot(store(0), Some("1"), Nil), Slot(store(1), Some("2"), Nil), Slot(store(2), Some("2"), Nil))
    val out = StandbyPlacement.assign(slots, ex, 1, young = Set("3"))
    assert(out(store(0)) == Seq("2") && out(store(1)) == Seq("1") && out(store(2)) == Seq("1"))
    // without the age rule the least loaded executor, the young one, would have taken them
    assert(StandbyPlacement.assign(slots, ex, 1)(store(0)) == Seq("3"))
    // two standbys per store: the second can only go to the young executor
    assert(StandbyPlacement.assign(slots, ex, 2, young = Set("3"))(store(0)) == Seq("2", "3"))
    // only young executors besides the active: a standby there beats none
    assert(StandbyPlacement.assign(slots.take(1), hosts("1" -> "h", "3" -> "h"), 1, young = Set("3"))(
      store(0)
    ) == Seq("3"))
  }

  test("another host comes before age: a young executor on another host takes the standby") {
    val ex = hosts("1" -> "a", "2" -> "a", "3" -> "b")
    assert(StandbyPlacement.assign(Seq(Slot(store(0), Some("1"), Nil)), ex, 1, young = Set("3"))(store(0)) == Seq("3"))
  }

  test("a standby never moves onto a young executor to balance, and moves off one to a warm one with fewer") {
    val ex = hosts("1" -> "h", "2" -> "h", "3" -> "h")
    val onTwo = Seq(
      Slot(store(0), Some("1"), Seq("2")),
      Slot(store(1), Some("1"), Seq("2")),
      Slot(store(2), Some("1"), Seq("2"))
    )
    // 3 has 2 fewer than 2 but is young: nothing moves (without the age rule one standby would)
    assert(StandbyPlacement.assign(onTwo, ex, 1, young = Set("3")).values.flatten.toSet == Set("2"))
    assert(StandbyPlacement.assign(onTwo, ex, 1).values.flatten.toSet == Set("2", "3"))
    // three standbys on young 3, warm 2 without any: one moves to 2 (2 fewer), as without the rule
    val onThree = Seq(
      Slot(store(0), Some("1"), Seq("3")),
      Slot(store(1), Some("1"), Seq("3")),
      Slot(store(2), Some("1"), Seq("3"))
    )
    val out = StandbyPlacement.assign(onThree, ex, 1, young = Set("3"))
    assert(out.values.flatten.groupBy(identity).map { case (e, n) => e -> n.size } == Map("3" -> 2, "2" -> 1))
  }

  test("an active that is unknown or lost: the standbys stay as they are, none is added") {
    val ex = hosts("2" -> "h", "3" -> "h")
    assert(StandbyPlacement.assign(Seq(Slot(store(0), None, Seq("3"))), ex, 2)(store(0)) == Seq("3"))
    assert(StandbyPlacement.assign(Seq(Slot(store(0), None, Nil)), ex, 1)(store(0)) == Nil)
  }

  test("executor ids order numerically") {
    assert(Seq("10", "9", "driver", "2").sorted(StandbyPlacement.ExecutorOrder) == Seq("2", "9", "10", "driver"))
  }

  test("invariants on random placements") {
    for (seed <- 1 to 300) {
      val rnd = new Random(seed)
      val ex = (1 to 1 + rnd.nextInt(6)).map(i => i.toString -> s"h${rnd.nextInt(3)}").toMap
      val ids = ex.keys.toSeq ++ Seq("99") // 99: an executor that is gone
      val n = rnd.nextInt(4)
      val young = ex.keySet.filter(_ => rnd.nextInt(3) == 0)
      val slots = (0 until 1 + rnd.nextInt(8)).map { p =>
        val active = if (rnd.nextInt(5) == 0) None else Some(ids(rnd.nextInt(ids.size)))
        Slot(store(p), active, Seq.fill(rnd.nextInt(3))(ids(rnd.nextInt(ids.size))))
      }
      val out = StandbyPlacement.assign(slots, ex, n, young)
      slots.foreach { s =>
        val got = out(s.store)
        val what = s"seed $seed: $s -> $got over $ex, n=$n"
        assert(got.distinct == got, what)
        assert(got.size <= n, what)
        assert(got.forall(ex.contains), what)
        assert(!s.active.exists(got.contains), what)
        val valid = s.current.distinct.filter(e => ex.contains(e) && !s.active.contains(e)).take(n)
        if (s.active.isDefined) assert(got.size == math.min(n, (ex.keySet -- s.active).size), what)
        else assert(got == valid, s"a store without a live active keeps its standbys: $what")
      }
      // Sticky unless balancing, and balancing settles: placed again and again (one micro-batch
      // after another) with the last result as the current standbys, it stops moving. Each move
      // goes from an executor with load L to one with at most L - 2, so the sum of squared
      // loads falls with every move.
      var current = out
      var rounds = 0
      var settled = false
      while (!settled && rounds < 50) {
        val next = StandbyPlacement.assign(slots.map(s => s.copy(current = current(s.store))), ex, n, young)
        settled = next == current
        current = next
        rounds += 1
      }
      assert(settled, s"seed $seed: placement still moving after 50 rounds")
      // settled means balanced: no standby has a candidate executor with 2 fewer stores, except a
      // young one when the standby's executor is not young
      val load = (slots.flatMap(_.active) ++ current.values.flatten).groupBy(identity).map { case (e, l) =>
        e -> l.size
      }
        .withDefaultValue(0)
      slots.filter(_.active.isDefined).foreach { s =>
        for (
          e <- current(s.store); c <- ex.keys
          if !s.active.contains(c) && !current(s.store).contains(c) && (young(e) || !young(c))
        ) {
          assert(
            load(c) + 2 > load(e),
            s"seed $seed: standby of ${s.store} on $e (load ${load(e)}) could go to $c (load ${load(c)})"
          )
        }
      }
    }
  }
}
