package org.apache.spark.sql.kstate.processor.join

import io.kstate.oracle.KafkaTableJoinOracle
import io.kstate.oracle.KafkaTableJoinOracle.{FkJoin, JOut, TEv}
import org.apache.spark.sql.kstate.processor.join.ForeignKeyJoinDriver.{Left, Right}
import org.apache.spark.sql.kstate.processor.table.{InMemoryTableState, TableState}
import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite

/**
 * Kafka Streams 4.3.1 as the oracle for the foreign-key join ([[ForeignKeyJoinDriver]] running
 * both stages as Spark will): random updates of a left table (keys {a, b, c} and null, Long
 * values whose foreign key is "f" + value % 3, or null when value % 4 = 3) and a right table
 * (keys f0, f1, f2 and null), split into micro-batches, versioned sides with grace = history
 * retention as Kafka's.
 *  - One stage-1 partition: every result (key, value, timestamp) is Kafka's, in Kafka's order.
 *  - Three (stage-1 partitions reaching stage 2 in order or reversed): per micro-batch and key, kstate's results are a subsequence of Kafka's ending with
 *    Kafka's last, so the result table after every micro-batch is Kafka's
 *    ([[ForeignKeyResponseProcessor]], "Ordering and equivalence"). A versioned right table
 *    then has one stream time per stage-1 partition, as it would per Kafka task, so these runs
 *    use a history retention (grace) that no update exceeds.
 */
class ForeignKeyJoinDifferentialSuite extends AnyFunSuite {
  import TableTableJoinDifferentialSuite.{sample, split}

  private val fk: java.lang.Long => String = v => if (v % 4 == 3) null else s"f${v % 3}"

  private val record: Gen[TEv] = for {
    left <- Gen.frequency(3 -> true, 2 -> false)
    k <- if (left) Gen.frequency(1 -> Gen.const(null), 8 -> Gen.oneOf("a", "b", "c"))
    else Gen.frequency(1 -> Gen.const(null), 8 -> Gen.oneOf("f0", "f1", "f2"))
    v <- Gen.frequency(1 -> Gen.const(None), 4 -> Gen.choose(0L, 11L).map(Some(_)))
    step <- Gen.frequency(6 -> Gen.choose(0L, 4L), 2 -> Gen.choose(-6L, -1L), 1 -> Gen.choose(-20L, -7L))
  } yield TEv(left, k, step, v)

  private def inputs(seed: Long): Seq[Seq[TEv]] = sample(
    Gen.listOfN(24, record).map { rs =>
      var t = 20L
      rs.map { r =>
        val ts = math.max(0L, t + r.ts); if (r.ts > 0) t = ts; r.copy(ts = ts)
      }
    }.flatMap(split[TEv]),
    seed
  )

  private def kstate(
      leftJoin: Boolean,
      lv: Boolean,
      rv: Boolean,
      retention: Long,
      partitions: Int,
      in: Seq[Seq[TEv]],
      reversed: Boolean = false
  ): Seq[Seq[JOut]] = {
    def state[K](v: Boolean): () => TableState[K, java.lang.Long] = () =>
      if (v) InMemoryTableState.versioned[K, java.lang.Long](retention, retention)
      else InMemoryTableState.unversioned[K, java.lang.Long]()
    val d = new ForeignKeyJoinDriver[java.lang.Long, String, java.lang.Long, String](
      leftJoin,
      fk,
      KafkaTableJoinOracle.joined,
      state[String](lv),
      state[String](rv),
      partitions,
      i => if (reversed) partitions - 1 - i else i
    )
    in.map { b =>
      d.runBatch(b.map { e =>
        val v = e.value.map(java.lang.Long.valueOf).orNull
        if (e.left) Left(e.key, v, e.ts) else Right(e.key, v, e.ts)
      }).map(c => JOut(c.key, Option(c.newValue), c.timestamp))
    }
  }

  private def isSubsequence[A](sub: Seq[A], of: Seq[A]): Boolean =
    sub.isEmpty || (of.nonEmpty && (if (sub.head == of.head) isSubsequence(sub.tail, of.tail)
                                    else isSubsequence(sub, of.tail)))

  private val Examples = 12

  for (
    how <- Seq("inner", "left"); (lv, rv) <- Seq((false, false), (true, true), (true, false), (false, true));
    n <- Seq(1, 3)
  )
    test(
      s"foreign-key $how join, left versioned=$lv, right versioned=$rv, $n stage partitions: as Kafka on random input"
    ) {
      (1 to Examples).foreach { i =>
        // several partitions: each stage-1 partition's versioned right table has its own stream
        // time (as each Kafka task's store has), so one-task Kafka's grace decisions differ by
        // construction; there the retention is one no update exceeds
        val retention = if (n > 1 && rv) 1000L else sample(Gen.choose(0L, 8L), i * 13 + 5)
        val in = inputs(i * 17 + how.length * 3 + n)
        val k = KafkaTableJoinOracle.run(FkJoin(how, v => fk(v)), lv, rv, retention, in)
        val s = kstate(how == "left", lv, rv, retention, n, in, reversed = i % 2 == 0)
        val clue = s"retention $retention\ninput ${in.map(_.mkString(" ")).mkString(" | ")}\nkafka  $k\nkstate $s"
        if (n == 1) assert(s === k, clue)
        else {
          assert(s.length === k.length)
          s.zip(k).foreach { case (sb, kb) =>
            val sk = sb.groupBy(_.key); val kk = kb.groupBy(_.key)
            assert(sk.keySet === kk.keySet, clue)
            sk.foreach { case (key, rs) =>
              assert(isSubsequence(rs, kk(key)) && rs.last === kk(key).last, s"key $key\n$clue")
            }
          }
        }
      }
    }
}
