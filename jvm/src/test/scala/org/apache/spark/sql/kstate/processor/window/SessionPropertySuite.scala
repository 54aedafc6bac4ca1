package org.apache.spark.sql.kstate.processor.window

import scala.collection.mutable

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

/**
 * [[SessionAggregateProcessor]] against a naive model written from docs/windows.md's session
 * rules, sharing no code with the processor: it keeps every accepted record of a key and, after
 * each record, recomputes the key's open sessions from scratch (its records not in a closed
 * session, sorted, cut wherever two neighbours are more than the gap apart), in exact BigInt
 * arithmetic. Random inputs (null keys and timestamps, out-of-order and late records, watermark
 * advances, timestamps and gaps near the ends of Long) are cut into random micro-batches: a new
 * processor per batch over one heap store, finish() at the end of each.
 */
class SessionPropertySuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  import SessionPropertySuite._
  import SpanFixtures._

  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 500)

  private def check(gap: Long, grace: Long, finalResults: Boolean, batches: Seq[Batch]): Unit = {
    val model = new NaiveSessions(gap, grace, finalResults)
    val store = new InMemorySessionStore[String, Vector[Int]](identity, identity)
    val counters = SessionMetrics.newCounters()
    val ctx = s"gap $gap grace $grace final $finalResults; batches $batches"
    drive(
      batches,
      out =>
        new SessionAggregateProcessor[String, Int, Vector[Int]](
          gap,
          grace,
          finalResults,
          store,
          IdsAggregator,
          out,
          identity,
          counters
        ),
      () => model.startBatch(),
      model.advance,
      model.process
    ) { (bi, p, rows) =>
      val expected = model.finish()
      assert(
        mismatch(rows, expected, finalResults).isEmpty,
        s"batch $bi: ${mismatch(rows, expected, finalResults)}; $ctx"
      )
      val tombstonesFirst = rows.groupBy(_.key).values.forall { rs =>
        !rs.drop(rs.indexWhere(_.ids.isDefined) max 0).exists(_.ids.isEmpty)
      }
      assert(tombstonesFirst, s"a key's tombstones come before its results, batch $bi; $ctx")
      assert(model.streamTime.forall(_ == BigInt(p.currentStreamTime)), s"stream time, batch $bi; $ctx")
      assert(store.records === model.openSessions, s"open sessions stored, batch $bi; $ctx")
    }
    import SessionMetrics._
    assert(counters(LateDropped) === model.late, ctx)
    assert(counters(NullKeys) === model.nullKeys, ctx)
    assert(counters(NullTimestamps) === model.nullTimestamps, ctx)
    assert(counters(Records) === model.records, ctx)
    assert(counters(Merged) === model.merged, ctx)
  }

  test("small timestamps, random gaps and graces and micro-batches: same output as the naive model") {
    forAll(Gen.choose(0L, 6L), Gen.choose(0L, 8L), Gen.oneOf(false, true), batchesGen(smallTs, Gen.const(None))) {
      (gap, grace, fin, batches) => check(gap, grace, fin, batches)
    }
  }

  test("with watermark-follow advances at batch starts: same output as the naive model") {
    val wm = Gen.frequency(3 -> Gen.const(None), 1 -> Gen.choose(-5L, 60L).map(Some(_)))
    forAll(Gen.choose(0L, 6L), Gen.choose(0L, 8L), Gen.oneOf(false, true), batchesGen(smallTs, wm)) {
      (gap, grace, fin, batches) => check(gap, grace, fin, batches)
    }
  }

  test("extreme timestamps, gaps and graces (no overflow): same output as the exact BigInt model") {
    val extreme = Gen.oneOf(
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
    val (ts, span, wm) = extremeInputs(extreme)
    forAll(span, span, Gen.oneOf(false, true), batchesGen(ts, wm)) {
      (gap, grace, fin, batches) => check(gap, grace, fin, batches)
    }
  }
}

object SessionPropertySuite {
  import SpanFixtures._

  val smallTs: Gen[Option[Long]] = Gen.frequency(8 -> Gen.choose(0L, 40L).map(Some(_)), 1 -> Gen.const(None))

  def batchesGen(ts: Gen[Option[Long]], wm: Gen[Option[Long]]): Gen[Seq[Batch]] = {
    val rec = for {
      k <- Gen.frequency(6 -> Gen.oneOf("a", "b", "c").map(Some(_)), 1 -> Gen.const(None))
      t <- ts
    } yield (k, t)
    val batch = for {
      w <- wm
      n <- Gen.frequency(1 -> Gen.const(0), 6 -> Gen.choose(1, 8), 1 -> Gen.choose(9, 25))
      recs <- Gen.listOfN(n, rec)
    } yield (w, recs)
    Gen.choose(1, 6).flatMap(Gen.listOfN(_, batch)).map { bs =>
      var id = 0
      bs.map { case (w, recs) => Batch(w, recs.map { case (k, t) => id += 1; Rec(id, k, t) }) }
    }
  }

  /** A session of the model: its records (id, ts). */
  final case class Sess(recs: Vector[(Int, BigInt)]) {
    def start: BigInt = recs.map(_._2).min
    def end: BigInt = recs.map(_._2).max
    def ids: Vector[Int] = recs.map(_._1).sorted
  }

  /**
   * Record by record: null timestamp, then null key, dropped; stream time = max of every
   * timestamp and watermark; close time = stream time - grace - gap. Before a record, every open
   * session with end <= close time is closed (kept aside, never merged again); the record joins
   * the key's open records if some open session is within the gap of it (|ts - a record of it|
   * <= gap, after the open records are re-clustered) or ts >= close time, else it is late.
   * Sessions close at the end of a batch the same way.
   */
  final class NaiveSessions(gap: Long, grace: Long, finalResults: Boolean) {
    private val g = BigInt(gap)
    var streamTime: Option[BigInt] = None
    private val open = mutable.Map.empty[String, Vector[(Int, BigInt)]] // open records of a key
    private val closedNow = mutable.ArrayBuffer.empty[(String, Sess)] // closed in this batch
    private var atStart: Map[String, Seq[Sess]] = Map.empty
    var late, nullKeys, nullTimestamps, records, merged = 0L

    private def closeTime: Option[BigInt] = streamTime.map(_ - grace - g)

    /** The open records of `key` cut into sessions from scratch. */
    private def sessionsOf(key: String): Seq[Sess] = {
      val sorted = open.getOrElse(key, Vector.empty).sortBy(_._2)
      sorted.foldLeft(List.empty[Vector[(Int, BigInt)]]) {
        case (cur :: done, r) if r._2 - cur.last._2 <= g => (cur :+ r) :: done
        case (acc, r) => Vector(r) :: acc
      }.reverse.map(Sess)
    }

    private def closeSessions(): Unit = closeTime.foreach { c =>
      open.keys.toSeq.foreach { k =>
        val (gone, stay) = sessionsOf(k).partition(_.end <= c)
        closedNow ++= gone.map(k -> _)
        open(k) = stay.flatMap(_.recs).toVector
      }
    }

    /** Remembers the open sessions at the start of a batch (the stored ones). */
    def startBatch(): Unit = atStart = open.keys.map(k => k -> sessionsOf(k)).toMap

    def advance(w: Long): Unit = streamTime = Some(streamTime.fold(BigInt(w))(_ max BigInt(w)))

    def process(r: Rec): Unit = {
      if (r.ts.isEmpty) { nullTimestamps += 1; return }
      if (r.key.isEmpty) { nullKeys += 1; return }
      records += 1
      val k = r.key.get
      val ts = BigInt(r.ts.get)
      closeSessions()
      advance(r.ts.get)
      val near = sessionsOf(k).count(s => s.recs.exists(x => (x._2 - ts).abs <= g))
      if (near == 0 && ts < closeTime.get) { late += 1; return }
      if (near > 1) merged += near - 1
      open(k) = open.getOrElse(k, Vector.empty) :+ (r.id -> ts)
    }

    /** Ends a batch: the rows it emits (ids sorted). */
    def finish(): Seq[Out] = {
      val before = atStart
      closeSessions()
      def row(k: String, s: Sess, tombstone: Boolean) =
        Out(k, s.start.toLong, s.end.toLong, if (tombstone) None else Some(s.ids), s.end.toLong)
      val rows = if (finalResults) closedNow.map { case (k, s) => row(k, s, tombstone = false) }.toSeq
      else {
        val keys = (before.keySet ++ open.keySet ++ closedNow.map(_._1)).toSeq
        keys.flatMap { k =>
          val was = before.getOrElse(k, Nil)
          val now = sessionsOf(k) ++ closedNow.filter(_._1 == k).map(_._2)
          was.filterNot(s => now.exists(n => n.start == s.start && n.end == s.end)).map(row(k, _, tombstone = true)) ++
            now.filterNot(n => was.exists(_.ids == n.ids)).map(row(k, _, tombstone = false))
        }
      }
      closedNow.clear()
      rows
    }

    def openSessions: Long = open.keys.toSeq.map(k => sessionsOf(k).size.toLong).sum
  }
}
