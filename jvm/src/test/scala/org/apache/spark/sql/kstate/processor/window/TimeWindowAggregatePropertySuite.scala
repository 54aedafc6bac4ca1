package org.apache.spark.sql.kstate.processor.window

import scala.collection.mutable
import scala.collection.mutable.ArrayBuffer

import io.kstate.KStateException
import io.kstate.suppress.WhenFull
import org.apache.spark.sql.kstate.processor.suppress.BufferLimits
import org.apache.spark.sql.kstate.processor.MicroBatches
import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

/**
 * [[TimeWindowAggregateProcessor]] against a naive model written independently here: windows of
 * a timestamp enumerated in exact BigInt arithmetic, every window's full list of aggregated
 * values, stream time and close time in BigInt. Random records are cut into random micro-batches:
 * a new processor per batch over one [[InMemoryTimeWindowState]], an optional watermark advance
 * at the start of each batch, finish() at the end of each; with and without final results
 * (shut down when the open windows pass a record limit).
 */
class TimeWindowAggregatePropertySuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  import TimeWindowAggregatePropertySuite._

  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 500)

  private def check(cfg: Cfg, batches: Seq[Batch]): Unit = {
    val model = new NaiveWindows(cfg)
    val state = new InMemoryTimeWindowState[String, Vector[Int]](identity, (k, a) => k.length.toLong + a.length)
    val counters = TimeWindowAggregateMetrics.newCounters()
    def ctx(bi: Int, what: String) = s"batch $bi $what; $cfg; batches $batches"
    batches.zipWithIndex.foreach { case (batch, bi) =>
      val got = ArrayBuffer.empty[Result]
      val sink = new WindowResults[String, Vector[Int]] {
        override def result(key: String, start: Long, end: Long, agg: Vector[Int], maxTs: Long): Unit =
          got += Result(key, start, end, agg, maxTs)
      }
      val p = new TimeWindowAggregateProcessor[Int, String, Vector[Int]](
        cfg.windows,
        ListAggregator,
        state,
        identity,
        cfg.finalResults,
        "op",
        sink,
        counters
      )
      batch.watermark.foreach { w => p.advanceStreamTime(w); model.advance(w) }
      batch.recs.zipWithIndex.foreach { case (r, ri) =>
        model.process(r)
        p.process(r.value, r.key, r.key == null, r.ts.getOrElse(0L), r.ts.isEmpty)
        assert(BigInt(p.currentStreamTime) === model.streamTime.max(BigInt(Long.MinValue)), ctx(bi, s"record $ri"))
      }
      val expected = model.finish()
      val thrown =
        try { p.finish(); None }
        catch { case e: KStateException => Some(e.errorClass) }
      expected match {
        case None =>
          assert(thrown === Some("KSTATE_BUFFER_FULL"), ctx(bi, "finish"))
          return
        case Some(results) =>
          assert(thrown === None, ctx(bi, "finish"))
          assert(got.sortBy(_.sortKey) === results.sortBy(_.sortKey), ctx(bi, "results"))
          if (cfg.finalResults.isDefined) {
            assert(got.map(_.end) === got.map(_.end).sorted, ctx(bi, "final results in end order"))
          }
      }
      assert(state.records === model.openWindows, ctx(bi, "open windows"))
      assert(counters(TimeWindowAggregateMetrics.BufferRecords) === model.openWindows)
      assert(BigInt(p.outputTimeFloor) === model.firstOpenEnd, ctx(bi, "output time floor"))
    }
    import TimeWindowAggregateMetrics._
    assert(counters(Records) === model.records)
    assert(counters(NullKeys) === model.nullKeys)
    assert(counters(NullTimestamps) === model.nullTimestamps)
    assert(counters(Updates) === model.updates)
    assert(counters(LateDropped) === model.late)
    assert(counters(Closed) === model.closed)
    assert(counters(Emitted) === model.emitted)
    // lateness saturates at Long.MaxValue, per record and in the total
    assert(BigInt(counters(LatenessTotal)) === model.latenessTotal.min(BigInt(Long.MaxValue)))
    assert(BigInt(counters(LatenessMax)) === model.latenessMax.min(BigInt(Long.MaxValue)))
  }

  private val small = for {
    size <- Gen.choose(1L, 12L)
    advance <- Gen.choose(1L, size)
    grace <- Gen.choose(0L, 10L)
  } yield TimeWindowSpec(size, advance, grace)

  test("updates: random records and batch boundaries, same results as the naive model") {
    forAll(cfgGen(small), batchesGen(smallTs, smallWm)) { (c, b) => check(c, b) }
  }

  test("final results: random records and batch boundaries, same results as the naive model") {
    forAll(cfgGen(small, finalOnly = true), batchesGen(smallTs, smallWm)) { (c, b) => check(c, b) }
  }

  test("one batch vs one record per batch: identical windows") {
    forAll(cfgGen(small), Gen.listOf(recGen(smallTs))) { (c, recs) =>
      check(c, Seq(Batch(None, recs)))
      check(c, recs.map(r => Batch(None, Seq(r))))
    }
  }

  test("extreme timestamps, sizes and graces (no overflow): same results as the exact BigInt model") {
    val extreme = Gen.oneOf(
      Long.MinValue + 1,
      Long.MinValue + 7,
      -3L,
      -1L,
      0L,
      1L,
      Long.MaxValue - 9,
      Long.MaxValue - 1,
      Long.MaxValue
    )
    val ts = Gen.frequency(8 -> extreme.map(Some(_)), 1 -> Gen.const(None))
    val wm = Gen.frequency(3 -> Gen.const(None), 1 -> extreme.map(Some(_)))
    val windows = for {
      size <- Gen.oneOf(1L, 4L, 10L, Long.MaxValue / 2)
      advance <- Gen.oneOf(1L, 2L, size / 2 + 1, size)
      grace <- Gen.oneOf(0L, 1L, Long.MaxValue / 2, Long.MaxValue)
    } yield TimeWindowSpec(size, advance.min(size), grace)
    forAll(cfgGen(windows.filter(w => w.sizeMs / w.advanceMs <= 12)), batchesGen(ts, wm)) { (c, b) => check(c, b) }
  }
}

object TimeWindowAggregatePropertySuite {

  /** Aggregates are the list of values aggregated, in order: what was folded is checked exactly. */
  object ListAggregator extends Aggregator[Int, Vector[Int]] {
    override def initial(): Vector[Int] = Vector.empty
    override def add(agg: Vector[Int], record: Int): Vector[Int] = agg :+ record
  }

  final case class Cfg(windows: TimeWindowSpec, finalResults: Option[BufferLimits])
  final case class Rec(key: String, value: Int, ts: Option[Long]) {
    override def toString: String = s"${Option(key).getOrElse("null")}=$value@${MicroBatches.showTs(ts)}"
  }
  type Batch = MicroBatches.Batch[Rec]
  val Batch: MicroBatches.Batch.type = MicroBatches.Batch
  final case class Result(key: String, start: Long, end: Long, values: Vector[Int], maxTs: Long) {
    def sortKey: (String, Long) = (key, start)
  }

  val smallTs: Gen[Option[Long]] = Gen.frequency(8 -> Gen.choose(-3L, 40L).map(Some(_)), 1 -> Gen.const(None))
  val smallWm: Gen[Option[Long]] = Gen.frequency(3 -> Gen.const(None), 1 -> Gen.choose(-5L, 60L).map(Some(_)))

  def cfgGen(windows: Gen[TimeWindowSpec], finalOnly: Boolean = false): Gen[Cfg] = for {
    w <- windows
    limits <- Gen.oneOf(
      BufferLimits(),
      BufferLimits(maxRecords = 3),
      BufferLimits(maxRecords = 6),
      BufferLimits(maxRecords = 2, whenFull = WhenFull.SpillToDisk)
    )
    fin <- if (finalOnly) Gen.const(true) else Gen.oneOf(true, false)
  } yield Cfg(w, if (fin) Some(limits) else None)

  def recGen(ts: Gen[Option[Long]]): Gen[Rec] = for {
    k <- Gen.frequency(6 -> Gen.oneOf("a", "b", "c"), 1 -> Gen.const(null: String))
    v <- Gen.choose(0, 99)
    t <- ts
  } yield Rec(k, v, t)

  def batchesGen(ts: Gen[Option[Long]], wm: Gen[Option[Long]]): Gen[Seq[Batch]] = MicroBatches.gen(recGen(ts), wm)

  /**
   * Kafka's time-window aggregation, record by record, in BigInt. Windows of ts: every
   * k * advance with k * advance <= ts < k * advance + size, not before Long.MinValue, and (as
   * in Kafka) not before 0 when ts >= 0; when ts's own aligned start lies before Long.MinValue,
   * the one window [Long.MinValue, Long.MinValue + size). Ends saturate at Long.MaxValue. A window
   * is late for a record when end <= stream time - grace; at the end of a batch it closes when
   * end <= stream time - grace and end < Long.MaxValue (kstate saturates the bound, so a window
   * ending at Long.MaxValue never closes).
   */
  final class NaiveWindows(cfg: Cfg) {
    private val w = cfg.windows
    private val Min = BigInt(Long.MinValue)
    private val Max = BigInt(Long.MaxValue)
    private val open = mutable.Map.empty[(String, Long), (Vector[Int], Long)]
    private val changed = mutable.Set.empty[(String, Long)]
    var streamTime: BigInt = Min - 1 // unknown: below every timestamp
    var records, nullKeys, nullTimestamps, updates, late, closed, emitted = 0L
    var latenessTotal, latenessMax = BigInt(0)

    def advance(t: Long): Unit = streamTime = streamTime.max(BigInt(t))

    private def starts(ts: Long): Seq[Long] = {
      val t = BigInt(ts)
      val adv = BigInt(w.advanceMs)
      def floorDiv(a: BigInt, b: BigInt): BigInt = { val q = a / b; if (a < 0 && q * b != a) q - 1 else q }
      val last = floorDiv(t, adv) * adv
      if (last < Min) return Seq(Long.MinValue)
      val first = floorDiv(t - w.sizeMs, adv) + 1
      (first to floorDiv(t, adv)).map(_ * adv).filter(s => s >= Min && (ts < 0 || s >= 0)).map(_.toLong)
    }
    private def end(start: Long): Long = (BigInt(start) + w.sizeMs).min(Max).toLong
    private def closeTime: BigInt = streamTime - w.graceMs

    def process(r: Rec): Unit = {
      if (r.ts.isEmpty) { nullTimestamps += 1; return }
      if (r.key == null) { nullKeys += 1; return }
      val ts = r.ts.get
      if (streamTime >= Min && BigInt(ts) < streamTime) {
        val l = streamTime - ts
        latenessTotal += l
        latenessMax = latenessMax.max(l)
      }
      records += 1
      advance(ts)
      starts(ts).foreach { s =>
        if (BigInt(end(s)) <= closeTime) late += 1
        else {
          val (vs, maxTs) = open.getOrElse((r.key, s), (Vector.empty[Int], ts))
          open((r.key, s)) = (vs :+ r.value, maxTs.max(ts))
          changed += ((r.key, s))
          updates += 1
        }
      }
    }

    /** The batch's results, or None when it must fail with a full buffer. */
    def finish(): Option[Seq[Result]] = {
      val closing = open.keys.filter { case (_, s) => BigInt(end(s)) <= closeTime && end(s) < Long.MaxValue }.toSet
      def result(ks: (String, Long)): Result = { val (vs, m) = open(ks); Result(ks._1, ks._2, end(ks._2), vs, m) }
      val results = (if (cfg.finalResults.isDefined) closing.toSeq else changed.toSeq).map(result)
      closing.foreach(open -= _)
      closed += closing.size
      changed.clear()
      emitted += results.length
      cfg.finalResults match {
        case Some(l) if l.whenFull == WhenFull.ShutDown && open.size > l.maxRecords => None
        case _ => Some(results)
      }
    }

    def openWindows: Long = open.size.toLong

    /** close time + 1 (saturating); Long.MinValue while stream time is unknown or saturates there. */
    def firstOpenEnd: BigInt = if (closeTime <= Min) Min else (closeTime + 1).min(Max)
  }
}
