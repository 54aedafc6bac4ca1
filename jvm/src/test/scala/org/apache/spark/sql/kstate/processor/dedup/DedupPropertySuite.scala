package org.apache.spark.sql.kstate.processor.dedup

import org.apache.spark.sql.kstate.processor.StreamTime

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.kstate.processor.MicroBatches
import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

/**
 * [[DedupProcessor]] against a deliberately naive second reference model (independent of both
 * the Scala code and python/tests/models/dedup_model.py, following the rules in the latter's
 * docstring): it keeps the full history of every stored (identity, ts) pair and of every
 * stream-time input, and recomputes stream time and expiry from scratch, in exact BigInt
 * arithmetic, for every record. Random sequences are cut into random micro-batches: a new
 * processor per batch over one shared [[InMemoryDedupState]], an optional watermark advance at
 * the start of each batch, finish() at the end of each.
 */
class DedupPropertySuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  import DedupPropertySuite._

  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 1000)

  private def check(interval: Long, batches: Seq[Batch]): Unit = {
    val model = new NaiveModel(interval)
    val state = new InMemoryDedupState[String](identity)
    val counters = DedupMetrics.newCounters()
    var expFwd, expDup, expLate, expNull, expStored = 0L
    batches.zipWithIndex.foreach { case (batch, bi) =>
      val p = new DedupProcessor[String](interval, state, counters)
      batch.watermark.foreach { w => p.advanceStreamTime(w); model.advance(w) }
      batch.recs.zipWithIndex.foreach { case (r, ri) =>
        val (fwd, kind) = model.process(r)
        val got = p.process(r.id, r.id == null, r.ts.getOrElse(0L), r.ts.isEmpty)
        assert(
          got === fwd,
          s"batch $bi record $ri $r: expected ${if (fwd) "forwarded" else "dropped"} " +
            s"($kind); interval $interval; batches $batches"
        )
        assert(BigInt(p.currentStreamTime) === model.streamTime, s"stream time after batch $bi record $ri")
        kind match {
          case Dup => expDup += 1
          case Late => expLate += 1; expFwd += 1
          case NullKeyOrTs => expNull += 1; expFwd += 1
          case Stored => expStored += 1; expFwd += 1
        }
      }
      p.finish()
      assert(BigInt(state.streamTime) === model.streamTime, s"persisted stream time after batch $bi")
      assert(state.numEntries === model.liveEntries, s"numEntries after batch $bi; batches $batches")
      assert(model.maxLivePerIdentity <= 1, "KIP analysis: at most one live entry per identity")
    }
    assert(counters(DedupMetrics.Forwarded) === expFwd)
    assert(counters(DedupMetrics.DuplicatesDropped) === expDup)
    assert(counters(DedupMetrics.LateForwarded) === expLate)
    assert(counters(DedupMetrics.NullKeysForwarded) + counters(DedupMetrics.NullTimestampsForwarded) === expNull)
    assert(counters(DedupMetrics.EntriesStored) === expStored)
  }

  test("random small sequences, random batch boundaries: same decisions as the naive model") {
    forAll(Gen.choose(0L, 20L), batchesGen(smallTs, Gen.const(None))) { (interval, batches) =>
      check(interval, batches)
    }
  }

  test("random sequences with watermark advances at batch starts: same decisions as the naive model") {
    val wm = Gen.frequency(3 -> Gen.const(None), 1 -> Gen.choose(-5L, 60L).map(Some(_)))
    forAll(Gen.choose(0L, 20L), batchesGen(smallTs, wm)) { (interval, batches) =>
      check(interval, batches)
    }
  }

  test("one batch vs one record per batch: identical decisions") {
    forAll(Gen.choose(0L, 20L), Gen.listOf(recGen(smallTs))) { (interval, recs) =>
      check(interval, Seq(Batch(None, recs)))
      check(interval, recs.map(r => Batch(None, Seq(r))))
    }
  }

  test("extreme timestamps and intervals (no overflow): same decisions as the exact BigInt model") {
    // Long.MinValue itself is excluded: see DedupProcessorSuite "BUG: ... Long.MinValue".
    val extremeTs = Gen.oneOf(
      Long.MinValue + 1,
      Long.MinValue + 2,
      Long.MinValue / 2,
      -2L,
      -1L,
      0L,
      1L,
      2L,
      Long.MaxValue / 2,
      Long.MaxValue - 2,
      Long.MaxValue - 1,
      Long.MaxValue
    )
    val ts = Gen.frequency(8 -> extremeTs.map(Some(_)), 1 -> Gen.const(None))
    val interval = Gen.oneOf(0L, 1L, 2L, Long.MaxValue / 2, Long.MaxValue - 1, Long.MaxValue)
    val wm = Gen.frequency(3 -> Gen.const(None), 1 -> extremeTs.map(Some(_)))
    forAll(interval, batchesGen(ts, wm)) { (interval, batches) =>
      check(interval, batches)
    }
  }
}

object DedupPropertySuite {
  final case class Rec(id: String, ts: Option[Long]) {
    override def toString: String = s"${Option(id).getOrElse("null")}@${MicroBatches.showTs(ts)}"
  }
  type Batch = MicroBatches.Batch[Rec]
  val Batch: MicroBatches.Batch.type = MicroBatches.Batch

  sealed trait Kind
  case object Dup extends Kind
  case object Late extends Kind
  case object NullKeyOrTs extends Kind
  case object Stored extends Kind

  val smallTs: Gen[Option[Long]] =
    Gen.frequency(8 -> Gen.choose(0L, 40L).map(Some(_)), 1 -> Gen.const(None))

  def recGen(ts: Gen[Option[Long]]): Gen[Rec] = for {
    id <- Gen.frequency(5 -> Gen.oneOf("a", "b", "c"), 1 -> Gen.const(null: String))
    t <- ts
  } yield Rec(id, t)

  def batchesGen(ts: Gen[Option[Long]], wm: Gen[Option[Long]]): Gen[Seq[Batch]] = MicroBatches.gen(recGen(ts), wm)

  /**
   * Naive KIP-655 model: nothing is ever deleted. Stream time = max of Long.MinValue, every
   * non-null timestamp processed (null identities included) and every watermark. An entry is
   * live while its ts >= stream time - interval.
   */
  final class NaiveModel(intervalMs: Long) {
    private val interval = BigInt(intervalMs)
    private val timeInputs = ArrayBuffer[BigInt](BigInt(Long.MinValue))
    private val everStored = ArrayBuffer.empty[(String, BigInt)]

    def streamTime: BigInt = timeInputs.max
    private def bound: BigInt = streamTime - interval
    private def live: Seq[(String, BigInt)] = { val b = bound; everStored.filter(_._2 >= b).toSeq }

    def advance(w: Long): Unit = timeInputs += BigInt(w)

    def process(r: Rec): (Boolean, Kind) = {
      if (r.id == null) {
        r.ts.foreach(t => timeInputs += BigInt(t))
        return (true, NullKeyOrTs)
      }
      if (r.ts.isEmpty) return (true, NullKeyOrTs)
      val ts = BigInt(r.ts.get)
      timeInputs += ts
      if (live.exists { case (id, s) => id == r.id && (s - ts).abs <= interval }) (false, Dup)
      else if (ts < bound) (true, Late)
      else { everStored += ((r.id, ts)); (true, Stored) }
    }

    def liveEntries: Long = live.size.toLong
    def maxLivePerIdentity: Int =
      if (live.isEmpty) 0 else live.groupBy(_._1).values.map(_.size).max
  }
}
