package org.apache.spark.sql.kstate.processor.join

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.kstate.processor.MicroBatches
import org.apache.spark.sql.kstate.processor.table.InMemoryTableState
import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

/**
 * [[StreamTableJoinProcessor]] against [[StreamTableJoinModel]]: random interleavings of stream
 * records and table updates (keys from a small key space and null, tombstones, null timestamps,
 * out-of-order and late records on both sides) cut into random micro-batches, a new processor
 * per batch over one table state and one grace buffer, an optional watermark advance at the
 * start of each batch and finish() at its end. Every emitted result (in order), the buffer's
 * stream time and size and every counter are compared after each record; inner and left,
 * unversioned and versioned, with and without grace.
 */
class StreamTableJoinPropertySuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  import StreamTableJoinModel._
  import StreamTableJoinPropertySuite._

  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 500)

  /** Runs processor and model over `batches`; returns the processor's results per batch. */
  private def check(cfg: Cfg, batches: Seq[MicroBatches.Batch[Rec]]): Seq[Seq[Out]] = {
    val model = new StreamTableJoinModel(cfg)
    val spec = StreamTableJoinSpec(cfg.left, cfg.retention, cfg.grace)
    val state = cfg.retention.fold(InMemoryTableState.unversioned[String, String]())(r =>
      InMemoryTableState.versioned[String, String](r, cfg.tableGrace)
    )
    val buffer = cfg.grace.map(_ => new InMemoryStreamTableJoinBuffer[String, String])
    val counters = StreamTableJoinMetrics.newCounters()
    val got = ArrayBuffer.empty[Out]
    val emit: StreamTableJoinEmitter[String, String] = (s: String, t: String, ts: Long) => got += Out(s, t, ts)
    def ctx(what: String) = s"$what; $cfg; batches ${batches.mkString(" | ")}"
    batches.zipWithIndex.map { case (batch, bi) =>
      val p = new StreamTableJoinProcessor(spec, state, buffer, counters)
      val perBatch = ArrayBuffer.empty[Out]
      batch.watermark.foreach { w => p.advanceStreamTime(w); model.advance(w) }
      batch.recs.zipWithIndex.foreach { case (r, ri) =>
        got.clear()
        val expected = r match {
          case S(k, v, ts) =>
            p.processStream(k, k == null, v, ts.getOrElse(ShownNullTs), ts.isEmpty, emit)
            model.stream(k, v, ts, ShownNullTs)
          case T(k, v, ts) =>
            p.processTable(k, k == null, v, ts.getOrElse(0L), ts.isEmpty)
            model.table(k, v, ts)
            Nil
        }
        assert(got.toSeq === expected, ctx(s"batch $bi record $ri $r"))
        assert(
          BigInt(p.currentStreamTime) === model.bufferTime.getOrElse(BigInt(Long.MinValue)),
          ctx(s"batch $bi record $ri: stream time")
        )
        perBatch ++= got
      }
      got.clear()
      p.finish(emit)
      assert(got.toSeq === model.finish(), ctx(s"batch $bi finish"))
      perBatch ++= got
      buffer.foreach(b => assert(b.numRecords === model.buffered, ctx(s"batch $bi buffered")))
      val reported = counters.reported
      val expectedCounts = model.counts.toMap ++ Map(
        "bufferRecords" -> model.buffered.toLong,
        "bufferRecordsMax" -> model.maxBuffered.toLong
      )
      StreamTableJoinMetrics.reported.map(_.name).foreach { name =>
        if (cfg.grace.isDefined || !name.startsWith("buffer"))
          assert(reported(name) === expectedCounts.getOrElse(name, 0L), ctx(s"batch $bi counter $name"))
      }
      perBatch.toSeq
    }
  }

  test("random interleavings, micro-batches and watermarks: the same results as the naive model") {
    forAll(cfgGen, batchesGen(smallTs, smallWm)) { (c, b) => check(c, b) }
  }

  test("batch boundaries do not change the results (without watermarks)") {
    forAll(cfgGen, Gen.listOf(recGen(smallTs))) { (c, recs) =>
      val whole = check(c, Seq(MicroBatches.Batch(None, recs))).flatten
      assert(check(c, recs.map(r => MicroBatches.Batch(None, Seq(r)))).flatten === whole)
    }
  }

  test("grace 0 gives the same results, in the same order, as no grace") {
    forAll(cfgGen.filter(_.retention.isDefined), Gen.listOf(recGen(smallTs))) { (c, recs) =>
      val batches = Seq(MicroBatches.Batch(None, recs))
      assert(check(c.copy(grace = Some(0L)), batches) === check(c.copy(grace = None), batches))
    }
  }

  test("extreme timestamps, retentions and grace periods (no overflow): the same results as the exact model") {
    val extreme =
      Gen.oneOf(Long.MinValue + 1, Long.MinValue + 2, -1L, 0L, 1L, Long.MaxValue - 6, Long.MaxValue - 1, Long.MaxValue)
    val ts = Gen.frequency(8 -> extreme.map(Some(_)), 1 -> Gen.const(None))
    val wm = Gen.frequency(3 -> Gen.const(None), 1 -> extreme.map(Some(_)))
    val durations = Gen.oneOf(0L, 1L, Long.MaxValue / 2, Long.MaxValue)
    val cfg = for {
      c <- cfgGen
      r <- durations; tg <- Gen.oneOf(0L, r); g <- Gen.oneOf(None, Some(0L), Some(r))
    } yield if (c.retention.isEmpty) c else c.copy(retention = Some(r), tableGrace = tg, grace = g)
    forAll(cfg, batchesGen(ts, wm)) { (c, b) => check(c, b) }
  }
}

object StreamTableJoinPropertySuite {
  import StreamTableJoinModel.Cfg

  /** The timestamp passed with a null-timestamp stream record (a left join emits it unchanged). */
  val ShownNullTs: Long = -777L

  sealed trait Rec

  /** A stream record. */
  final case class S(key: String, value: String, ts: Option[Long]) extends Rec {
    override def toString: String = s"S(${Option(key).getOrElse("null")}=$value@${MicroBatches.showTs(ts)})"
  }

  /** A table update (value null: tombstone). */
  final case class T(key: String, value: String, ts: Option[Long]) extends Rec {
    override def toString: String =
      s"T(${Option(key).getOrElse("null")}=${Option(value).getOrElse("null")}@${MicroBatches.showTs(ts)})"
  }

  // negative timestamps too: a version may end at -1 (put's "latest" is Long.MinValue + 1, not KIP-914's -1)
  val smallTs: Gen[Option[Long]] = Gen.frequency(12 -> Gen.choose(-20L, 40L).map(Some(_)), 1 -> Gen.const(None))
  val smallWm: Gen[Option[Long]] = Gen.frequency(3 -> Gen.const(None), 1 -> Gen.choose(-25L, 60L).map(Some(_)))

  val cfgGen: Gen[Cfg] = for {
    left <- Gen.oneOf(true, false)
    versioned <- Gen.frequency(3 -> true, 1 -> false)
    retention <- Gen.choose(0L, 20L)
    tableGrace <- Gen.choose(0L, retention)
    grace <- Gen.frequency(1 -> Gen.const(None), 2 -> Gen.choose(0L, retention).map(Some(_)))
  } yield if (versioned) Cfg(left, Some(retention), tableGrace, grace) else Cfg(left, None, 0L, None)

  private val key: Gen[String] = Gen.frequency(1 -> Gen.const(null: String), 8 -> Gen.oneOf("a", "b", "c"))

  def recGen(ts: Gen[Option[Long]]): Gen[Rec] = Gen.frequency(
    3 -> (for { k <- key; v <- Gen.choose(0, 999); t <- ts } yield S(k, s"s$v", t)),
    2 -> (for {
      k <- key; v <- Gen.frequency(1 -> Gen.const(null: String), 4 -> Gen.choose(0, 9).map(i => s"t$i")); t <- ts
    } yield T(k, v, t))
  )

  def batchesGen(ts: Gen[Option[Long]], wm: Gen[Option[Long]]): Gen[Seq[MicroBatches.Batch[Rec]]] =
    MicroBatches.gen(recGen(ts), wm)
}
