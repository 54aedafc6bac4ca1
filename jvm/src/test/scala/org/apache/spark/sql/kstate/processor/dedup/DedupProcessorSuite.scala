package org.apache.spark.sql.kstate.processor.dedup

import org.apache.spark.sql.kstate.processor.StreamTime

import org.scalatest.funsuite.AnyFunSuite

/**
 * Unit tests of [[DedupProcessor]] over [[InMemoryDedupState]] (no Spark): every KIP-655 rule
 * and worked example, plus kstate's own rules (null timestamps, micro-batch boundaries,
 * watermark-follow, overflow). Identities are Strings; `null` stands for a null identity and
 * `None` for a null timestamp.
 */
class DedupProcessorSuite extends AnyFunSuite {
  import DedupProcessorSuite._

  private val S = 1000L // one second in ms

  // ---------------------------------------------------------------- KIP: duplicate sequence

  test("KIP duplicate sequence, in order: a1@t fwd, a2@t+8s dropped, a3@t+11s fwd (a2 never stored)") {
    val t = 100 * S
    val h = new Harness(10 * S)
    assert(h.run(R("a", t), R("a", t + 8 * S), R("a", t + 11 * S)) === Seq(true, false, true))
    // a3 replaced the (by then expired) a1 entry; a2 never touched the store
    assert(h.state.get("a") === t + 11 * S)
    assert(h.counters(DedupMetrics.EntriesStored) === 2)
    assert(h.counters(DedupMetrics.DuplicatesDropped) === 1)
    assert(h.counters(DedupMetrics.LateForwarded) === 0)
  }

  test("KIP duplicate sequence, out of order: a1@t fwd, a2@t-8s dropped, a3@t-11s fwd (late)") {
    val t = 100 * S
    val h = new Harness(10 * S)
    assert(h.run(R("a", t), R("a", t - 8 * S), R("a", t - 11 * S)) === Seq(true, false, true))
    assert(h.state.get("a") === t, "neither the duplicate nor the late record is stored")
    assert(h.counters(DedupMetrics.LateForwarded) === 1)
    assert(h.counters(DedupMetrics.EntriesStored) === 1)
    assert(h.counters(DedupMetrics.DuplicatesDropped) === 1)
  }

  // ----------------------------------------------------- KIP: inclusive interval boundaries

  test("KIP boundaries, in order: a1@5s fwd, a2@15s dropped (inclusive), a3@16s fwd") {
    val h = new Harness(10 * S)
    assert(h.run(R("a", 5 * S), R("a", 15 * S), R("a", 16 * S)) === Seq(true, false, true))
    assert(h.state.get("a") === 16 * S)
  }

  test("KIP boundaries, out of order: a1@15s fwd, a2@5s dropped (inclusive), a3@4s fwd") {
    val h = new Harness(10 * S)
    assert(h.run(R("a", 15 * S), R("a", 5 * S), R("a", 4 * S)) === Seq(true, false, true))
    assert(h.counters(DedupMetrics.LateForwarded) === 1, "a3@4s is more than 10s behind stream time 15s")
    assert(h.state.get("a") === 15 * S)
  }

  test("KIP boundaries, interval = 0: a1@5s fwd, a2@5s dropped, a3@6s fwd") {
    val h = new Harness(0L)
    assert(h.run(R("a", 5 * S), R("a", 5 * S), R("a", 6 * S)) === Seq(true, false, true))
    assert(h.state.get("a") === 6 * S)
  }

  test("interval boundaries at millisecond resolution: |diff| = interval dropped, interval + 1 forwarded") {
    val h = new Harness(10L)
    assert(h.run(R("a", 100), R("a", 110), R("a", 111)) === Seq(true, false, true))
    val h2 = new Harness(10L)
    // 100 then 90 (exactly interval behind: duplicate, not late) then 89 (late, no duplicate)
    assert(h2.run(R("a", 100), R("a", 90), R("a", 89)) === Seq(true, false, true))
    assert(h2.counters(DedupMetrics.LateForwarded) === 1)
  }

  // ------------------------------------------------------------------ KIP: late events

  test("KIP late events Example 1: k@20s fwd, k@25s dropped, k@11s dropped (late dup), k@9s fwd") {
    val h = new Harness(10 * S)
    assert(h.run(R("k", 20 * S), R("k", 25 * S), R("k", 11 * S), R("k", 9 * S)) ===
      Seq(true, false, false, true))
    assert(h.processor.currentStreamTime === 25 * S)
    assert(h.counters(DedupMetrics.DuplicatesDropped) === 2)
    assert(h.counters(DedupMetrics.LateForwarded) === 1)
    assert(h.counters(DedupMetrics.EntriesStored) === 1)
    assert(h.state.get("k") === 20 * S)
  }

  test("KIP late events Example 2: k1@10s fwd, k2@20s fwd, k1@9s dropped (k1@10s still stored)") {
    val h = new Harness(10 * S)
    assert(h.run(R("k1", 10 * S), R("k2", 20 * S), R("k1", 9 * S)) === Seq(true, true, false))
    assert(h.counters(DedupMetrics.DuplicatesDropped) === 1)
    assert(h.counters(DedupMetrics.LateForwarded) === 0)
    h.processor.finish()
    assert(h.counters(DedupMetrics.EntriesPurged) === 0, "k1@10s is exactly at the bound 20s - 10s: kept")
    assert(h.state.numEntries === 2)
  }

  test("KIP late events Example 3: k1@10s fwd, k2@21s fwd (purges k1@10s), k1@9s fwd (late)") {
    val h = new Harness(10 * S)
    assert(h.run(R("k1", 10 * S), R("k2", 21 * S), R("k1", 9 * S)) === Seq(true, true, true))
    assert(h.counters(DedupMetrics.LateForwarded) === 1)
    assert(h.counters(DedupMetrics.DuplicatesDropped) === 0)
    h.processor.finish()
    assert(h.counters(DedupMetrics.EntriesPurged) === 1)
    assert(h.state.numEntries === 1)
    assert(h.state.get("k1") === DedupState.NoEntry)
    assert(h.state.get("k2") === 21 * S)
  }

  test("Example 3 variant: an expired entry not yet purged is not a duplicate") {
    // k1@10s is expired at stream time 21s but still physically in the store until finish();
    // a record within the interval of it (k1@5s) must not be treated as its duplicate.
    val h = new Harness(10 * S)
    assert(h.run(R("k1", 10 * S), R("k2", 21 * S)) === Seq(true, true))
    assert(h.state.get("k1") === 10 * S, "not purged before finish()")
    assert(h.run(R("k1", 5 * S)) === Seq(true))
    assert(h.counters(DedupMetrics.LateForwarded) === 1)
  }

  // --------------------------------------------------------------- first record wins

  test("first record wins: a dropped duplicate does not refresh the stored entry") {
    val h = new Harness(10L)
    // if a@105 had refreshed the entry, a@111 (within 10 of 105) would be dropped
    assert(h.run(R("a", 100), R("a", 105), R("a", 109), R("a", 110), R("a", 111)) ===
      Seq(true, false, false, false, true))
    assert(h.state.get("a") === 111L)
    assert(h.counters(DedupMetrics.EntriesStored) === 2)
  }

  test("identities are independent") {
    val h = new Harness(10L)
    assert(h.run(R("a", 100), R("b", 100), R("a", 101), R("c", 102), R("b", 103)) ===
      Seq(true, true, false, true, false))
    assert(h.state.numEntries === 3)
  }

  // ------------------------------------------------------------------ null identity

  test("null identity: always forwarded, never stored, even with equal timestamps") {
    val h = new Harness(10L)
    assert(h.run(R(null, 100), R(null, 100), R(null, 101)) === Seq(true, true, true))
    assert(h.state.numEntries === 0)
    assert(h.counters(DedupMetrics.NullKeysForwarded) === 3)
    assert(h.counters(DedupMetrics.Forwarded) === 3)
    assert(h.counters(DedupMetrics.EntriesStored) === 0)
  }

  test("null identity advances stream time (makes later records late) and drives purging") {
    val h = new Harness(10L)
    assert(h.run(R("a", 10)) === Seq(true))
    assert(h.run(R(null, 21)) === Seq(true))
    assert(h.processor.currentStreamTime === 21L)
    // Example 3 with the advancing record carrying a null identity: a@10 is expired, a@9 late
    assert(h.run(R("a", 9)) === Seq(true))
    assert(h.counters(DedupMetrics.LateForwarded) === 1)
    h.processor.finish()
    assert(h.counters(DedupMetrics.EntriesPurged) === 1)
    assert(h.state.numEntries === 0)
    assert(h.state.streamTime === 21L)
  }

  // ----------------------------------------------------------------- null timestamp

  test("null timestamp: forwarded, not stored, stream time unchanged, never a duplicate") {
    val h = new Harness(10L)
    assert(h.run(R("a", None)) === Seq(true))
    assert(h.processor.currentStreamTime === StreamTime.Unknown)
    assert(h.state.numEntries === 0)
    assert(h.run(R("a", None), R("a", 50), R("a", None), R("a", 50)) === Seq(true, true, true, false))
    assert(h.processor.currentStreamTime === 50L)
    assert(h.state.get("a") === 50L)
    assert(h.counters(DedupMetrics.NullTimestampsForwarded) === 3)
    assert(h.counters(DedupMetrics.NullKeysForwarded) === 0)
    assert(h.counters(DedupMetrics.Forwarded) === 4)
    assert(h.counters(DedupMetrics.DuplicatesDropped) === 1)
    assert(h.counters(DedupMetrics.EntriesStored) === 1)
  }

  test("null timestamp does not move stream time backwards or forwards across finish()") {
    val state = new InMemoryDedupState[String](identity)
    val c = DedupMetrics.newCounters()
    val p1 = new DedupProcessor[String](10L, state, c)
    p1.process("a", identityIsNull = false, 70L, tsIsNull = false)
    p1.process("a", identityIsNull = false, 999L, tsIsNull = true) // ts value ignored
    assert(p1.currentStreamTime === 70L)
    p1.finish()
    assert(state.streamTime === 70L)
  }

  test("null identity AND null timestamp: forwarded, stream time unchanged") {
    val h = new Harness(10L)
    assert(h.run(R(null, None), R(null, None)) === Seq(true, true))
    assert(h.processor.currentStreamTime === StreamTime.Unknown)
    assert(h.state.numEntries === 0)
    assert(h.counters(DedupMetrics.Forwarded) === 2)
    assert(h.counters(DedupMetrics.NullKeysForwarded) + h.counters(DedupMetrics.NullTimestampsForwarded) === 2)
  }

  test("null identity AND null timestamp: forwarded, counted only as a null key") {
    // The null-identity rule takes precedence in the counters (as in dedup_model.py).
    val h = new Harness(10L)
    h.run(R(null, None))
    assert(h.counters(DedupMetrics.NullKeysForwarded) === 1)
    assert(h.counters(DedupMetrics.NullTimestampsForwarded) === 0)
  }

  // ------------------------------------------------------------------- late records

  test("late record: forwarded only without a live duplicate, and never stored") {
    val h = new Harness(10L)
    assert(h.run(R("a", 100), R("x", 200)) === Seq(true, true))
    // c@50 is late (50 < 200 - 10) with nothing stored: forwarded, not stored, so its repeat
    // is forwarded again (KIP: duplicates of late records are not detected)
    assert(h.run(R("c", 50), R("c", 50)) === Seq(true, true))
    assert(h.state.get("c") === DedupState.NoEntry)
    assert(h.counters(DedupMetrics.LateForwarded) === 2)
    // a late record with a live duplicate is dropped
    assert(h.run(R("x", 189), R("x", 190)) === Seq(true, false))
    assert(h.counters(DedupMetrics.LateForwarded) === 3)
    assert(h.counters(DedupMetrics.DuplicatesDropped) === 1)
    assert(h.state.get("x") === 200L)
  }

  test("record exactly at the expiry bound is not late and is stored") {
    val h = new Harness(10L)
    assert(h.run(R("a", 100), R("b", 90), R("b", 90)) === Seq(true, true, false))
    assert(h.counters(DedupMetrics.LateForwarded) === 0)
    assert(h.state.get("b") === 90L)
  }

  // -------------------------------------------------------------- finish(): purge, counters

  test("finish() purges expired entries; counters are exact") {
    val h = new Harness(10L)
    val recs = Seq(
      R("a", 0), // fwd, stored
      R("b", 5), // fwd, stored
      R("a", 3), // dup
      R(null, 12), // null key, st=12: a@0 expired (0 < 2), b@5 live
      R("c", None), // null ts
      R("c", 12), // fwd, stored
      R("a", 1), // late (1 < 2), a@0 expired -> fwd, not stored
      R("b", 15), // dup of b@5 (|15-5| = 10), st=15
      R("d", 4), // late (4 < 5) -> fwd
      R("c", 20), // dup of c@12, st=20: b@5 expired
      R(null, None)
    ) // null key & null ts
    assert(h.run(recs: _*) ===
      Seq(true, true, false, true, true, true, true, false, true, false, true))
    assert(h.state.numEntries === 3, "expired entries are still stored before finish()")
    assert(h.counters(DedupMetrics.EntriesPurged) === 0)
    h.processor.finish()
    val c = h.counters
    assert(c(DedupMetrics.Forwarded) === 8)
    assert(c(DedupMetrics.DuplicatesDropped) === 3)
    assert(c(DedupMetrics.LateForwarded) === 2)
    assert(c(DedupMetrics.NullKeysForwarded) + c(DedupMetrics.NullTimestampsForwarded) === 3)
    assert(c(DedupMetrics.EntriesStored) === 3)
    assert(c(DedupMetrics.EntriesPurged) === 2) // a@0, b@5 (bound 20 - 10 = 10)
    assert(h.state.numEntries === 1)
    assert(h.state.get("c") === 12L)
    assert(h.state.streamTime === 20L)
  }

  test("finish() with nothing processed keeps the initial stream time and purges nothing") {
    val h = new Harness(10L)
    h.processor.finish()
    assert(h.state.streamTime === StreamTime.Unknown)
    assert(h.counters(DedupMetrics.EntriesPurged) === 0)
  }

  test("finish() twice is idempotent") {
    val h = new Harness(10L)
    h.run(R("a", 0), R("b", 50))
    h.processor.finish()
    h.processor.finish()
    assert(h.counters(DedupMetrics.EntriesPurged) === 1)
    assert(h.state.numEntries === 1)
  }

  // ------------------------------------------------- stream time across micro-batches

  test("stream time is persisted at finish() and resumed by a new processor over the same state") {
    val state = new InMemoryDedupState[String](identity)
    val c = DedupMetrics.newCounters()
    val p1 = new DedupProcessor[String](10L, state, c)
    assert(p1.process("k1", identityIsNull = false, 10L, tsIsNull = false))
    assert(p1.process("k2", identityIsNull = false, 21L, tsIsNull = false))
    assert(state.streamTime === StreamTime.Unknown, "written once, at finish()")
    p1.finish()
    assert(state.streamTime === 21L)
    val p2 = new DedupProcessor[String](10L, state, c)
    assert(p2.currentStreamTime === 21L)
    // Example 3 across a batch boundary: k1@9 is late
    assert(p2.process("k1", identityIsNull = false, 9L, tsIsNull = false))
    assert(c(DedupMetrics.LateForwarded) === 1)
    p2.finish()
    assert(state.streamTime === 21L)
  }

  test("splitting a sequence at every point into two batches gives the single-run decisions") {
    for (interval <- Seq(0L, 1L, 3L, 10L)) {
      val expected = runBatches(interval, Seq(MixedSequence))
      for (i <- 0 to MixedSequence.length) {
        val (a, b) = MixedSequence.splitAt(i)
        assert(runBatches(interval, Seq(a, b)) === expected, s"interval $interval, split at $i")
      }
    }
  }

  test("splitting a sequence at every pair of points into three batches gives the single-run decisions") {
    val interval = 10L
    val expected = runBatches(interval, Seq(MixedSequence))
    val n = MixedSequence.length
    for (i <- 0 to n; j <- i to n) {
      val batches = Seq(MixedSequence.take(i), MixedSequence.slice(i, j), MixedSequence.drop(j))
      assert(runBatches(interval, batches) === expected, s"split at $i, $j")
    }
  }

  test("KIP examples split into one record per batch give the same decisions") {
    for (
      (recs, exp) <- Seq(
        Seq(R("k", 20 * S), R("k", 25 * S), R("k", 11 * S), R("k", 9 * S)) -> Seq(true, false, false, true),
        Seq(R("k1", 10 * S), R("k2", 20 * S), R("k1", 9 * S)) -> Seq(true, true, false),
        Seq(R("k1", 10 * S), R("k2", 21 * S), R("k1", 9 * S)) -> Seq(true, true, true)
      )
    ) {
      assert(runBatches(10 * S, recs.map(Seq(_))) === exp)
    }
  }

  // --------------------------------------------------------- watermark-follow option

  test("advanceStreamTime (watermark-follow) makes a record late") {
    val h = new Harness(10L)
    h.processor.advanceStreamTime(100L)
    assert(h.processor.currentStreamTime === 100L)
    assert(h.run(R("a", 89), R("a", 89)) === Seq(true, true))
    assert(h.counters(DedupMetrics.LateForwarded) === 2)
    assert(h.state.numEntries === 0)
    assert(h.run(R("a", 90), R("a", 90)) === Seq(true, false), "at the bound: not late, stored")
    h.processor.finish()
    assert(h.state.streamTime === 100L)
  }

  test("advanceStreamTime expires stored entries (no duplicate found) and never lowers stream time") {
    val state = new InMemoryDedupState[String](identity)
    val c = DedupMetrics.newCounters()
    val p1 = new DedupProcessor[String](10L, state, c)
    assert(p1.process("a", identityIsNull = false, 50L, tsIsNull = false))
    p1.finish()
    val p2 = new DedupProcessor[String](10L, state, c)
    p2.advanceStreamTime(40L) // lower: no effect
    assert(p2.currentStreamTime === 50L)
    assert(!p2.process("a", identityIsNull = false, 45L, tsIsNull = false))
    p2.advanceStreamTime(61L)
    assert(p2.currentStreamTime === 61L)
    // a@50 is expired at 61 (50 < 51): a@45 is late and forwarded
    assert(p2.process("a", identityIsNull = false, 45L, tsIsNull = false))
    p2.finish()
    assert(state.streamTime === 61L)
    assert(state.numEntries === 0)
    assert(c(DedupMetrics.EntriesPurged) === 1)
  }

  // -------------------------------------------------------------------- overflow

  test("StreamTime.minus saturates at Long.MinValue") {
    import StreamTime.minus
    assert(minus(10L, 3L) === 7L)
    assert(minus(0L, 0L) === 0L)
    assert(minus(Long.MinValue, 0L) === Long.MinValue)
    assert(minus(Long.MinValue, 10L) === Long.MinValue)
    assert(minus(Long.MinValue + 10L, 10L) === Long.MinValue)
    assert(minus(Long.MinValue + 10L, 11L) === Long.MinValue)
    assert(minus(Long.MinValue + 10L, 9L) === Long.MinValue + 1L)
    assert(minus(0L, Long.MaxValue) === -Long.MaxValue)
    assert(minus(-1L, Long.MaxValue) === Long.MinValue)
    assert(minus(-2L, Long.MaxValue) === Long.MinValue)
    assert(minus(Long.MaxValue, Long.MaxValue) === 0L)
    assert(minus(Long.MaxValue, 0L) === Long.MaxValue)
  }

  test("StreamTime.within is |a - b| <= d without overflow") {
    import StreamTime.within
    assert(within(5L, 15L, 10L) && within(15L, 5L, 10L))
    assert(!within(5L, 16L, 10L) && !within(16L, 5L, 10L))
    assert(within(7L, 7L, 0L) && !within(7L, 8L, 0L))
    assert(within(Long.MaxValue, Long.MaxValue, 0L))
    assert(within(Long.MinValue, Long.MinValue, 0L))
    assert(!within(Long.MinValue, Long.MaxValue, 0L) && !within(Long.MaxValue, Long.MinValue, 0L))
    assert(!within(Long.MinValue, Long.MaxValue, Long.MaxValue))
    assert(!within(Long.MaxValue, Long.MinValue, Long.MaxValue))
    assert(within(Long.MaxValue, 0L, Long.MaxValue) && within(0L, Long.MaxValue, Long.MaxValue))
    assert(!within(Long.MaxValue, -1L, Long.MaxValue) && !within(-1L, Long.MaxValue, Long.MaxValue))
    assert(within(Long.MinValue, -1L, Long.MaxValue) && within(-1L, Long.MinValue, Long.MaxValue))
    assert(!within(Long.MinValue, 0L, Long.MaxValue) && !within(0L, Long.MinValue, Long.MaxValue))
    assert(within(Long.MinValue + 1L, Long.MinValue, 1L))
    assert(!within(Long.MaxValue, Long.MaxValue - 2L, 1L))
  }

  test("timestamps at Long.MaxValue with a small interval") {
    val h = new Harness(10L)
    val m = Long.MaxValue
    assert(h.run(R("a", m), R("a", m), R("a", m - 10), R("a", m - 11), R("b", m - 10)) ===
      Seq(true, false, false, true, true))
    assert(h.counters(DedupMetrics.LateForwarded) === 1)
    h.processor.finish()
    assert(h.state.streamTime === m)
    assert(h.state.numEntries === 2)
  }

  test("huge interval (Long.MaxValue) with extreme timestamps") {
    val h = new Harness(Long.MaxValue)
    val m = Long.MaxValue
    // stream time MaxValue => expiry bound 0
    assert(h.run(R("a", m)) === Seq(true))
    assert(h.run(R("a", 0L)) === Seq(false), "|MaxValue - 0| = MaxValue: duplicate")
    assert(h.run(R("a", -1L)) === Seq(true), "|MaxValue - (-1)| > MaxValue and -1 < 0: late")
    assert(h.run(R("b", Long.MinValue + 1)) === Seq(true))
    assert(h.counters(DedupMetrics.LateForwarded) === 2)
    assert(h.run(R("c", 0L), R("c", m), R("c", -1L)) === Seq(true, false, false))
    h.processor.finish()
    assert(h.counters(DedupMetrics.EntriesPurged) === 0)
    assert(h.state.numEntries === 2)
  }

  test("huge interval from the very first record: saturating expiry bound") {
    val h = new Harness(Long.MaxValue)
    // st = MinValue + 1 => bound saturates at MinValue; st = 0 => bound = MinValue + 1
    assert(h.run(R("a", Long.MinValue + 1), R("b", 0L), R("a", -1L)) === Seq(true, true, false))
    assert(h.counters(DedupMetrics.LateForwarded) === 0)
    // st = MaxValue - 1 => bound = -1: a@MinValue+1 expires, b@0 stays
    assert(h.run(R("c", Long.MaxValue - 1), R("a", -2L)) === Seq(true, true))
    assert(h.counters(DedupMetrics.LateForwarded) === 1)
    h.processor.finish()
    assert(h.counters(DedupMetrics.EntriesPurged) === 1)
    assert(h.state.numEntries === 2)
  }

  test("timestamps near Long.MinValue with the initial (Long.MinValue) stream time") {
    val h = new Harness(5L)
    val lo = Long.MinValue + 1
    assert(h.run(R("a", lo), R("a", lo + 5), R("a", lo + 6), R("a", lo)) ===
      Seq(true, false, true, true))
    assert(h.counters(DedupMetrics.LateForwarded) === 1)
    h.processor.finish()
    assert(h.state.numEntries === 1)
  }

  test("a BIGINT timestamp of Long.MinValue counts as a null timestamp (kstate's 'no time')") {
    import org.apache.spark.sql.catalyst.expressions.{BoundReference, GenericInternalRow}
    import org.apache.spark.sql.kstate.execution.KStateStatefulExec
    import org.apache.spark.sql.types.LongType
    val ts = BoundReference(0, LongType, nullable = true)
    val eventTime = KStateStatefulExec.eventTimeOf(ts, Seq.empty)
    val Null = KStateStatefulExec.NullTime
    assert(eventTime(new GenericInternalRow(Array[Any](Long.MinValue))) === Null)
    assert(eventTime(new GenericInternalRow(Array[Any](Long.MinValue + 1))) === Long.MinValue + 1)
    assert(eventTime(new GenericInternalRow(Array[Any](null))) === Null)
    // So the processor never sees it; the smallest real timestamp still deduplicates.
    val h = new Harness(0L)
    assert(h.run(R("a", Long.MinValue + 1), R("a", Long.MinValue + 1)) === Seq(true, false))
  }

  // ------------------------------------------------------------------- misc contract

  test("negative interval is rejected") {
    intercept[IllegalArgumentException] {
      new DedupProcessor[String](-1L, new InMemoryDedupState[String](identity), DedupMetrics.newCounters())
    }
  }

  test("InMemoryDedupState: purgeOlderThan is strict, counts only current entries; put copies keys") {
    var copies = 0
    val st = new InMemoryDedupState[String](k => { copies += 1; new String(k) })
    st.put("a", 5L, replaces = false)
    st.put("b", 10L, replaces = false)
    st.put("a", 30L, replaces = true) // overwrites a@5: its stale index entry must not be counted
    assert(copies === 3)
    assert(st.numEntries === 2)
    assert(st.purgeOlderThan(10L) === 0)
    assert(st.get("a") === 30L && st.get("b") === 10L)
    assert(st.purgeOlderThan(11L) === 1)
    assert(st.get("b") === DedupState.NoEntry)
    assert(st.purgeOlderThan(Long.MinValue) === 0)
    assert(st.purgeOlderThan(Long.MaxValue) === 1)
    assert(st.numEntries === 0)
  }
}

object DedupProcessorSuite {

  /** One record: identity (null = null identity), timestamp (None = null timestamp). */
  final case class Rec(id: String, ts: Option[Long])
  def R(id: String, ts: Long): Rec = Rec(id, Some(ts))
  def R(id: String, ts: Option[Long]): Rec = Rec(id, ts)

  /** One processor over a fresh in-memory state. */
  final class Harness(interval: Long) {
    val state = new InMemoryDedupState[String](identity)
    val counters = DedupMetrics.newCounters()
    val processor = new DedupProcessor[String](interval, state, counters)
    def run(recs: Rec*): Seq[Boolean] = recs.map(r => process(processor, r))
  }

  def process(p: DedupProcessor[String], r: Rec): Boolean =
    p.process(r.id, r.id == null, r.ts.getOrElse(0L), r.ts.isEmpty)

  /** Runs `batches` with a new processor per batch over one shared state, finish() per batch. */
  def runBatches(interval: Long, batches: Seq[Seq[Rec]]): Seq[Boolean] = {
    val state = new InMemoryDedupState[String](identity)
    val counters = DedupMetrics.newCounters()
    batches.flatMap { b =>
      val p = new DedupProcessor[String](interval, state, counters)
      val out = b.map(process(p, _))
      p.finish()
      out
    }
  }

  /** Exercises every rule: duplicates both ways, boundaries, late, null key/ts, expiry. */
  val MixedSequence: Seq[Rec] = Seq(
    R("a", 10),
    R("a", 18),
    R("b", 12),
    R("a", 21),
    R(null, 25),
    R("a", 9),
    R("c", None),
    R("b", 15),
    R("c", 30),
    R("a", 31),
    R("a", 20),
    R(null, None),
    R("b", 2),
    R("c", 40),
    R("c", 30),
    R("a", 41),
    R("b", 41),
    R("b", 51),
    R("a", 52),
    R(null, 70),
    R("a", 41),
    R("c", 60),
    R("c", 60)
  )
}
