package org.apache.spark.sql.kstate.processor.join

import scala.collection.mutable

import org.apache.spark.sql.kstate.processor.join.ForeignKeyJoinDriver.{Left, Right, Upd}
import org.apache.spark.sql.kstate.processor.table.{InMemoryTableState, TableState}
import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

/**
 * The foreign-key join's two stages ([[ForeignKeyJoinDriver]], 1 or 3 state partitions) against
 * the join's definition, on random updates of both tables (small key spaces, tombstones, null
 * foreign keys, out-of-order and late records, versioned or not) cut into random micro-batches.
 * The model is the two tables alone ([[TableTableJoinModel.Table]]: versioned tables' latest by
 * timestamp, late updates not stored; the right one per stage-1 partition, each with its own
 * stream time, as the stage keeps it) and, after each micro-batch, the join they define: inner,
 * a row per left key with a foreign key whose right value exists; left, a row per left key.
 * Stage-1 partitions reach stage 2 in partition order or reversed. Asserted: the result table the emitted changes build is that join after every micro-batch,
 * and each change's old value is the table's previous value for its key (no stale result).
 */
class ForeignKeyJoinPropertySuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  import ForeignKeyJoinSuite.{fk, joiner}

  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 300)

  /** No shrinking: a shrunk input leaves the generators' domain (keys, values, timestamps). */
  private implicit def noShrink[A]: org.scalacheck.Shrink[A] = org.scalacheck.Shrink.shrinkAny

  private val upd: Gen[(Boolean, String, String, Long)] = for {
    left <- Gen.oneOf(true, false)
    k <- if (left) Gen.oneOf("a", "b", "c", "d") else Gen.oneOf("f1", "f2", "f3")
    v <- if (left) Gen.frequency(5 -> Gen.oneOf("x>f1", "y>f2", "z>f3", "w>f1", "n"), 2 -> Gen.const(null: String))
    else Gen.frequency(5 -> Gen.oneOf("A", "B", "C"), 2 -> Gen.const(null: String))
    ts <- Gen.choose(0L, 30L)
  } yield (left, k, v, ts)

  private val batches: Gen[Seq[Seq[(Boolean, String, String, Long)]]] =
    Gen.choose(1, 5).flatMap(n => Gen.listOfN(n, Gen.choose(0, 10).flatMap(Gen.listOfN(_, upd))))

  test("the result table is the join of the two tables after every micro-batch, with no stale result") {
    forAll(
      Gen.oneOf(true, false),
      Gen.zip(Gen.oneOf(true, false), Gen.oneOf(true, false)),
      Gen.zip(Gen.oneOf(1, 3), Gen.oneOf(true, false)),
      Gen.choose(0L, 8L),
      batches
    ) {
      (leftJoin, versioned, partitioning, grace, bs) =>
        val (lv, rv) = versioned
        val (n, reversed) = partitioning
        def state(v: Boolean): () => TableState[String, String] = () =>
          if (v) InMemoryTableState.versioned[String, String](grace, grace)
          else InMemoryTableState.unversioned[String, String]()
        val d = new ForeignKeyJoinDriver[String, String, String, String](
          leftJoin,
          fk,
          joiner,
          state(lv),
          state(rv),
          n,
          i => if (reversed) n - 1 - i else i
        )
        val l = new TableTableJoinModel.Table(lv, grace)
        // the right table lives in the stage-1 partitions: one stream time per partition
        val rParts = Vector.fill(n)(new TableTableJoinModel.Table(rv, grace))
        def r(k: String) = rParts(Math.floorMod(k.hashCode, n))
        val table = mutable.Map.empty[String, String]
        bs.zipWithIndex.foreach { case (b, bi) =>
          val out = d.runBatch(b.map { case (isLeft, k, v, ts) =>
            (if (isLeft) { l.put(k, v, ts); Left(k, v, ts) }
             else { r(k).put(k, v, ts); Right(k, v, ts) }): Upd[String, String, String]
          })
          out.foreach { c =>
            assert(Option(c.oldValue) === table.get(c.key), s"old value of ${c.key}, batch $bi: $bs")
            if (c.newValue == null) table -= c.key else table(c.key) = c.newValue
          }
          val expected = Seq("a", "b", "c", "d").flatMap { k =>
            l.latest(k).map(_._1).flatMap { lvV =>
              val rv = Option(fk(lvV)).flatMap(f => r(f).latest(f)).map(_._1)
              if (rv.isDefined || leftJoin) Some(k -> joiner(lvV, rv.orNull)) else None
            }
          }.toMap
          assert(
            table.toMap === expected,
            s"batch $bi, leftJoin=$leftJoin lv=$lv rv=$rv n=$n reversed=$reversed grace=$grace: $bs"
          )
        }
    }
  }
}
