package org.apache.spark.sql.kstate.processor.window

import scala.collection.mutable

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

/**
 * [[SlidingAggregateProcessor]] against a naive model written from docs/windows.md's sliding
 * rules, sharing no code with the processor: it keeps every accepted record of a key with the
 * close time at its arrival, decides after each record which windows exist (a left or right
 * window of any of the key's records that holds a record and is open now), and computes each
 * emitted window's aggregate from scratch: the key's accepted records inside it that arrived
 * while it was open. Exact BigInt arithmetic (window ends capped at Long.MaxValue, as defined).
 * Random inputs (null keys, null and negative timestamps, out-of-order and late records,
 * watermark advances, timestamps and differences near Long.MaxValue) are cut into random
 * micro-batches: a new processor per batch over one heap store, finish() at the end of each.
 * Each property runs three times: with an order-sensitive aggregator (windows updated per record),
 * and with one that declares itself order-insensitive (windows folded once per batch), where keys
 * with few records fold directly and the rest in fold trees, then with every key in fold trees.
 */
class SlidingPropertySuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  import SlidingPropertySuite._
  import SpanFixtures._

  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 500)

  private def check(
      d: Long,
      grace: Long,
      finalResults: Boolean,
      batches: Seq[Batch],
      aggregator: MergingAggregator[Int, Vector[Int]],
      smallFold: Int = SlidingAggregateProcessor.SmallFold
  ): Unit = {
    val model = new NaiveSliding(d, grace, finalResults)
    val store = new InMemorySessionStore[(String, Boolean), Vector[Int]](identity, identity)
    val counters = SlidingMetrics.newCounters()
    val ctx = s"d $d grace $grace final $finalResults order-insensitive ${aggregator.orderInsensitive} " +
      s"small fold $smallFold; batches $batches"
    drive(
      batches,
      sliding(d, grace, finalResults, store, aggregator, counters, smallFold),
      onWatermark = model.advance,
      onRecord = model.process
    ) { (bi, p, rows) =>
      val expected = model.finish()
      assert(
        mismatch(rows, expected, finalResults).isEmpty,
        s"batch $bi: ${mismatch(rows, expected, finalResults)}; $ctx"
      )
      assert(model.streamTime.forall(_ == BigInt(p.currentStreamTime)), s"stream time, batch $bi; $ctx")
      assert(store.records === model.stored, s"windows and records stored, batch $bi; $ctx")
    }
    import SlidingMetrics._
    assert(counters(LateDropped) === model.late, ctx)
    assert(counters(NullKeys) === model.nullKeys, ctx)
    assert(counters(NullTimestamps) === model.nullTimestamps, ctx)
    assert(counters(Records) === model.records, ctx)
    assert(counters(Created) === model.created, ctx)
    assert(counters(Updates) === model.updates, ctx)
    assert(counters(Closed) === model.closed, ctx)
  }

  // the folded path twice: keys with few records without the fold tree (the default), and every
  // key through the tree (no key is small)
  for (
    (aggregator, smallFold, path) <- Seq(
      (IdsAggregator, SlidingAggregateProcessor.SmallFold, ""),
      (UnorderedIds, SlidingAggregateProcessor.SmallFold, " (order-insensitive: folded per batch)"),
      (UnorderedIds, -1, " (order-insensitive: folded per batch in fold trees)")
    )
  ) {
    test(s"small timestamps, random differences, graces and micro-batches: same output as the naive model$path") {
      forAll(Gen.choose(0L, 6L), Gen.choose(0L, 8L), Gen.oneOf(false, true), batchesGen(smallTs, Gen.const(None))) {
        (d, grace, fin, batches) => check(d, grace, fin, batches, aggregator, smallFold)
      }
    }

    test(s"with watermark-follow advances at batch starts: same output as the naive model$path") {
      val wm = Gen.frequency(3 -> Gen.const(None), 1 -> Gen.choose(-5L, 60L).map(Some(_)))
      forAll(Gen.choose(0L, 6L), Gen.choose(0L, 8L), Gen.oneOf(false, true), batchesGen(smallTs, wm)) {
        (d, grace, fin, batches) => check(d, grace, fin, batches, aggregator, smallFold)
      }
    }

    test(s"extreme timestamps, differences and graces (no overflow): same output as the exact BigInt model$path") {
      val extreme = Gen.oneOf(
        Long.MinValue + 1,
        -1L,
        0L,
        1L,
        2L,
        3L,
        Long.MaxValue / 2,
        Long.MaxValue - 3,
        Long.MaxValue - 2,
        Long.MaxValue - 1,
        Long.MaxValue
      )
      val (ts, span, wm) = extremeInputs(extreme)
      forAll(span, span, Gen.oneOf(false, true), batchesGen(ts, wm)) {
        (d, grace, fin, batches) => check(d, grace, fin, batches, aggregator, smallFold)
      }
    }
  }
}

object SlidingPropertySuite {
  import SpanFixtures._

  val smallTs: Gen[Option[Long]] = Gen.frequency(
    8 -> Gen.choose(0L, 40L).map(Some(_)),
    1 -> Gen.choose(-3L, -1L).map(Some(_)),
    1 -> Gen.const(None)
  )

  def batchesGen(ts: Gen[Option[Long]], wm: Gen[Option[Long]]): Gen[Seq[Batch]] =
    SessionPropertySuite.batchesGen(ts, wm)

  private val Max = BigInt(Long.MaxValue)

  /** [[IdsAggregator]] declaring itself order-insensitive: the outputs compare ids as sets. */
  object UnorderedIds extends MergingAggregator[Int, Vector[Int]] {
    override def initial(): Vector[Int] = IdsAggregator.initial()
    override def add(agg: Vector[Int], record: Int): Vector[Int] = IdsAggregator.add(agg, record)
    override def merge(a: Vector[Int], b: Vector[Int]): Vector[Int] = IdsAggregator.merge(a, b)
    override def orderInsensitive: Boolean = true
  }

  /** A window of the model: whether it changed in this batch and whether it closed. */
  final class Win(var changed: Boolean, var closed: Boolean)

  /**
   * Record by record: null or negative timestamp, then null key, dropped; stream time = max of
   * every timestamp and watermark; close time = stream time - grace; a record is late when
   * ts + d < close time. The windows of a key: the left window [max(0, ts - d)...] and the right
   * window [ts + 1, ...] of each of its records, d wide (end capped at Long.MaxValue); one exists
   * once, at some record's arrival, it holds a record and its end >= close time. At the end of a
   * batch, windows with end < close time close.
   */
  final class NaiveSliding(d: Long, grace: Long, finalResults: Boolean) {
    private val dd = BigInt(d)
    var streamTime: Option[BigInt] = None
    private val recs = mutable.Map.empty[String, Vector[(Int, BigInt, BigInt, Int)]] // id, ts, close at arrival, batch
    private var batch = 0
    private val wins = mutable.Map.empty[(String, BigInt), Win]
    var late, nullKeys, nullTimestamps, records, created, updates, closed = 0L

    private def endOf(start: BigInt): BigInt = (start + dd) min Max
    private def closeTime: Option[BigInt] = streamTime.map(_ - grace)
    private def inside(k: String, start: BigInt) =
      recs.getOrElse(k, Vector.empty).filter(r => start <= r._2 && r._2 <= endOf(start))

    def advance(w: Long): Unit = streamTime = Some(streamTime.fold(BigInt(w))(_ max BigInt(w)))

    def process(r: Rec): Unit = {
      if (r.ts.isEmpty || r.ts.get < 0) { nullTimestamps += 1; return }
      if (r.key.isEmpty) { nullKeys += 1; return }
      records += 1
      val k = r.key.get
      val ts = BigInt(r.ts.get)
      advance(r.ts.get)
      val c = closeTime.get
      if (ts + dd < c) { late += 1; return }
      wins.foreach { case ((wk, s), w) =>
        if (wk == k && !w.closed && s <= ts && ts <= endOf(s) && endOf(s) >= c) { w.changed = true; updates += 1 }
      }
      recs(k) = recs.getOrElse(k, Vector.empty) :+ ((r.id, ts, c, batch))
      val starts = recs(k).flatMap { case (_, t, _, _) =>
        Seq(if (t < dd) BigInt(0) else t - dd) ++ (if (t < Max) Seq(t + 1) else Nil)
      }.distinct
      starts.foreach { s =>
        if (!wins.contains((k, s)) && endOf(s) >= c && inside(k, s).nonEmpty) {
          wins((k, s)) = new Win(changed = true, closed = false)
          created += 1
          updates += inside(k, s).count(_._4 == batch) // this batch's records in it count as updates
        }
      }
    }

    private def row(k: String, s: BigInt): Out = {
      val in = inside(k, s).filter(r => endOf(s) >= r._3)
      Out(k, s.toLong, endOf(s).toLong, Some(in.map(_._1).sorted), in.map(_._2).max.toLong)
    }

    /** Ends a batch: the rows it emits (ids sorted). */
    def finish(): Seq[Out] = {
      val closing = wins.toSeq.filter { case ((_, s), w) => !w.closed && closeTime.exists(endOf(s) < _) }
      closing.foreach { case (_, w) => w.closed = true; closed += 1 }
      val rows =
        if (finalResults) closing.map { case ((k, s), _) => row(k, s) }
        else wins.toSeq.filter(_._2.changed).map { case ((k, s), _) => row(k, s) }
      wins.values.foreach(_.changed = false)
      batch += 1
      rows
    }

    /** Open windows, and records some open window can still hold or start right after. */
    def stored: Long = {
      val c = closeTime
      wins.count(!_._2.closed).toLong +
        recs.values.flatten.count(r => c.forall(cl => ((r._2 + dd + 1) min Max) >= cl)).toLong
    }
  }
}
