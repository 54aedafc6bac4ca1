package org.apache.spark.sql.kstate.processor.suppress

import io.kstate.suppress.WhenFull

import scala.collection.mutable.ArrayBuffer

import io.kstate.KStateException
import org.scalatest.funsuite.AnyFunSuite

/**
 * Unit tests of [[SuppressProcessor]] over [[InMemorySuppressBuffer]] (no Spark): one test per
 * numbered rule, KIP-328's examples (final window results, rate-limited updates), the full
 * policies, late updates of closed windows and batch boundaries.
 */
class SuppressProcessorSuite extends AnyFunSuite {
  import SuppressProcessorSuite._

  private val Min = 60 * 1000L // one minute in ms

  test("rule 1: null timestamp, null key or null window end: dropped, counted, stream time unchanged") {
    val h = new Harness(limitMs = 0L, untilWindowCloses = true)
    h.record("a", "v", 100L, end = Some(105L))
    h.p.process("b", false, "v", 0L, tsIsNull = true, 0L, bufferTimeIsNull = true, h.emit)
    h.p.process(null, true, null, 500L, tsIsNull = false, 505L, bufferTimeIsNull = false, h.emit)
    h.p.process("c", false, "v", 500L, tsIsNull = false, 0L, bufferTimeIsNull = true, h.emit)
    assert(h.p.currentStreamTime === 100L)
    assert(h.counters(SuppressMetrics.NullTimestamps) === 2)
    assert(h.counters(SuppressMetrics.NullKeys) === 1)
    assert(h.emitted.isEmpty)
    h.p.finish(h.emit)
    assert(h.counters(SuppressMetrics.BufferRecords) === 1, "only a was buffered")
  }

  test("rule 2: stream time is the largest timestamp seen; an out-of-order record does not lower it") {
    val h = new Harness(limitMs = 10L, untilWindowCloses = false)
    h.record("a", "1", 50L)
    h.record("b", "1", 20L)
    assert(h.p.currentStreamTime === 50L)
    assert(h.emitted.map(_.key) === Seq("b"), "b's buffer time 20 <= 50 - 10: emitted right away")
  }

  test("rule 3: until window closes, an update of a closed window is dropped as late (its result was emitted)") {
    // KIP-328 final window results: hourly windows, 10 minutes grace
    val h = new Harness(limitMs = 10 * Min, untilWindowCloses = true)
    h.record("user1", "count=1", 10 * Min, end = Some(60 * Min))
    h.record("user1", "count=2", 50 * Min, end = Some(60 * Min))
    h.record("user2", "count=1", 70 * Min, end = Some(120 * Min)) // 70 min - 10 min grace = window end: closes
    assert(h.emitted.map(r => (r.key, r.value)) === Seq("user1" -> "count=2"), "one final result, the latest")
    h.record("user1", "count=3", 55 * Min, end = Some(60 * Min))
    assert(h.emitted.length === 1, "no second result for a closed window")
    assert(h.counters(SuppressMetrics.LateDropped) === 1)
  }

  test("rule 4: a buffered key keeps its buffer time; the replaced value is a suppressed update") {
    val h = new Harness(limitMs = 30000L, untilWindowCloses = false)
    // KIP-328 rate-limited updates: roughly one update every 30 s per key
    h.record("k", "v1", 0L)
    h.record("k", "v2", 20000L)
    h.record("k", "v3", 29000L)
    assert(h.emitted.isEmpty)
    h.record("other", "x", 30000L) // stream time 30 s: k (buffered at 0) is due
    assert(h.emitted.map(r => (r.key, r.value, r.bufferTime, r.recordTime)) === Seq(("k", "v3", 0L, 29000L)))
    assert(h.counters(SuppressMetrics.SuppressedUpdates) === 2)
  }

  test("rule 5: due records leave oldest first, ties by key") {
    val h = new Harness(limitMs = 5L, untilWindowCloses = false)
    h.record("b", "1", 3L)
    h.record("a", "1", 3L)
    h.record("c", "1", 1L)
    h.record("d", "1", 9L)
    assert(h.emitted.map(_.key) === Seq("c", "a", "b"))
    assert(h.counters(SuppressMetrics.Emitted) === 3)
  }

  test("rule 6, emit early when full: the oldest records leave early, counted") {
    val h = new Harness(
      limitMs = Long.MaxValue,
      untilWindowCloses = false,
      BufferLimits(maxRecords = 2, whenFull = WhenFull.EmitEarly)
    )
    Seq("a" -> 1L, "b" -> 2L, "c" -> 3L, "d" -> 0L).foreach { case (k, t) => h.record(k, "v", t) }
    assert(h.emitted.map(_.key) === Seq("a", "d"), "d is buffered at 0, older than b and c")
    assert(h.counters(SuppressMetrics.EarlyEvictions) === 2)
    assert(h.counters(SuppressMetrics.BufferRecordsMax) === 3, "the peak is after the put, before evicting")
  }

  test("rule 6, shut down when full: KSTATE_BUFFER_FULL names the buffer and its limits") {
    val h = new Harness(
      limitMs = Long.MaxValue,
      untilWindowCloses = true,
      BufferLimits(maxRecords = 1, whenFull = WhenFull.ShutDown)
    )
    h.record("a", "v", 1L, end = Some(10L))
    val e = intercept[KStateException](h.record("b", "v", 2L, end = Some(10L)))
    assert(e.errorClass === "KSTATE_BUFFER_FULL")
    assert(e.getMessage.contains("'op'") && e.getMessage.contains("max_records=1"))
    assert(h.emitted.isEmpty)
  }

  test("rule 6, spill to disk: strict, nothing leaves early whatever the size") {
    val h = new Harness(
      limitMs = Long.MaxValue,
      untilWindowCloses = false,
      BufferLimits(maxRecords = 1, maxBytes = 10, whenFull = WhenFull.SpillToDisk)
    )
    (1 to 5).foreach(i => h.record(s"k$i", "value", i.toLong))
    assert(h.emitted.isEmpty)
    assert(h.buffer.numRecords === 5)
  }

  test("finish: expired records leave after the watermark-follow advance; a new batch keeps stream time") {
    val h = new Harness(limitMs = 10L, untilWindowCloses = true)
    h.record("a", "v", 1L, end = Some(5L))
    h.p.finish(h.emit)
    assert(h.emitted.isEmpty && h.p.outputTimeFloor === -8L, "close time 1 - 10: windows ending after -9")
    val next = h.nextBatch()
    next.p.advanceStreamTime(15L)
    next.p.finish(next.emit)
    assert(next.emitted.map(_.key) === Seq("a"))
    assert(next.p.outputTimeFloor === 6L, "windows ending at or before 15 - 10 are done")
    assert(next.counters(SuppressMetrics.BufferRecords) === 0)
  }

  test("extremes: an expiry before Long.MinValue expires nothing; no overflow at Long.MaxValue") {
    val h = new Harness(limitMs = Long.MaxValue, untilWindowCloses = false)
    h.record("a", "v", Long.MinValue + 1)
    assert(h.emitted.isEmpty, "stream time - limit saturates at Long.MinValue: nothing expires")
    h.record("b", "v", Long.MaxValue)
    assert(h.emitted.map(_.key) === Seq("a"), "expiry Long.MaxValue - Long.MaxValue = 0: only a is due")
  }
}

object SuppressProcessorSuite {
  final class Harness(
      limitMs: Long,
      untilWindowCloses: Boolean,
      limits: BufferLimits = BufferLimits(),
      shared: InMemorySuppressBuffer[String, String] = null,
      streamTime: Long = Long.MinValue,
      val counters: org.apache.spark.sql.kstate.processor.Counters = SuppressMetrics.newCounters()
  ) {
    val buffer: InMemorySuppressBuffer[String, String] =
      Option(shared).getOrElse(new InMemorySuppressBuffer[String, String](
        "op",
        limits,
        (k, v) => k.length.toLong + v.length + 16
      ))
    val p = new SuppressProcessor[String, String, SuppressedRecord[String, String]](
      buffer,
      limitMs,
      untilWindowCloses,
      streamTime,
      counters
    )
    val emitted: ArrayBuffer[SuppressedRecord[String, String]] = ArrayBuffer.empty
    val emit: SuppressedRecord[String, String] => Unit = emitted += _

    def record(k: String, v: String, ts: Long, end: Option[Long] = None): Unit = {
      val bt = if (untilWindowCloses) end else Some(ts)
      p.process(k, k == null, v, ts, tsIsNull = false, bt.getOrElse(0L), bt.isEmpty, emit)
    }
    def nextBatch(): Harness =
      new Harness(limitMs, untilWindowCloses, limits, buffer, p.currentStreamTime, counters)
  }
}
