package org.apache.spark.sql.kstate.processor.tableagg

import io.kstate.oracle.Ev
import org.scalacheck.Gen

/**
 * Random table changelogs for the table aggregation suites: keys from {a, b, c, d} and null,
 * values 0..9 (groups g0..g2, no group for 4 and 9, no group value for 8) with tombstones,
 * timestamps mostly moving forward with out-of-order and far-behind (late) records, cut into
 * random micro-batches (empty ones included).
 */
object TableAggInputs {
  val key: Gen[String] = Gen.frequency(1 -> Gen.const(null), 8 -> Gen.oneOf("a", "b", "c", "d"))
  val value: Gen[Option[Long]] = Gen.frequency(1 -> Gen.const(None), 5 -> Gen.choose(0L, 9L).map(Some(_)))

  /**
   * `n` records; time starts at `origin` and moves by steps: mostly forward, some behind, some far
   * behind, never below `floor` (Kafka's record timestamps are >= 0; Spark event times may be
   * negative, so kstate's own suites start at -10 with no floor).
   */
  def records(n: Int, origin: Long = 20L, floor: Long = 0L): Gen[Seq[Ev]] = {
    val step = Gen.frequency(6 -> Gen.choose(0L, 4L), 2 -> Gen.choose(-6L, -1L), 1 -> Gen.choose(-20L, -7L))
    Gen.listOfN(n, Gen.zip(key, value, step)).map { rs =>
      // (stream position, record's timestamp): a step back does not move the position
      val times = rs.scanLeft((origin, origin)) { case ((pos, _), (_, _, d)) =>
        val ts = math.max(floor, pos + d)
        (if (d > 0) ts else pos, ts)
      }.tail
      rs.zip(times).map { case ((k, v, _), (_, ts)) => Ev(k, ts, v) }
    }
  }

  def split(rs: Seq[Ev]): Gen[Seq[Seq[Ev]]] =
    Gen.listOfN(rs.length, Gen.frequency(3 -> 0, 1 -> 1, 1 -> 2)).map { cuts =>
      rs.zip(cuts).foldLeft(Vector(Vector.empty[Ev])) { case (acc, (r, cut)) =>
        cut match {
          case 0 => acc.init :+ (acc.last :+ r)
          case 1 => acc :+ Vector(r)
          case _ => acc :+ Vector.empty :+ Vector(r) // an empty micro-batch in between
        }
      }
    }

  def batches(n: Int): Gen[Seq[Seq[Ev]]] = records(n).flatMap(split)

  /** [[batches]] around 0: negative event times included (kstate only; Kafka rejects them). */
  def batchesWithNegativeTimes(n: Int): Gen[Seq[Seq[Ev]]] =
    records(n, origin = -10L, floor = Long.MinValue).flatMap(split)

  /** None: unversioned; Some(r): versioned with history retention (and grace) r. */
  val retention: Gen[Option[Long]] = Gen.frequency(1 -> Gen.const(None), 2 -> Gen.choose(0L, 15L).map(Some(_)))
}
