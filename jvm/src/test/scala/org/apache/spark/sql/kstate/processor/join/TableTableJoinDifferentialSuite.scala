package org.apache.spark.sql.kstate.processor.join

import scala.collection.mutable.ArrayBuffer

import io.kstate.oracle.KafkaTableJoinOracle
import io.kstate.oracle.KafkaTableJoinOracle.{JOut, PkJoin, TEv}
import org.apache.spark.sql.kstate.processor.table.{InMemoryTableState, TableChange, TableSource}
import org.scalacheck.Gen
import org.scalacheck.rng.Seed
import org.scalatest.funsuite.AnyFunSuite

/**
 * Kafka Streams 4.3.1 as the oracle for [[TableTableJoinProcessor]]: the same random updates of
 * both tables (keys {a, b, c} and null, Long values and tombstones, timestamps moving forward
 * with out-of-order and late records), split into micro-batches, through Kafka's
 * `TopologyTestDriver` and through the processor (one per micro-batch over the same heap
 * tables). Every result Kafka forwards (key, new value, timestamp) must be kstate's, in the same
 * order, per micro-batch; Kafka's `toStream()` exposes no old values. Versioned sides use
 * grace = history retention, as Kafka does. Inner, left and outer; both sides unversioned, both
 * versioned, and each mixed combination.
 */
class TableTableJoinDifferentialSuite extends AnyFunSuite {
  import TableTableJoinDifferentialSuite._

  private def kstate(
      how: String,
      lv: Boolean,
      rv: Boolean,
      retentionMs: Long,
      batches: Seq[Seq[TEv]]
  ): Seq[Seq[JOut]] = {
    def state(v: Boolean) =
      if (v) InMemoryTableState.versioned[String, java.lang.Long](retentionMs, retentionMs)
      else InMemoryTableState.unversioned[String, java.lang.Long]()
    val left = new TableSource(state(lv))
    val right = new TableSource(state(rv))
    val kind = how match {
      case "inner" => TableTableJoinKind.Inner
      case "left" => TableTableJoinKind.Left
      case "outer" => TableTableJoinKind.Outer
    }
    batches.map { batch =>
      val p = new TableTableJoinProcessor[String, java.lang.Long, java.lang.Long, String](
        kind,
        left,
        right,
        KafkaTableJoinOracle.joined
      )
      val out = ArrayBuffer.empty[JOut]
      batch.foreach { e =>
        val v = e.value.map(java.lang.Long.valueOf).orNull
        val emit: TableChange[String, String] => Unit = c => out += JOut(c.key, Option(c.newValue), c.timestamp)
        if (e.left) p.processLeft(e.key, e.key == null, v, e.ts, false, emit)
        else p.processRight(e.key, e.key == null, v, e.ts, false, emit)
      }
      out.toList
    }
  }

  private val Examples = 12

  for (
    how <- Seq("inner", "left", "outer"); (lv, rv) <- Seq((false, false), (true, true), (true, false), (false, true))
  )
    test(s"$how join, left versioned=$lv, right versioned=$rv: as Kafka on random input") {
      (1 to Examples).foreach { i =>
        val retention = sample(Gen.choose(0L, 8L), i * 7 + 1)
        val in = inputs(i * 31 + how.length)
        val k = KafkaTableJoinOracle.run(PkJoin(how), lv, rv, retention, in)
        val s = kstate(how, lv, rv, retention, in)
        assert(s === k, s"retention $retention\ninput ${in.map(_.mkString(" ")).mkString(" | ")}")
      }
    }

  test("the KIP-914 sequence through Kafka and kstate: versioned B ignores the out-of-order b1") {
    val in = Seq(Seq(
      TEv(left = true, "k", 0, Some(0)),
      TEv(left = true, "k", 4, Some(4)),
      TEv(left = false, "k", 2, Some(2)),
      TEv(left = false, "k", 1, Some(1))
    ))
    val expected = Seq(Seq(JOut("k", Some("4+2"), 4)))
    assert(KafkaTableJoinOracle.run(PkJoin("inner"), leftVersioned = true, rightVersioned = true, 10, in) === expected)
    assert(kstate("inner", lv = true, rv = true, 10, in) === expected)
    val unversioned = Seq(Seq(JOut("k", Some("4+2"), 4), JOut("k", Some("4+1"), 4)))
    assert(KafkaTableJoinOracle.run(
      PkJoin("inner"),
      leftVersioned = false,
      rightVersioned = false,
      10,
      in
    ) === unversioned)
    assert(kstate("inner", lv = false, rv = false, 10, in) === unversioned)
  }
}

object TableTableJoinDifferentialSuite {
  def sample[A](g: Gen[A], seed: Long): A = g.pureApply(Gen.Parameters.default, Seed(seed))

  private val key: Gen[String] = Gen.frequency(1 -> Gen.const(null), 8 -> Gen.oneOf("a", "b", "c"))
  private val value: Gen[Option[Long]] = Gen.frequency(1 -> Gen.const(None), 4 -> Gen.choose(0L, 9L).map(Some(_)))

  /** `n` updates of random sides: time mostly moves forward, some are behind (some far). */
  def records(n: Int): Gen[Seq[TEv]] = Gen.listOfN(
    n,
    for {
      left <- Gen.oneOf(true, false); k <- key; v <- value
      step <- Gen.frequency(6 -> Gen.choose(0L, 4L), 2 -> Gen.choose(-6L, -1L), 1 -> Gen.choose(-20L, -7L))
    } yield (left, k, v, step)
  ).map { steps =>
    var t = 20L
    steps.map { case (left, k, v, step) =>
      val ts = math.max(0L, t + step)
      if (step > 0) t = ts
      TEv(left, k, ts, v)
    }
  }

  def split[A](rs: Seq[A]): Gen[Seq[Seq[A]]] =
    Gen.listOfN(rs.length, Gen.frequency(3 -> false, 1 -> true)).map { cuts =>
      rs.zip(cuts).foldLeft(Vector(Vector.empty[A])) { case (acc, (r, cut)) =>
        if (cut && acc.last.nonEmpty) acc :+ Vector(r) else acc.init :+ (acc.last :+ r)
      }
    }

  def inputs(seed: Long, n: Int = 20): Seq[Seq[TEv]] = sample(records(n).flatMap(split[TEv]), seed)
}
