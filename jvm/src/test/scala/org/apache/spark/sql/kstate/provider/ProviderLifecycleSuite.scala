package org.apache.spark.sql.kstate.provider

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.kstate.provider.ProviderState._

/**
 * The provider's life cycle: every legal transition is accepted, every other pair of states is
 * an `IllegalStateException` naming both, and no transition happens outside the provider's lock.
 * States carry no working copy here (`null`): legality depends on the kinds and versions only.
 */
class ProviderLifecycleSuite extends AnyFunSuite {
  private val spill1 = PendingVersion(null, None, null, null, null, null)
  private val states: Seq[ProviderState] = Seq(
    Created,
    Empty,
    Loaded(1, null),
    Loaded(2, null),
    Loaded(3, null),
    Spilled(1, null, spill1),
    Spilled(2, null, spill1),
    Closed
  )

  /** The transitions of docs/state-store.md's diagram, over `states`. */
  private val legal: Set[(ProviderState, ProviderState)] = Set(
    Created -> Empty,
    Empty -> Loaded(1, null),
    Empty -> Loaded(2, null),
    Empty -> Loaded(3, null),
    Loaded(1, null) -> Loaded(2, null),
    Loaded(2, null) -> Loaded(3, null),
    Loaded(1, null) -> Loaded(3, null), // a catch-up: the changelogs of 2 and 3 replayed
    Loaded(1, null) -> Spilled(1, null, spill1),
    Loaded(2, null) -> Spilled(2, null, spill1),
    Spilled(1, null, spill1) -> Loaded(2, null),
    Spilled(2, null, spill1) -> Loaded(3, null),
    Loaded(1, null) -> Empty,
    Loaded(2, null) -> Empty,
    Loaded(3, null) -> Empty,
    Spilled(1, null, spill1) -> Empty,
    Spilled(2, null, spill1) -> Empty
  ) ++
    states.filter(_ != Closed).map(_ -> Closed)

  /** A lifecycle in state `s`, reached through legal transitions. */
  private def at(s: ProviderState, lock: AnyRef): ProviderLifecycle = {
    val l = new ProviderLifecycle(lock)
    val path: Seq[ProviderState] = s match {
      case Created => Nil
      case Empty => Seq(Empty)
      case Loaded(v, _) => Seq(Empty, Loaded(v, null))
      case Spilled(v, _, sp) => Seq(Empty, Loaded(v, null), Spilled(v, null, sp))
      case Closed => Seq(Closed)
    }
    lock.synchronized(path.foreach(l.moveTo))
    assert(l.current == s)
    l
  }

  for (from <- states; to <- states) {
    if (legal((from, to))) {
      test(s"$from -> $to is a transition") {
        val lock = new Object
        val l = at(from, lock)
        lock.synchronized(l.moveTo(to))
        assert(l.current == to)
      }
    } else {
      test(s"$from -> $to is illegal: IllegalStateException naming both states") {
        val lock = new Object
        val l = at(from, lock)
        val e = intercept[IllegalStateException](lock.synchronized(l.moveTo(to)))
        assert(e.getMessage == s"illegal provider state transition: $from -> $to")
        assert(l.current == from, "an illegal transition must leave the state unchanged")
      }
    }
  }

  test("a legal transition outside the provider's lock is refused") {
    val lock = new Object
    val l = at(Empty, lock)
    val e = intercept[IllegalStateException](l.moveTo(Loaded(1, null)))
    assert(e.getMessage.contains("EMPTY -> LOADED(1)") && e.getMessage.contains("outside the provider's lock"))
    assert(l.current == Empty)
  }

  test("state names match the documented diagram") {
    assert(states.map(_.toString) == Seq(
      "CREATED",
      "EMPTY",
      "LOADED(1)",
      "LOADED(2)",
      "LOADED(3)",
      "SPILLED(1, null)",
      "SPILLED(2, null)",
      "CLOSED"
    ))
  }
}
