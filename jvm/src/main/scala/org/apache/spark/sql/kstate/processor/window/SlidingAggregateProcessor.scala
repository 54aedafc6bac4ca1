package org.apache.spark.sql.kstate.processor.window

import scala.collection.mutable
import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.kstate.processor.{Counters, StreamTime}

/**
 * Kafka's `KStreamSlidingWindowAggregate` (KIP-450) on one state partition, optionally fused with
 * `suppress(untilWindowCloses)` (`finalResults`), with the differences docs/windows.md states.
 *
 * The windows of a key, for time difference d (both bounds inclusive, every window d wide): the
 * left window of each record, `[ts − d, ts]` (`[0, d]` when ts < d, Kafka's early records), and
 * the right window of each record, `[ts + 1, ts + 1 + d]`, when it holds a record.
 *
 * For each record, in processing order:
 *  1. a null or negative timestamp, then a null key: dropped (counted as a null timestamp / key),
 *     stream time unchanged (Kafka rejects negative timestamps for sliding windows);
 *  2. the record's lateness is counted against stream time before it;
 *  3. stream time := max(stream time, ts); close time := stream time − grace; a window is open
 *     while its end ≥ close time;
 *  4. a record with ts + d < close time is late (every window it could join is closed): dropped;
 *  5. the record joins every open window of its key containing ts;
 *  6. the windows it adds to the key's set (its left window, its right window, the right window
 *     of the key's previous record) are created when open and not there yet, from every record
 *     of the key in their range (kstate: from the records' own aggregates, merged in time order;
 *     Kafka builds them from existing windows, see docs/windows.md).
 * A key keeps each record's own aggregate while a window still open can contain it or start right
 * after it (ts + d + 1 ≥ close time). At `finish`, windows with end < close time close.
 *
 * Cost per record: the windows that contain it and the records in the windows it creates, found
 * by range in the key's windows (by start) and records (by timestamp), as Kafka's range fetch
 * does; not every window and record the key holds (a hot key holds many, and a record's cost
 * would grow with all of them).
 *
 * With an order-insensitive aggregator ([[MergingAggregator.orderInsensitive]], e.g. a count)
 * the same windows get the same values, computed once per batch instead of per record: a record
 * only adds the windows it creates (rule 6, without their values) and notes the close time at
 * its arrival; at `finish` each of the key's windows that can hold a record of the batch folds,
 * in a [[FoldTree]] over the batch's records by timestamp, the ones in its range that arrived
 * while it was open (close time at arrival <= its end), merged into its stored value or, for a
 * window created in the batch, into the fold of the key's stored records in its range (all were
 * there when it was created). O(log n) merges per window instead of one per record in it: a key
 * with thousands of records per time difference no longer costs thousands of updates per record.
 * A key with at most `smallFold` records of the batch and of the store folds without the tree:
 * each window merges the records in its range in one [[MergingAggregator.mergeAll]] (the same
 * records, so the same value; the tree costs more than it saves on a few records).
 *
 * `windowUpdates` counts, per window, the batch's records it holds at the end of the batch
 * (each record once per window: joined, or merged when the window was created).
 *
 * Output ([[SpanOutput]], never tombstones: windows do not merge), at `finish`: without
 * `finalResults`, every window the batch created or changed, once, with its value at the end of
 * the batch; with `finalResults`, each window once, when it closes, in end order.
 *
 * `copyKey` copies a key the caller may reuse. Counts into [[SlidingMetrics]]. Not thread-safe;
 * one instance per task and micro-batch, over state that outlives it.
 */
final class SlidingAggregateProcessor[K, SK, R, A](
    timeDifferenceMs: Long,
    graceMs: Long,
    finalResults: Boolean,
    state: SessionStore[SK, A],
    stateKeys: SlidingStateKeys[K, SK],
    aggregator: MergingAggregator[R, A],
    output: SpanOutput[K, A],
    copyKey: K => K,
    counters: Counters = SlidingMetrics.newCounters(),
    smallFold: Int = SlidingAggregateProcessor.SmallFold
) extends SpanAggregateProcessor[K, R, A](state, output, SlidingMetrics, counters) {
  import SlidingAggregateProcessor._
  import SlidingMetrics._
  require(timeDifferenceMs >= 0 && graceMs >= 0, s"time difference and grace must be >= 0")
  private val d = timeDifferenceMs
  private val batched = aggregator.orderInsensitive
  private val touched = new java.util.LinkedHashMap[K, KeyState[SK, A]]()

  /** Rule 3: stream time − grace, saturating. */
  override def closeTime: Long = streamTime.closeTime(graceMs)

  private def endOf(start: Long): Long = StreamTime.plus(start, d)

  /** The end of a record's right window: the record is needed while it is >= close time. */
  private def neededUntil(ts: Long): Long = StreamTime.plus(endOf(ts), 1L)

  private def load(k: K): KeyState[SK, A] = {
    var ks = touched.get(k)
    if (ks == null) {
      val wk = stateKeys.windows(k)
      val rk = stateKeys.records(k)
      val storedWindows = state.get(wk)
      val storedRecords = state.get(rk)
      val ws = mutable.TreeMap.empty[Long, Win[A]]
      storedWindows.foreach(s => ws(s.start) = new Win(s.start, s.agg, s.maxTs, changed = false, created = false))
      val rs = new Records[A]
      storedRecords.foreach(s => rs.add(new StoredRecord(s.start, s.agg, fresh = false)))
      ks = new KeyState(wk, rk, ws, rs, storedWindows, storedRecords)
      touched.put(copyKey(k), ks)
    }
    ks
  }

  override def process(key: K, keyIsNull: Boolean, record: R, ts: Long, tsIsNull: Boolean): Unit = {
    if (tsIsNull || ts < 0) { counters.add(NullTimestamps); return }
    if (keyIsNull) { counters.add(NullKeys); return }
    recordSeen(counters, streamTime, ts)
    streamTime.advance(ts)
    val close = closeTime
    if (endOf(ts) < close) { counters.add(LateDropped); return }
    val ks = load(key)
    val own = aggregator.add(aggregator.initial(), record)
    // the windows containing ts start in [ts - d, ts] (ts >= 0: no underflow); batched: at finish
    if (!batched) ks.windows.valuesIteratorFrom(ts - d).takeWhile(_.start <= ts).foreach { w =>
      if (endOf(w.start) >= close) {
        w.agg = aggregator.add(w.agg, record)
        if (ts > w.maxTs) w.maxTs = ts
        w.changed = true
        counters.add(Updates)
      }
    }
    val previous = ks.records.latestBefore(ts) // ts >= 0: Long.MinValue is "none"
    ks.records.add(new StoredRecord(ts, own, fresh = true))
    if (batched) ks.fresh += new FreshRecord(ts, own, close)
    create(ks, if (ts < d) 0L else ts - d, close)
    if (ts < Long.MaxValue) create(ks, ts + 1, close) // no window starts after Long.MaxValue
    if (previous != Long.MinValue) create(ks, previous + 1, close)
  }

  /** Rule 6 for the window starting at `start`. */
  private def create(ks: KeyState[SK, A], start: Long, close: Long): Unit = {
    val end = endOf(start)
    if (end >= close && !ks.windows.contains(start)) {
      if (batched) {
        if (ks.records.holdsAny(start, end)) { // its value: at finish (fold)
          ks.windows(start) = new Win(start, null.asInstanceOf[A], Long.MinValue, changed = true, created = true)
          ks.firstCreated = math.min(ks.firstCreated, start)
          counters.add(Created)
        }
      } else {
        var agg = aggregator.initial()
        var last = Long.MinValue
        ks.records.between(start, end).foreach { r =>
          agg = aggregator.merge(agg, r.agg)
          last = r.ts
          if (r.fresh) counters.add(Updates)
        }
        if (last != Long.MinValue) {
          ks.windows(start) = new Win(start, agg, last, changed = true, created = true)
          counters.add(Created)
        }
      }
    }
  }

  /**
   * The batched path's values (see the class contract): every window of the key that may hold a
   * record of this batch (start from the smallest record's ts - d, or the first window created
   * in the batch, to the largest record's ts + 1), in start order, so in end order: the batch's
   * records whose close time at arrival is at most the window's end are turned on in the tree
   * before the window folds its range.
   */
  private def fold(ks: KeyState[SK, A]): Unit = if (ks.fresh.nonEmpty) {
    if (ks.fresh.length <= smallFold && ks.storedRecords.length <= smallFold) foldSmall(ks) else foldTree(ks)
  }

  /**
   * `fold` for a key with few records: per window, its value (the stored value, or for a window
   * created in the batch the stored records in its range) and the batch's records in its range
   * that arrived while it was open, merged at once.
   */
  private def foldSmall(ks: KeyState[SK, A]): Unit = {
    val fresh = ks.fresh
    var lo = Long.MaxValue
    var hi = Long.MinValue
    var i = 0
    while (i < fresh.length) { val t = fresh(i).ts; if (t < lo) lo = t; if (t > hi) hi = t; i += 1 }
    val stored = ks.storedRecords
    val parts = new Array[Any](fresh.length + stored.length + 1)
    val it = ks.windows.valuesIteratorFrom(math.min(if (lo < d) 0L else lo - d, ks.firstCreated))
    var more = it.hasNext
    while (more) {
      val w = it.next()
      if (w.start - 1 > hi) more = false // start >= 0: no underflow
      else {
        val end = endOf(w.start)
        var n = 0
        var maxTs = Long.MinValue
        if (w.created) {
          var j = 0
          while (j < stored.length) {
            val r = stored(j)
            if (r.start >= w.start && r.start <= end) { parts(n) = r.agg; n += 1; if (r.start > maxTs) maxTs = r.start }
            j += 1
          }
        } else { parts(0) = w.agg; n = 1; maxTs = w.maxTs }
        val before = n
        var j = 0
        while (j < fresh.length) {
          val r = fresh(j)
          if (r.ts >= w.start && r.ts <= end && r.closeAtArrival <= end) {
            parts(n) = r.own; n += 1; if (r.ts > maxTs) maxTs = r.ts
          }
          j += 1
        }
        counters.add(Updates, (n - before).toLong)
        if (w.created || n > before) {
          w.agg = if (n == 0) null.asInstanceOf[A] else aggregator.mergeAll(parts, n)
          w.maxTs = maxTs
          if (!w.created) w.changed = true
        }
        java.util.Arrays.fill(parts.asInstanceOf[Array[AnyRef]], 0, n, null) // keeps no aggregate alive
        more = it.hasNext
      }
    }
  }

  /** `fold` over [[FoldTree]]s: O(log n) merges per window. */
  private def foldTree(ks: KeyState[SK, A]): Unit = {
    val fresh = ks.fresh.toArray // sorted by ts, stable, without boxing
    java.util.Arrays.sort(
      fresh,
      new java.util.Comparator[FreshRecord[A]] {
        override def compare(x: FreshRecord[A], y: FreshRecord[A]): Int = java.lang.Long.compare(x.ts, y.ts)
      }
    )
    val times = fresh.map(_.ts).toArray
    val lo = times.head
    val hi = times.last
    val from = math.min(if (lo < d) 0L else lo - d, ks.firstCreated)
    val wins = ks.windows.valuesIteratorFrom(from).takeWhile(_.start - 1 <= hi).toArray // start >= 0: no underflow
    if (wins.isEmpty) return
    val firstEnd = endOf(wins.head.start)
    val tree =
      new FoldTree[A](
        scala.collection.immutable.ArraySeq.unsafeWrapArray(fresh).map(_.own),
        times.toIndexedSeq,
        p => fresh(p).closeAtArrival <= firstEnd,
        aggregator
      )
    val later = fresh.indices.filter(p => fresh(p).closeAtArrival > firstEnd).sortBy(p => fresh(p).closeAtArrival)
    var next = 0
    lazy val stored = {
      val rs = ks.storedRecords.sortBy(_.start) // stored in arrival order
      val storedTimes = rs.map(_.start)
      (new FoldTree[A](rs.toIndexedSeq.map(_.agg), storedTimes.toIndexedSeq, _ => true, aggregator), storedTimes)
    }
    wins.foreach { w =>
      val end = endOf(w.start)
      while (next < later.length && fresh(later(next)).closeAtArrival <= end) { tree.activate(later(next)); next += 1 }
      val f = tree.fold(firstAtOrAfter(times, w.start), firstAfter(times, end))
      counters.add(Updates, f.count.toLong)
      if (w.created) {
        val (storedTree, storedTimes) = stored
        val s = storedTree.fold(firstAtOrAfter(storedTimes, w.start), firstAfter(storedTimes, end))
        w.agg = if (s.count == 0) f.agg else if (f.count == 0) s.agg else aggregator.merge(s.agg, f.agg)
        w.maxTs = math.max(s.maxTs, f.maxTs)
      } else if (f.count > 0) {
        w.agg = aggregator.merge(w.agg, f.agg)
        w.maxTs = math.max(w.maxTs, f.maxTs)
        w.changed = true
      }
    }
  }

  /**
   * Ends the batch: emits (see the class contract), closes windows with end < close time, drops
   * records no open window needs, persists stream time and records the state size.
   */
  override def finish(): Unit = {
    val close = closeTime
    val closing = ArrayBuffer.empty[(K, StoredSession[A])]
    touched.forEach { (k, ks) =>
      if (batched) fold(ks)
      val open = ArrayBuffer.empty[StoredSession[A]]
      var unchanged = true // every open window as stored
      var gone = 0L
      ks.windows.valuesIterator.foreach { w =>
        val end = endOf(w.start)
        if (!finalResults && w.changed) {
          output.result(k, w.start, end, w.agg, w.maxTs)
          counters.add(Emitted)
        }
        if (close != Long.MinValue && end < close) {
          gone += 1
          if (finalResults) closing += ((k, StoredSession(w.start, end, w.maxTs, w.agg)))
        } else {
          open += StoredSession(w.start, end, w.maxTs, w.agg)
          if (w.changed || w.created) unchanged = false
        }
      }
      counters.add(Closed, gone)
      // a key whose windows and records are as stored is not written again
      if (!unchanged || open.length != ks.storedWindows.length)
        state.put(ks.windowsKey, open.toList, ks.storedWindows.toSeq)
      val kept = ArrayBuffer.empty[StoredSession[A]]
      var keptFresh = false
      ks.records.all.foreach { r =>
        if (close == Long.MinValue || neededUntil(r.ts) >= close) {
          kept += StoredSession(r.ts, neededUntil(r.ts), r.ts, r.agg)
          if (r.fresh) keptFresh = true
        }
      }
      if (keptFresh || kept.length != ks.storedRecords.length)
        state.put(ks.recordsKey, kept.toList, ks.storedRecords.toSeq)
    }
    touched.clear()
    // other keys: windows that close now, and records no open window can contain
    if (close != Long.MinValue) state.closeBefore(close) { (sk, s) =>
      if (stateKeys.isWindows(sk)) {
        counters.add(Closed)
        if (finalResults) closing += ((stateKeys.keyOf(sk), s))
      }
    }
    endBatch(closing)
  }
}

private[window] object SlidingAggregateProcessor {

  /** The most records of the batch (and of the store) a key folds without a [[FoldTree]]. */
  val SmallFold = 8

  /**
   * A window while the batch runs: `[start, start + d]`; `changed` or `created` in this batch
   * (on the batched path a created window's `agg` is null until `fold`).
   */
  final class Win[A](val start: Long, var agg: A, var maxTs: Long, var changed: Boolean, val created: Boolean)

  /** A record kept for building windows: its timestamp and own aggregate; `fresh`: of this batch. */
  final class StoredRecord[A](val ts: Long, val agg: A, val fresh: Boolean)

  /** A record of this batch on the batched path: also the close time when it arrived. */
  final class FreshRecord[A](val ts: Long, val own: A, val closeAtArrival: Long)

  /** The first index of sorted `times` with a value >= `t` (`times.length` when none). */
  def firstAtOrAfter(times: Array[Long], t: Long): Int = {
    var lo = 0
    var hi = times.length
    while (lo < hi) { val m = (lo + hi) >>> 1; if (times(m) < t) lo = m + 1 else hi = m }
    lo
  }

  /** The first index of sorted `times` with a value > `t` (`times.length` when none). */
  def firstAfter(times: Array[Long], t: Long): Int =
    if (t == Long.MaxValue) times.length else firstAtOrAfter(times, t + 1)

  /**
   * A key's records by timestamp; records of one timestamp in the order they were added (the
   * order a stable sort by timestamp gives, so windows merge their records' aggregates in the
   * same order whether the records came from the store or from this batch).
   */
  final class Records[A] {
    private val byTs = mutable.TreeMap.empty[Long, ArrayBuffer[StoredRecord[A]]]
    private val inArrival = ArrayBuffer.empty[StoredRecord[A]]

    def add(r: StoredRecord[A]): Unit = {
      byTs.getOrElseUpdate(r.ts, ArrayBuffer.empty) += r
      inArrival += r
    }

    /** The largest timestamp < `ts`, or `Long.MinValue` when there is none. */
    def latestBefore(ts: Long): Long = byTs.maxBefore(ts).fold(Long.MinValue)(_._1)

    /** Whether a record has `from <= ts <= to`. */
    def holdsAny(from: Long, to: Long): Boolean = byTs.minAfter(from).exists(_._1 <= to)

    /** The records with `from <= ts <= to`, by timestamp. */
    def between(from: Long, to: Long): Iterator[StoredRecord[A]] =
      byTs.iteratorFrom(from).takeWhile(_._1 <= to).flatMap(_._2)

    /** Every record, in the order added (the order they are stored in). */
    def all: Iterator[StoredRecord[A]] = inArrival.iterator
  }

  /** A key's state keys, windows (by start) and records in this batch, and both as stored at batch start. */
  final class KeyState[SK, A](
      val windowsKey: SK,
      val recordsKey: SK,
      val windows: mutable.TreeMap[Long, Win[A]],
      val records: Records[A],
      val storedWindows: Array[StoredSession[A]],
      val storedRecords: Array[StoredSession[A]]
  ) {

    /** The batch's records (batched path), in arrival order. */
    val fresh: ArrayBuffer[FreshRecord[A]] = ArrayBuffer.empty

    /** The smallest start of a window created in this batch (batched path). */
    var firstCreated: Long = Long.MaxValue
  }
}
