package org.apache.spark.sql.kstate.processor.window

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

/** [[FoldTree]] against folding the active records of a range one by one. */
class FoldTreeSuite extends AnyFunSuite with ScalaCheckPropertyChecks {

  /** Sets of record ids: merging is a union, so a fold names exactly the records it merged. */
  private object Ids extends MergingAggregator[Int, Set[Int]] {
    override def initial(): Set[Int] = Set.empty
    override def add(agg: Set[Int], record: Int): Set[Int] = agg + record
    override def merge(a: Set[Int], b: Set[Int]): Set[Int] = {
      assert((a & b).isEmpty, s"$a and $b both hold a record")
      a ++ b
    }
    override def orderInsensitive: Boolean = true
  }

  test("an empty range, or one with no active record, folds to nothing") {
    val t = new FoldTree[Set[Int]](Vector(Set(0), Set(1)), Vector(5L, 7L), _ == 1, Ids)
    assert(t.fold(0, 0) === FoldTree.Folded(null, Long.MinValue, 0))
    assert(t.fold(0, 1) === FoldTree.Folded(null, Long.MinValue, 0))
    assert(t.fold(0, 2) === FoldTree.Folded(Set(1), 7L, 1))
    t.activate(0)
    assert(t.fold(0, 2) === FoldTree.Folded(Set(0, 1), 7L, 2))
  }

  test("random records, activations and ranges: the same records, largest timestamp and count as one by one") {
    val gen = for {
      n <- Gen.choose(1, 40)
      ts <- Gen.listOfN(n, Gen.choose(-5L, 50L)).map(_.sorted.toVector)
      active <- Gen.listOfN(n, Gen.oneOf(false, true))
      steps <- Gen.listOf(Gen.oneOf(
        Gen.choose(0, n - 1).map(p => Left(p)),
        (for { a <- Gen.choose(0, n); b <- Gen.choose(0, n) } yield Right((a min b, a max b)))
      ))
    } yield (ts, active.toVector, steps)
    forAll(gen) { case (ts, active, steps) =>
      val on = active.toArray
      val t = new FoldTree[Set[Int]](ts.indices.map(Set(_)), ts, active, Ids)
      steps.foreach {
        case Left(p) => t.activate(p); on(p) = true
        case Right((from, until)) =>
          val in = (from until until).filter(on(_))
          val want = FoldTree.Folded(
            if (in.isEmpty) null else in.toSet,
            if (in.isEmpty) Long.MinValue else in.map(ts).max,
            in.size
          )
          assert(t.fold(from, until) === want, s"fold($from, $until); ts $ts, active ${on.toSeq}")
      }
    }
  }
}
