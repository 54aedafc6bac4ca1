package org.apache.spark.sql.kstate.processor.suppress

import io.kstate.suppress.WhenFull

import scala.collection.mutable
import scala.collection.mutable.ArrayBuffer

import io.kstate.KStateException
import org.apache.spark.sql.kstate.processor.MicroBatches
import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

/**
 * [[SuppressProcessor]] against a naive model of KIP-328's suppress written independently here:
 * a map key -> (value, buffer time, ts), stream time and expiry in exact BigInt arithmetic, and
 * the buffer's limits, emitting in Kafka's order (buffer time, then key). Random records are cut
 * into random micro-batches: a new processor per batch over one [[InMemorySuppressBuffer]],
 * stream time carried between them as the exec persists it, an optional watermark advance at
 * the start of each batch, finish() at the end of each. Both variants, all three full policies.
 */
class SuppressPropertySuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  import SuppressPropertySuite._

  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 500)

  private def check(cfg: Cfg, batches: Seq[Batch]): Unit = {
    val model = new NaiveSuppress(cfg)
    val buffer = new InMemorySuppressBuffer[String, String]("op", cfg.limits, recordBytes)
    val counters = SuppressMetrics.newCounters()
    var streamTime = Long.MinValue
    var expEmitted, expLate, expNullKeys, expNullTs, expReplaced = 0L
    def ctx(bi: Int, what: String) = s"batch $bi $what; $cfg; batches $batches"
    batches.zipWithIndex.foreach { case (batch, bi) =>
      val p = new SuppressProcessor[String, String, SuppressedRecord[String, String]](
        buffer,
        cfg.limitMs,
        cfg.untilWindowCloses,
        streamTime,
        counters
      )
      batch.watermark.foreach { w => p.advanceStreamTime(w); model.advance(w) }
      batch.recs.zipWithIndex.foreach { case (r, ri) =>
        val got = ArrayBuffer.empty[Out]
        val expected = model.process(r)
        val thrown =
          try {
            p.process(
              r.key,
              r.key == null,
              r.value,
              r.ts.getOrElse(0L),
              r.ts.isEmpty,
              r.bufferTime(cfg).getOrElse(0L),
              r.bufferTime(cfg).isEmpty,
              e => got += Out(e.key, e.value, e.bufferTime, e.recordTime)
            )
            None
          } catch { case e: KStateException => Some(e) }
        expected match {
          case Left(Full) =>
            assert(thrown.map(_.errorClass) === Some("KSTATE_BUFFER_FULL"), ctx(bi, s"record $ri $r"))
            return // the batch fails: nothing after it is committed
          case Right(step) =>
            assert(thrown.isEmpty, ctx(bi, s"record $ri $r"))
            assert(got.toSeq === step.emitted, ctx(bi, s"record $ri $r: emitted"))
            expEmitted += step.emitted.length
            step.kind match {
              case Late => expLate += 1
              case NullKey => expNullKeys += 1
              case NullTime => expNullTs += 1
              case Replaced => expReplaced += 1
              case Buffered =>
            }
        }
        assert(BigInt(p.currentStreamTime) === model.streamTime.max(BigInt(Long.MinValue)), ctx(bi, s"record $ri"))
      }
      val got = ArrayBuffer.empty[Out]
      val expected = model.finish()
      p.finish(e => got += Out(e.key, e.value, e.bufferTime, e.recordTime))
      assert(got.toSeq === expected, ctx(bi, "finish: emitted"))
      expEmitted += expected.length
      assert(buffer.numRecords === model.records, ctx(bi, "records"))
      assert(buffer.numBytes === model.bytes, ctx(bi, "bytes"))
      assert(counters(SuppressMetrics.BufferRecords) === model.records)
      if (cfg.untilWindowCloses) assert(BigInt(p.outputTimeFloor) === model.outputTimeFloor, ctx(bi, "floor"))
      streamTime = p.currentStreamTime
    }
    assert(counters(SuppressMetrics.Emitted) === expEmitted)
    assert(counters(SuppressMetrics.LateDropped) === expLate)
    assert(counters(SuppressMetrics.NullKeys) === expNullKeys)
    assert(counters(SuppressMetrics.NullTimestamps) === expNullTs)
    assert(counters(SuppressMetrics.SuppressedUpdates) === expReplaced)
    assert(counters(SuppressMetrics.EarlyEvictions) === model.earlyEvictions)
  }

  test("until time limit: random records and batch boundaries, same emissions as the naive model") {
    forAll(cfgGen(untilWindowCloses = false, Gen.choose(0L, 15L)), batchesGen(smallTs, smallWm)) { (c, b) =>
      check(c, b)
    }
  }

  test("until window closes: random records and batch boundaries, same emissions as the naive model") {
    forAll(cfgGen(untilWindowCloses = true, Gen.choose(0L, 15L)), batchesGen(smallTs, smallWm)) { (c, b) =>
      check(c, b)
    }
  }

  test("one batch vs one record per batch: identical emissions") {
    forAll(cfgGen(untilWindowCloses = true, Gen.choose(0L, 15L)), Gen.listOf(recGen(smallTs))) { (c, recs) =>
      check(c, Seq(Batch(None, recs)))
      check(c, recs.map(r => Batch(None, Seq(r))))
    }
  }

  test("extreme timestamps and limits (no overflow): same emissions as the exact BigInt model") {
    val extreme = Gen.oneOf(
      Long.MinValue + 1,
      Long.MinValue + 2,
      -1L,
      0L,
      1L,
      Long.MaxValue - 6,
      Long.MaxValue - 1,
      Long.MaxValue
    )
    val ts = Gen.frequency(8 -> extreme.map(Some(_)), 1 -> Gen.const(None))
    val wm = Gen.frequency(3 -> Gen.const(None), 1 -> extreme.map(Some(_)))
    val limit = Gen.oneOf(0L, 1L, Long.MaxValue / 2, Long.MaxValue)
    forAll(Gen.oneOf(true, false).flatMap(u => cfgGen(u, limit)), batchesGen(ts, wm)) { (c, b) =>
      check(c, b)
    }
  }
}

object SuppressPropertySuite {

  /** A record's bytes in the test buffer (the model counts the same way). */
  val recordBytes: (String, String) => Long = (k, v) => k.length.toLong + v.length + 16

  final case class Cfg(untilWindowCloses: Boolean, limitMs: Long, limits: BufferLimits)

  final case class Rec(key: String, value: String, ts: Option[Long]) {

    /** Window end: the record's 5 ms tumbling window (saturating), or its timestamp. */
    def bufferTime(c: Cfg): Option[Long] =
      if (!c.untilWindowCloses) ts
      else ts.filter(_ % 7 != 3).map(t => {
        val s = Math.floorDiv(t, 5L) * 5L; if (s > Long.MaxValue - 5) Long.MaxValue else s + 5
      })
    override def toString: String = s"${Option(key).getOrElse("null")}=$value@${MicroBatches.showTs(ts)}"
  }
  type Batch = MicroBatches.Batch[Rec]
  val Batch: MicroBatches.Batch.type = MicroBatches.Batch
  final case class Out(key: String, value: String, bufferTime: Long, ts: Long)

  sealed trait Kind
  case object Late extends Kind
  case object NullKey extends Kind
  case object NullTime extends Kind
  case object Replaced extends Kind
  case object Buffered extends Kind
  case object Full
  final case class Step(kind: Kind, emitted: Seq[Out])

  val smallTs: Gen[Option[Long]] = Gen.frequency(8 -> Gen.choose(0L, 40L).map(Some(_)), 1 -> Gen.const(None))
  val smallWm: Gen[Option[Long]] = Gen.frequency(3 -> Gen.const(None), 1 -> Gen.choose(-5L, 60L).map(Some(_)))

  def cfgGen(untilWindowCloses: Boolean, limit: Gen[Long]): Gen[Cfg] = for {
    l <- limit
    maxRecords <- Gen.oneOf(1L, 2L, 3L, Long.MaxValue, Long.MaxValue)
    maxBytes <- Gen.oneOf(40L, 60L, Long.MaxValue, Long.MaxValue)
    whenFull <- Gen.oneOf(WhenFull.EmitEarly, WhenFull.ShutDown, WhenFull.SpillToDisk)
  } yield Cfg(untilWindowCloses, l, BufferLimits(maxRecords, maxBytes, whenFull))

  def recGen(ts: Gen[Option[Long]]): Gen[Rec] = for {
    k <- Gen.frequency(6 -> Gen.oneOf("a", "b", "c", "dd"), 1 -> Gen.const(null: String))
    v <- Gen.oneOf("x", "yy", "zzzzzz")
    t <- ts
  } yield Rec(k, v, t)

  def batchesGen(ts: Gen[Option[Long]], wm: Gen[Option[Long]]): Gen[Seq[Batch]] = MicroBatches.gen(recGen(ts), wm)

  /**
   * KIP-328's suppress, record by record: stream time is the max of every timestamp of a record
   * with a key and buffer time, and of every watermark; expiry = stream time − limit, where an
   * expiry at or below Long.MinValue (unknown stream time included) expires nothing. A key's
   * buffer time is fixed when it enters the buffer; emission order is (buffer time, key).
   */
  final class NaiveSuppress(cfg: Cfg) {
    private val entries = mutable.Map.empty[String, (String, Long, Long)] // key -> (value, buffer time, ts)
    var streamTime: BigInt = BigInt(Long.MinValue) - 1 // below every timestamp: unknown
    var earlyEvictions = 0L
    private val min = BigInt(Long.MinValue)

    def advance(w: Long): Unit = streamTime = streamTime.max(BigInt(w))
    private def expiry: Option[BigInt] = Some(streamTime - cfg.limitMs).filter(_ > min)
    def records: Long = entries.size.toLong
    def bytes: Long = entries.map { case (k, (v, _, _)) => recordBytes(k, v) }.sum
    private def oldestFirst: Seq[(String, (String, Long, Long))] = entries.toSeq.sortBy { case (k, (_, bt, _)) =>
      (bt, k)
    }
    private def out(e: (String, (String, Long, Long))): Out = Out(e._1, e._2._1, e._2._2, e._2._3)
    private def over: Boolean = records > cfg.limits.maxRecords || bytes > cfg.limits.maxBytes

    private def evict(): Either[Full.type, Seq[Out]] = {
      val emitted = ArrayBuffer.empty[Out]
      expiry.foreach(e => oldestFirst.takeWhile(_._2._2 <= e).foreach { x => emitted += out(x); entries -= x._1 })
      cfg.limits.whenFull match {
        case WhenFull.EmitEarly =>
          while (over) { val x = oldestFirst.head; emitted += out(x); entries -= x._1; earlyEvictions += 1 }
        case WhenFull.ShutDown if over => return Left(Full)
        case _ =>
      }
      Right(emitted.toSeq)
    }

    def process(r: Rec): Either[Full.type, Step] = {
      if (r.ts.isEmpty) return Right(Step(NullTime, Nil))
      if (r.key == null) return Right(Step(NullKey, Nil))
      val bt = r.bufferTime(cfg) match {
        case None => return Right(Step(NullTime, Nil))
        case Some(b) => b
      }
      advance(r.ts.get)
      if (cfg.untilWindowCloses && expiry.exists(bt <= _)) return Right(Step(Late, Nil))
      val kind = entries.get(r.key) match {
        case Some((_, oldBt, _)) => entries(r.key) = (r.value, oldBt, r.ts.get); Replaced
        case None => entries(r.key) = (r.value, bt, r.ts.get); Buffered
      }
      evict().map(Step(kind, _))
    }

    def finish(): Seq[Out] = evict().getOrElse(throw new IllegalStateException("full at finish"))

    /** The smallest window end a later emission can have: expiry + 1, saturating. */
    def outputTimeFloor: BigInt = expiry match {
      case None => min
      case Some(e) => (e + 1).min(BigInt(Long.MaxValue))
    }
  }
}
