package org.apache.spark.sql.kstate.processor.join

import scala.collection.mutable.ArrayBuffer

import io.kstate.KStateException
import org.apache.spark.sql.kstate.processor.table.InMemoryTableState
import org.scalatest.funsuite.AnyFunSuite

/**
 * Unit tests of [[StreamTableJoinProcessor]] over [[InMemoryTableState]] and
 * [[InMemoryStreamTableJoinBuffer]] (no Spark): KIP-914's stream–table join examples, KIP-923's
 * grace example, one test per numbered rule, and the configuration errors of
 * [[StreamTableJoinSpec]].
 */
class StreamTableJoinProcessorSuite extends AnyFunSuite {
  import StreamTableJoinMetrics._
  import StreamTableJoinProcessorSuite._

  // ---- KIP-914 --------------------------------------------------------------------------------

  test(
    "KIP-914: an out-of-order stream record joins the versioned table as of its timestamp, the unversioned one's latest"
  ) {
    for (versioned <- Seq(true, false)) {
      val h = new Harness(left = false, retention = if (versioned) Some(100L) else None)
      h.table("k", "a0", 0L)
      h.table("k", "a5", 5L)
      h.stream("k", "s3", 3L) // out of order: older than the table's latest version
      h.stream("k", "s7", 7L)
      val expected = if (versioned) Seq(("s3", "a0", 3L), ("s7", "a5", 7L)) else Seq(("s3", "a5", 3L), ("s7", "a5", 7L))
      assert(h.out.toSeq === expected, s"versioned=$versioned")
    }
  }

  test("KIP-914: unversioned get(key) is the latest by offset, versioned get(key, ts) the latest by timestamp") {
    for (versioned <- Seq(true, false)) {
      val h = new Harness(left = false, retention = if (versioned) Some(100L) else None)
      h.table("k", "v10", 10L)
      h.table("k", "v5", 5L) // out of order on the table side
      h.stream("k", "s", 20L)
      assert(h.out.toSeq === Seq(("s", if (versioned) "v10" else "v5", 20L)), s"versioned=$versioned")
    }
  }

  test(
    "KIP-914: a stream record older than the history retention finds nothing: inner emits nothing, left emits null"
  ) {
    for (left <- Seq(false, true)) {
      val h = new Harness(left = left, retention = Some(10L))
      h.table("k", "v0", 0L)
      h.table("k", "v20", 20L) // table stream time 20: as-of lookups before 20 - 10 = 10 find nothing
      h.stream("k", "s5", 5L)
      h.stream("k", "s10", 10L) // exactly at the retention bound: still found
      val expected = (if (left) Seq(("s5", null, 5L)) else Nil) :+ (("s10", "v0", 10L))
      assert(h.out.toSeq === expected, s"left=$left")
      assert(h.counters(LookupsPastRetention) === 1)
      assert(h.counters(Lookups) === 2)
      assert(h.counters(NoMatchDropped) === (if (left) 0 else 1))
      assert(h.counters(UnmatchedResults) === (if (left) 1 else 0))
    }
  }

  test(
    "rule 6: past the history retention the key's latest version still answers when it is old enough (Kafka's store)"
  ) {
    val h = new Harness(left = true, retention = Some(10L))
    h.table("k", "v", 0L)
    h.table("j", "w", 100L) // table stream time 100: lookups before 90 are past the retention
    h.stream("k", "s50", 50L) // k's latest version v@0 is valid at 50
    h.table("k", "x", 95L)
    h.stream("k", "t50", 50L) // k's latest is now x@95: v may be gone, nothing
    h.table("j", null, 101L)
    h.stream("j", "u60", 60L) // j's latest is a tombstone
    assert(h.out.toSeq === Seq(("s50", "v", 50L), ("t50", null, 50L), ("u60", null, 60L)))
    assert(h.counters(LookupsPastRetention) === 3)
  }

  // ---- KIP-923 --------------------------------------------------------------------------------

  test("KIP-923: with a grace period, a table update that arrives after the stream record but is older still counts") {
    val withoutGrace = new Harness(left = true, retention = Some(100L))
    val withGrace = new Harness(left = true, retention = Some(100L), grace = Some(5L))
    for (h <- Seq(withoutGrace, withGrace)) {
      h.table("k", "old", 0L)
      h.stream("k", "click", 10L)
      h.table("k", "new", 8L) // arrives later, valid from before the click
      h.stream("k", "later", 15L) // stream time 15 >= 10 + 5: the click leaves the buffer
    }
    assert(withoutGrace.out.toSeq === Seq(("click", "old", 10L), ("later", "new", 15L)))
    assert(withGrace.out.toSeq === Seq(("click", "new", 10L)), "later waits until stream time 20")
    assert(withGrace.counters(Buffered) === 2 && withGrace.counters(Released) === 1)
  }

  // ---- stream side ----------------------------------------------------------------------------

  test(
    "rule 1: null timestamp: inner drops it, left emits it at once with null; neither buffers it nor moves stream time"
  ) {
    for (left <- Seq(false, true)) {
      val h = new Harness(left = left, retention = Some(100L), grace = Some(10L))
      h.table("k", "v", 0L)
      h.stream("k", "s", 50L)
      h.p.processStream("k", false, "nullTs", 999L, tsIsNull = true, h.emit)
      h.p.processStream(null, true, "both", 999L, tsIsNull = true, h.emit)
      assert(h.p.currentStreamTime === 50L)
      assert(h.out.toSeq === (if (left) Seq(("nullTs", null, 999L), ("both", null, 999L)) else Nil))
      assert(h.counters(if (left) NullTimestampsForwarded else NullTimestampsDropped) === 2)
      assert(h.counters(Lookups) === 0)
      h.finish()
      assert(h.counters(BufferRecords) === 1, "only s is buffered")
    }
  }

  test(
    "rule 2: null key: inner drops it, left emits it at once with null, also with a grace period (Kafka's buffer would fail)"
  ) {
    for (left <- Seq(false, true); grace <- Seq(None, Some(10L))) {
      val h = new Harness(left = left, retention = Some(100L), grace = grace)
      h.table("k", "v", 0L)
      h.stream(null, "s", 5L)
      assert(h.out.toSeq === (if (left) Seq(("s", null, 5L)) else Nil), s"left=$left grace=$grace")
      assert(h.counters(if (left) NullKeysForwarded else NullKeysDropped) === 1)
      assert(h.counters(Buffered) === 0 && h.counters(Lookups) === 0)
      assert(h.p.currentStreamTime === Long.MinValue, "stream time unchanged")
    }
  }

  test("rule 3: without a grace period every stream record is joined at once, in arrival order") {
    val h = new Harness(left = false, retention = Some(100L))
    h.table("k", "v", 0L)
    h.stream("k", "s9", 9L)
    h.stream("k", "s1", 1L)
    assert(h.out.toSeq === Seq(("s9", "v", 9L), ("s1", "v", 1L)))
    assert(h.p.currentStreamTime === Long.MinValue, "no buffer, no stream time")
  }

  test(
    "rule 4: a record older than buffer stream time - grace is joined at once, not dropped; at the bound it is buffered"
  ) {
    val h = new Harness(left = true, retention = Some(100L), grace = Some(10L))
    h.table("k", "v", 0L)
    h.stream("k", "s50", 50L)
    h.stream("k", "s39", 39L) // 39 < 50 - 10: late, joined at once
    h.stream("k", "s40", 40L) // 40 = 50 - 10: buffered, and due at once
    assert(h.out.toSeq === Seq(("s39", "v", 39L), ("s40", "v", 40L)))
    assert(h.counters(LateJoinedAtOnce) === 1)
    assert(h.counters(Buffered) === 2 && h.counters(Released) === 1)
  }

  test("rule 4: table updates, dropped and late records do not move the buffer's stream time") {
    val h = new Harness(left = false, retention = Some(1000L), grace = Some(10L))
    h.table("k", "v", 500L) // the table's stream time is 500
    h.stream("k", "s5", 5L)
    assert(h.p.currentStreamTime === 5L, "a table update does not move the join's stream time")
    h.stream(null, "nk", 400L)
    assert(h.p.currentStreamTime === 5L, "nor does a dropped record")
    assert(h.out.isEmpty && h.counters(Buffered) === 1, "s5 waits for stream time 15")
  }

  test("rule 5: due records leave oldest first: by timestamp, then key, then arrival") {
    val h = new Harness(left = true, retention = Some(100L), grace = Some(10L))
    h.stream("b", "b5", 5L)
    h.stream("a", "a5-1", 5L)
    h.stream("c", "c3", 3L)
    h.stream("a", "a5-2", 5L)
    h.stream("a", "a7", 7L)
    assert(h.out.isEmpty)
    h.stream("z", "z15", 15L) // stream time 15: due are records at or before 5
    assert(h.out.map(_._1).toSeq === Seq("c3", "a5-1", "a5-2", "b5"))
    assert(h.counters(Released) === 4)
    h.stream("z", "z17", 17L)
    assert(h.out.map(_._1).toSeq.drop(4) === Seq("a7"))
  }

  test("rule 5: a buffered record joins the table as it is when it leaves, as of its own timestamp") {
    val h = new Harness(left = false, retention = Some(100L), grace = Some(10L))
    h.table("k", "v0", 0L)
    h.stream("k", "s", 20L)
    h.table("k", "v30", 30L) // newer than the record: not its version
    h.table("k", "v15", 15L) // older, arrives later: its version
    h.table("k", null, 18L) // ... until this tombstone
    h.table("k", "v19", 19L)
    h.stream("k", "t", 30L)
    assert(h.out.toSeq === Seq(("s", "v19", 20L)))
  }

  test("rule 6: a tombstone removes the match: inner drops the record, left emits null") {
    for (left <- Seq(false, true); versioned <- Seq(false, true)) {
      val h = new Harness(left = left, retention = if (versioned) Some(100L) else None)
      h.table("k", "v", 1L)
      h.table("k", null, 2L)
      h.stream("k", "s", 3L)
      h.stream("x", "nomatch", 3L)
      assert(
        h.out.toSeq === (if (left) Seq(("s", null, 3L), ("nomatch", null, 3L)) else Nil),
        s"left=$left versioned=$versioned"
      )
      assert(h.counters(JoinResults) === (if (left) 2 else 0))
      assert(h.counters(NoMatchDropped) === (if (left) 0 else 2))
    }
  }

  // ---- table side -----------------------------------------------------------------------------

  test("rule 7: table updates with a null key or null timestamp are dropped and counted") {
    val h = new Harness(left = true, retention = None)
    h.p.processTable(null, true, "v", 1L, tsIsNull = false)
    h.p.processTable("k", false, "v", 0L, tsIsNull = true)
    h.stream("k", "s", 5L)
    assert(h.out.toSeq === Seq(("s", null, 5L)))
    assert(h.counters(TableNullKeysDropped) === 1 && h.counters(TableNullTimestampsDropped) === 1)
    assert(h.counters(TableUpdates) === 0)
  }

  test(
    "rule 8: a versioned table update older than its stream time - its grace is not stored; older ones go to history"
  ) {
    val h = new Harness(left = true, retention = Some(100L), tableGrace = Some(5L))
    h.table("k", "v20", 20L)
    h.table("k", "v16", 16L) // 16 >= 20 - 5: stored, as history
    h.table("k", "v14", 14L) // 14 < 20 - 5: not stored
    h.stream("k", "s15", 15L)
    h.stream("k", "s17", 17L)
    assert(h.out.toSeq === Seq(("s15", null, 15L), ("s17", "v16", 17L)))
    assert(h.counters(TableUpdates) === 2 && h.counters(TableUpdatesIntoHistory) === 1)
    assert(h.counters(TableUpdatesExpired) === 1)
  }

  // ---- kstate's additions ---------------------------------------------------------------------

  test("rule 9: buffered records and stream time carry over micro-batches; a watermark advance releases at finish") {
    val h = new Harness(left = true, retention = Some(100L), grace = Some(10L))
    h.stream("k", "s5", 5L)
    h.nextBatch()
    assert(h.p.currentStreamTime === 5L, "read back from the buffer")
    h.stream("k", "s3", 3L) // not late: 3 >= 5 - 10
    h.nextBatch()
    assert(h.out.isEmpty)
    h.p.advanceStreamTime(14L)
    assert(h.out.isEmpty, "released at finish, not when stream time moves")
    h.finish()
    assert(h.out.map(_._1).toSeq === Seq("s3"))
    assert(h.counters(BufferRecords) === 1)
    assert(h.counters(BufferRecordsMax) === 2)
  }

  test("rule 9: without a grace period advanceStreamTime and finish do nothing") {
    val h = new Harness(left = true, retention = Some(100L))
    h.p.advanceStreamTime(50L)
    h.finish()
    assert(h.p.currentStreamTime === Long.MinValue && h.out.isEmpty)
  }

  test("rule 10: negative timestamps are buffered and released like any other") {
    val h = new Harness(left = false, retention = Some(100L), grace = Some(10L))
    h.table("k", "v", -30L)
    h.stream("k", "s-20", -20L)
    h.stream("k", "s-12", -12L)
    assert(h.out.isEmpty, "stream time -12: due are records at or before -22")
    h.stream("k", "s0", 0L)
    assert(h.out.toSeq === Seq(("s-20", "v", -20L), ("s-12", "v", -12L)))
  }

  test("rule 12: the table's grace period is its own: a join grace up to the history retention is accepted") {
    val h = new Harness(left = false, retention = Some(20L), grace = Some(20L), tableGrace = Some(0L))
    h.table("k", "v", 10L)
    h.stream("k", "s", 10L)
    h.stream("k", "t", 30L)
    assert(h.out.toSeq === Seq(("s", "v", 10L)))
  }

  test("extreme timestamps: no overflow in stream time - grace or table stream time - retention") {
    val h = new Harness(left = true, retention = Some(Long.MaxValue), grace = Some(Long.MaxValue))
    h.table("k", "v", Long.MinValue + 1)
    h.stream("k", "s", Long.MinValue + 1)
    assert(h.out.isEmpty, "(MinValue + 1) - MaxValue saturates: nothing due")
    h.stream("k", "t", Long.MaxValue)
    assert(h.out.toSeq === Seq(("s", "v", Long.MinValue + 1)), "MaxValue - MaxValue = 0 >= MinValue + 1: s is due")
    val g = new Harness(left = true, retention = Some(Long.MaxValue), grace = Some(0L))
    g.stream("k", "max", Long.MaxValue)
    g.stream("k", "min", Long.MinValue + 1)
    assert(g.out.toSeq === Seq(("max", null, Long.MaxValue), ("min", null, Long.MinValue + 1)))
    assert(g.counters(LateJoinedAtOnce) === 1)
  }

  // ---- configuration --------------------------------------------------------------------------

  private def errorClass(f: => Any): String = intercept[KStateException](f).errorClass

  test(
    "configuration: grace on an unversioned table, grace above the retention and negative durations are named errors"
  ) {
    assert(errorClass(StreamTableJoinSpec(
      leftJoin = false,
      None,
      Some(0L)
    )) === "KSTATE_JOIN_GRACE_ON_UNVERSIONED_TABLE")
    val over = intercept[KStateException](StreamTableJoinSpec(leftJoin = true, Some(10L), Some(11L)))
    assert(over.errorClass === "KSTATE_JOIN_GRACE_EXCEEDS_RETENTION")
    assert(over.getMessage.contains("11ms") && over.getMessage.contains("10ms"))
    assert(errorClass(StreamTableJoinSpec(leftJoin = true, Some(10L), Some(-1L))) === "KSTATE_INVALID_DURATION")
    assert(errorClass(StreamTableJoinSpec(leftJoin = true, Some(-1L), None)) === "KSTATE_INVALID_DURATION")
    val equal = StreamTableJoinSpec(leftJoin = true, Some(10L), Some(10L))
    assert(equal.graceMs === Some(10L) && equal.versioned)
  }

  test("configuration: the processor checks its state matches its spec") {
    val spec = StreamTableJoinSpec(leftJoin = true, Some(10L), Some(5L))
    intercept[IllegalArgumentException](new StreamTableJoinProcessor[String, String, String](
      spec,
      InMemoryTableState.unversioned(),
      Some(new InMemoryStreamTableJoinBuffer[String, String])
    ))
    intercept[IllegalArgumentException](new StreamTableJoinProcessor[String, String, String](
      spec,
      InMemoryTableState.versioned(10L, 10L),
      None
    ))
  }
}

object StreamTableJoinProcessorSuite {

  /** One join over heap state; `stream`/`table` feed records, `out` collects (stream, table, ts). */
  final class Harness(
      left: Boolean,
      retention: Option[Long],
      grace: Option[Long] = None,
      tableGrace: Option[Long] = None
  ) {
    private val spec = StreamTableJoinSpec(left, retention, grace)
    private val state = retention.fold(InMemoryTableState.unversioned[String, String]())(r =>
      InMemoryTableState.versioned[String, String](r, tableGrace.getOrElse(r))
    )
    private val buffer = grace.map(_ => new InMemoryStreamTableJoinBuffer[String, String])
    val counters = StreamTableJoinMetrics.newCounters()
    var p: StreamTableJoinProcessor[String, String, String] = newProcessor()
    val out = ArrayBuffer.empty[(String, String, Long)]
    val emit: StreamTableJoinEmitter[String, String] = (s: String, t: String, ts: Long) => out += ((s, t, ts))

    private def newProcessor() = new StreamTableJoinProcessor(spec, state, buffer, counters)
    def stream(k: String, v: String, ts: Long): Unit = p.processStream(k, k == null, v, ts, tsIsNull = false, emit)
    def table(k: String, v: String, ts: Long): Unit = p.processTable(k, k == null, v, ts, tsIsNull = false)
    def finish(): Unit = p.finish(emit)
    def nextBatch(): Unit = { finish(); p = newProcessor() }
  }
}
