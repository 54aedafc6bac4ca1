package org.apache.spark.sql.kstate.operatorstate

import java.nio.ByteBuffer

import org.apache.spark.sql.kstate.errors.KStateErrors

import org.apache.spark.sql.kstate.provider.KStateStore
import org.apache.spark.sql.kstate.engine.{Bytes, KeyGroups}

/**
 * A versioned key/value store (KIP-889, with KIP-914's put result) on one kstate state store:
 * every key keeps its history of values, each valid from its own timestamp until the next
 * version's, so lookups can ask "what was the value as of time t".
 *
 * Rules:
 *  - `put(key, value, ts)` returns the new version's validTo: [[VersionedKeyValueStore.Latest]]
 *    (`Long.MinValue + 1`; KIP-914's -1, see there) when it is now the latest version, the next version's timestamp when it went into
 *    history, or [[VersionedKeyValueStore.NotPut]] (`Long.MinValue`) when `ts` is more than the
 *    grace period behind the observed stream time (nothing is stored).
 *  - A null value is a tombstone: a version whose value is "absent". `get` never returns it.
 *  - A put with the timestamp of an existing version replaces that version's value.
 *  - `get(key)` is the latest version; `get(key, asOf)` the version with the largest timestamp
 *    <= asOf (inclusive). When `asOf` is older than observed stream time minus the history
 *    retention (the history may have been cleaned up) only the latest version answers: it is
 *    returned if its timestamp is <= asOf, else null (Kafka's `RocksDBVersionedStore` rule: the
 *    latest version of a key never expires).
 *  - Grace period and history retention are separate settings (Kafka ties them). The grace
 *    period may not exceed the retention: an accepted put must stay queryable.
 *  - Observed stream time is the largest timestamp put so far; it is persisted with the store
 *    when it commits.
 *  - `cleanup()` deletes versions whose validTo is at or before stream time minus retention,
 *    and latest tombstones that old, through a time index by segment: it reads only the keys that
 *    have versions in an expired time segment, and nothing while no segment has expired.
 *  - `numVersions` is the number of versions held, tombstones included (one per latest entry and
 *    one per history entry): a put of a new timestamp adds one, a put replacing the version of
 *    its timestamp adds none, a put not stored none, `cleanup()` subtracts what it removed.
 *    Persisted with the stream time.
 *
 * Layout (in four column families of the owning store; `flip` maps signed to unsigned order):
 * {{{
 *   latest   key                                   -> validFrom:8 indexed:8 tomb:1 dir:1 from:8 * n  value
 *   history  klen:4 key ~flip(validFrom):8          -> validTo:8 tomb:1 value   (newest first)
 *   expiry   flip(segment):8 kind:1 key             -> ()
 *   meta     "t"                                    -> stream time:8 lowest segment:8 cleaned through:8 versions:8 layout:1
 * }}}
 * Time is cut into segments of `segmentIntervalMs` (Kafka's default for the retention, unless
 * given). The expiry index holds one entry per key and segment in which the key has history
 * versions ending (kind 0), or a latest tombstone (kind 1), not one per version: `indexed` in the
 * latest entry is the segment the key's last entry was written for, so the common put (a new
 * latest version moving the previous one into history) writes two entries, and an index entry
 * only when the history reaches a new segment. Cleanup drains the index up to the last segment
 * wholly at or before the cutoff and deletes each of those keys' expired versions, then the
 * expired latest tombstones: a key's history is found through its latest entry (below), so the
 * latest entry goes last. Example: tombstones at 57 and 77 (the one at 57 now history, valid to
 * 77) index a tombstone in segment 57 and history in segment 77; a cleanup past 77 deletes the
 * history version at 57, then the latest tombstone at 77.
 * The segment interval only sets the index's granularity: reopening with another is safe.
 *
 * The history directory (`dir from:8 * n`, a [[HistoryDirectory]]): the validFrom of the key's
 * newest history versions, newest first, at most 16 (`HistoryDirectory.Max`), and a `truncated`
 * bit (bit 7 of `dir`; bits 0-6 are n): the key may have older history versions, not listed.
 * Versions are contiguous, so a listed version's validTo is its newer neighbour's validFrom (the
 * latest's for the newest). Example: versions at 10, 20, 30 and the latest at 40: the latest entry
 * lists [30, 20, 10], not truncated; `get(k, 25)` finds 20 there (valid to 30) and reads the one
 * history entry `k ~flip(20)`. So the history family is read by point gets:
 *  - a put of a new latest version lists the old latest's validFrom first, dropping the oldest
 *    listed past 16 (and setting `truncated`); a put replacing the latest keeps the directory;
 *  - `get(key, asOf)` older than the latest, and an out-of-order put (its floor version and the
 *    next version's validFrom), answer from the directory when it covers the time (the time is at
 *    or after the oldest listed, or the directory is not truncated); only an older time of a
 *    truncated directory scans the key's history. An out-of-order put lists its timestamp when it
 *    is among the newest 16 (the latest entry is rewritten, its value unchanged);
 *  - cleanup of a key whose directory is not truncated deletes the expired listed versions by key
 *    and rewrites the latest entry without them; of a truncated one it scans the key's history,
 *    deletes the expired versions and lists the newest 16 remaining (truncated iff more remain).
 *
 * The layout is version 2 (the meta's `layout` byte; version 1, before the directory, had no such
 * byte). A store whose meta has an older layout fails to open with
 * `KSTATE_VERSIONED_STORE_LAYOUT_OUTDATED`: its latest entries would be misread; a newer one (a
 * later kstate's: the meta's last byte, the meta at least 33 bytes) with
 * `KSTATE_CHECKPOINT_FROM_NEWER_KSTATE`. A store without
 * meta is empty (every put moves stream time, which the meta records at commit).
 *
 * Every history scan reads one key's versions (`klen key`, [[KeyGroups.LengthPrefixed]]): the
 * store answers it from its uncommitted changes by key group, without keeping a sorted view of
 * the history family's changes, which every put adds to.
 *
 * Not thread-safe; lives for one store version (one task).
 */
final class VersionedKeyValueStore(
    store: KStateStore,
    name: String,
    historyRetentionMs: Long,
    gracePeriodMs: Long,
    segmentIntervalMs: Long
) {
  import VersionedKeyValueStore._

  def this(store: KStateStore, name: String, historyRetentionMs: Long, gracePeriodMs: Long) =
    this(
      store,
      name,
      historyRetentionMs,
      gracePeriodMs,
      VersionedKeyValueStore.defaultSegmentInterval(historyRetentionMs)
    )

  if (historyRetentionMs < 0 || gracePeriodMs < 0 || gracePeriodMs > historyRetentionMs) {
    throw KStateErrors.invalidVersionedStoreConfig(s"Versioned store '$name'", historyRetentionMs, gracePeriodMs)
  }
  require(segmentIntervalMs > 0, s"segment interval must be positive, got $segmentIntervalMs ms")

  private val latest = store.bytes(s"kstate_vs_${name}_latest")
  private val history = store.bytes(s"kstate_vs_${name}_history")
  private val expiry = store.bytes(s"kstate_vs_${name}_expiry")
  private val meta = store.bytes(s"kstate_vs_${name}_meta")
  private val StreamTimeKey = Array[Byte]('t')

  private var streamTime: Long = NoTime

  /** No expiry entry is below this segment (cleanup reads from here; nothing to do above `cleanedThrough`). */
  private var lowestSegment: Long = Long.MaxValue

  /** The last segment a cleanup drained: an index entry for it or below is gone. */
  private var cleanedThrough: Long = Long.MinValue

  /** Versions held (see the contract). */
  private var versions: Long = 0L
  Option(meta.get(StreamTimeKey)).foreach { raw =>
    // layout 1 had no layout byte (24 or 32 bytes); from 2 on it is the last byte, and a later
    // layout keeps it last and the meta at least MetaBytes long (docs/upgrades.md)
    val layout = if (raw.length >= MetaBytes) raw(raw.length - 1).toInt else 1
    if (layout > Layout) {
      throw KStateErrors.checkpointFromNewerKstate(
        s"The versioned store '$name' of state store",
        store.id.storeCheckpointLocation().toString,
        layout.toString,
        Seq(Layout.toInt)
      )
    }
    if (layout != Layout) throw KStateErrors.versionedStoreLayoutOutdated(name, layout, Layout)
    val b = ByteBuffer.wrap(raw)
    streamTime = b.getLong; lowestSegment = b.getLong; cleanedThrough = b.getLong; versions = b.getLong
  }
  private var metaMoved = false
  // Written once, when the store commits, not at every put that moves it.
  store.beforeCommit(() =>
    if (metaMoved) {
      meta.put(
        StreamTimeKey,
        ByteBuffer.allocate(MetaBytes).putLong(streamTime).putLong(lowestSegment)
          .putLong(cleanedThrough).putLong(versions).put(Layout).array()
      )
      metaMoved = false
    }
  )

  /** Scans of the history family so far (a test seam: the directory's point reads do none). */
  private[kstate] var historyScans: Int = 0

  /** `key`'s history directory, null without a latest entry (a test seam). */
  private[kstate] def directoryOf(key: Array[Byte]): HistoryDirectory = Option(latestOf(key)).map(_.dir).orNull

  /** The number of versions held, tombstones included (see the contract). */
  def numVersions: Long = versions

  private def counted(added: Int): Unit = { versions += added; metaMoved = true }

  /**
   * The keys that have a latest entry, in byte order, frozen when called (close it when stopping
   * early). Every key whose `get(key, asOf)` can answer has one: cleanup deletes a key's latest
   * entry only when it is a tombstone past the retention, with all of the key's history.
   */
  def keys(): Iterator[Array[Byte]] with AutoCloseable = {
    val it = latest.scan(Array.emptyByteArray, None)
    new Iterator[Array[Byte]] with AutoCloseable {
      override def hasNext: Boolean = it.hasNext
      override def next(): Array[Byte] = it.next()._1
      override def close(): Unit = it.close()
    }
  }

  /** The largest timestamp put so far (`Long.MinValue` before the first put). */
  def observedStreamTime: Long = streamTime

  def put(key: Array[Byte], value: Array[Byte], timestamp: Long): Long = {
    if (timestamp < minus(streamTime, gracePeriodMs)) return NotPut
    if (timestamp > streamTime) {
      streamTime = timestamp
      metaMoved = true
    }
    val latestKey = latest.hashed(key)
    val raw = latest.get(latestKey)
    val rawFrom = if (raw == null) NoTime else ByteBuffer.wrap(raw).getLong(0)
    if (raw == null || timestamp > rawFrom) {
      // The common case, on the latest entry's bytes: it moves into history unchanged but for
      // its header and directory (validFrom:8 indexed:8 tomb:1 dir value -> validTo:8 tomb:1
      // value), and its validFrom goes first in the new latest entry's directory. A latest
      // tombstone moving into history leaves a stale tombstone index entry: cleanup checks the
      // latest entry before it deletes anything.
      val entry = if (raw == null) latestEntry(timestamp, NoSegment, value, HistoryDirectory.Empty)
      else {
        val valueAt = 18 + 8 * HistoryDirectory.sizeOf(raw(17))
        val h = new Array[Byte](9 + raw.length - valueAt)
        ByteBuffer.wrap(h).putLong(timestamp).put(raw(16))
        System.arraycopy(raw, valueAt, h, 9, raw.length - valueAt)
        history.putPrefixed(
          history.keyBuffer(12 + key.length).putInt(key.length).put(key)
            .putLong(~(rawFrom ^ Long.MinValue)).array(),
          h
        )
        movedIntoHistory(raw, timestamp, indexHistory(key, timestamp, ByteBuffer.wrap(raw).getLong(8)), value)
      }
      latest.put(latestKey, entry)
      if (value == null) addIndex(segmentOf(timestamp), KindTombstone, key)
      counted(1)
      return Latest
    }
    val cur = decodeLatest(raw)
    if (timestamp == cur.from) {
      latest.put(latestKey, latestEntry(timestamp, cur.indexed, value, cur.dir))
      if (value == null && !cur.tomb) addIndex(segmentOf(timestamp), KindTombstone, key)
      Latest
    } else {
      insertIntoHistory(key, value, timestamp, cur)
    }
  }

  /** Puts a tombstone at `timestamp`; returns the version that was valid at `timestamp`, if any. */
  def delete(key: Array[Byte], timestamp: Long): VersionedRecord = {
    val before = get(key, timestamp)
    if (put(key, null, timestamp) == NotPut) null else before
  }

  def get(key: Array[Byte]): VersionedRecord = {
    val cur = latestOf(key)
    if (cur == null || cur.tomb) null else VersionedRecord(cur.value, cur.from, None)
  }

  def get(key: Array[Byte], asOf: Long): VersionedRecord = {
    val cur = latestOf(key)
    if (asOf < minus(streamTime, historyRetentionMs)) {
      // past the history retention only the latest version still answers (Kafka's rule: the
      // latest version of a key never expires)
      return if (cur != null && !cur.tomb && cur.from <= asOf) VersionedRecord(cur.value, cur.from, None) else null
    }
    if (cur == null) null // a key's history never outlives its latest entry
    else if (cur.from <= asOf) {
      if (cur.tomb) null else VersionedRecord(cur.value, cur.from, None)
    } else {
      val h = floorVersion(key, asOf, cur)
      if (h == null || h.validTo <= asOf || h.tomb) null
      else VersionedRecord(h.value, h.from, Some(h.validTo))
    }
  }

  /** Deletes expired versions and tombstones; returns how many entries it removed. */
  def cleanup(): Int = {
    val cutoff = minus(streamTime, historyRetentionMs)
    if (cutoff == NoTime || cutoff == Long.MaxValue) return 0
    // segments wholly at or before the cutoff: validTo < bound
    val lastExpired = Math.floorDiv(cutoff + 1, segmentIntervalMs) - 1
    if (lowestSegment > lastExpired) return 0
    val bound = segmentStart(lastExpired + 1)
    val it = expiry.scan(flip(lowestSegment), Some(flip(lastExpired + 1)))
    val entries = new java.util.ArrayList[Array[Byte]]()
    try it.foreach { case (k, _) => entries.add(k) }
    finally it.close()
    val seen = new java.util.HashSet[java.nio.ByteBuffer]()
    val tombstones = new java.util.ArrayList[Array[Byte]]()
    var removed = 0
    // history first, latest tombstones after all of it: a key's history is found through its
    // latest entry's directory, and a tombstone's index entry may be in an older segment than its
    // key's history (one left when an older tombstone moved into history)
    entries.forEach { k =>
      val userKey = java.util.Arrays.copyOfRange(k, 9, k.length)
      if (seen.add(ByteBuffer.wrap(java.util.Arrays.copyOfRange(k, 8, k.length)))) k(8) match {
        case KindHistory => removed += deleteHistoryBefore(userKey, bound)
        case KindTombstone => tombstones.add(userKey)
      }
      expiry.delete(k)
    }
    tombstones.forEach { key =>
      val cur = latestOf(key)
      if (cur != null && cur.tomb && cur.from < bound) { latest.delete(key); removed += 1 }
    }
    lowestSegment = lastExpired + 1
    cleanedThrough = lastExpired
    versions -= removed
    metaMoved = true
    removed
  }

  /**
   * Deletes `key`'s history versions with validTo < `bound` and rewrites its latest entry's
   * directory without them; returns how many.
   */
  private def deleteHistoryBefore(key: Array[Byte], bound: Long): Int = {
    val cur = latestOf(key)
    if (cur == null) return 0 // a key's history never outlives its latest entry
    val (expired, dir) =
      if (!cur.dir.truncated) cur.dir.expiredBefore(bound, cur.from)
      else {
        // the directory does not list the oldest versions: read them all, list the newest remaining
        val all = historyFroms(key)
        var keep = all.length
        def validTo(i: Int) = if (i == 0) cur.from else all(i - 1)
        while (keep > 0 && validTo(keep - 1) < bound) keep -= 1
        (
          java.util.Arrays.copyOfRange(all, keep, all.length),
          HistoryDirectory.newestOf(java.util.Arrays.copyOf(all, keep), more = false)
        )
      }
    expired.foreach(from => history.delete(historyKey(key, from)))
    if (expired.nonEmpty) latest.put(key, latestEntry(cur.from, cur.indexed, cur.value, dir))
    expired.length
  }

  /** The validFrom of every history version of `key`, newest first (a scan). */
  private def historyFroms(key: Array[Byte]): Array[Long] = {
    historyScans += 1
    val prefix = keyPrefix(key)
    val it = history.scanGroup(KeyGroups.LengthPrefixed, prefix, prefix, Bytes.prefixEnd(prefix))
    val froms = Array.newBuilder[Long]
    try it.foreach { case (k, _) => froms += fromOf(k) }
    finally it.close()
    froms.result()
  }

  // ---- internals ---------------------------------------------------------------------------

  /** A history version. */
  private final class Version(val from: Long, val validTo: Long, val tomb: Boolean, val value: Array[Byte])

  /**
   * A latest entry: `indexed` is the segment its key's last history index entry is for, `dir` its
   * directory of the key's history.
   */
  private final class LatestVersion(
      val from: Long,
      val indexed: Long,
      val tomb: Boolean,
      val value: Array[Byte],
      val dir: HistoryDirectory
  )

  private def latestOf(key: Array[Byte]): LatestVersion = decodeLatest(latest.get(key))

  /** The latest version in latest-entry bytes `b` (null for null). */
  private def decodeLatest(b: Array[Byte]): LatestVersion =
    if (b == null) null
    else {
      val bb = ByteBuffer.wrap(b)
      val tomb = b(16) == 1
      val dir = HistoryDirectory.readFrom(b, 17)
      new LatestVersion(
        bb.getLong(0),
        bb.getLong(8),
        tomb,
        if (tomb) null else java.util.Arrays.copyOfRange(b, 17 + dir.encodedSize, b.length),
        dir
      )
    }

  private def decode(b: Array[Byte], from: Long, validTo: Long): Version = {
    val tomb = b(8) == 1
    new Version(from, validTo, tomb, if (tomb) null else java.util.Arrays.copyOfRange(b, 9, b.length))
  }

  private def segmentOf(t: Long): Long = Math.floorDiv(t, segmentIntervalMs)
  private def segmentStart(segment: Long): Long =
    if (segment > Long.MaxValue / segmentIntervalMs) Long.MaxValue else segment * segmentIntervalMs

  private def addIndex(segment: Long, kind: Byte, key: Array[Byte]): Unit = {
    expiry.put(expiryKey(segment, kind, key), Array.emptyByteArray)
    if (segment < lowestSegment) { lowestSegment = segment; metaMoved = true }
  }

  /**
   * Indexes a history version of `key` ending at `validTo`, unless the key's entry for that
   * segment is known to exist (`indexed`, and no cleanup has drained that segment); returns the
   * segment indexed.
   */
  private def indexHistory(key: Array[Byte], validTo: Long, indexed: Long): Long = {
    val s = segmentOf(validTo)
    if (s != indexed || s <= cleanedThrough) addIndex(s, KindHistory, key)
    s
  }

  private def latestEntry(from: Long, indexed: Long, value: Array[Byte], dir: HistoryDirectory): Array[Byte] = {
    val b = ByteBuffer.allocate(17 + dir.encodedSize + (if (value == null) 0 else value.length))
      .putLong(from).putLong(indexed).put((if (value == null) 1 else 0).toByte)
    dir.writeTo(b)
    if (value != null) b.put(value)
    b.array()
  }

  /**
   * The latest entry of a put at `from` whose previous latest entry `raw` moved into history: its
   * validFrom listed first in `raw`'s directory, the oldest listed dropped past the maximum.
   */
  private def movedIntoHistory(raw: Array[Byte], from: Long, indexed: Long, value: Array[Byte]): Array[Byte] = {
    val n = HistoryDirectory.sizeOf(raw(17))
    val listed = math.min(n + 1, HistoryDirectory.Max)
    val truncated = HistoryDirectory.truncatedIn(raw(17)) || n + 1 > HistoryDirectory.Max
    val b = ByteBuffer.allocate(18 + 8 * listed + (if (value == null) 0 else value.length))
      .putLong(from).putLong(indexed).put((if (value == null) 1 else 0).toByte)
      .put(((if (truncated) 0x80 else 0) | listed).toByte).putLong(ByteBuffer.wrap(raw).getLong(0))
      .put(raw, 18, 8 * (listed - 1))
    if (value != null) b.put(value)
    b.array()
  }

  private def writeHistory(key: Array[Byte], from: Long, validTo: Long, value: Array[Byte]): Unit = {
    history.put(historyKey(key, from), entry(validTo, value))
    indexHistory(key, validTo, NoSegment)
  }

  /** The history version of `key` with the largest validFrom <= ts (`cur`: its latest entry). */
  private def floorVersion(key: Array[Byte], ts: Long, cur: LatestVersion): Version =
    if (cur.dir.covers(ts)) {
      val i = cur.dir.floorIndex(ts)
      if (i < 0) null
      else {
        val from = cur.dir.from(i)
        val v = history.get(historyKey(key, from))
        if (v == null) throw new IllegalStateException(
          s"versioned store '$name': the latest entry lists a history version at $from that is missing"
        )
        decode(v, from, cur.dir.validTo(i, cur.from))
      }
    } else {
      historyScans += 1
      val prefix = keyPrefix(key)
      val it = history.scanGroup(KeyGroups.LengthPrefixed, prefix, historyKey(key, ts), Bytes.prefixEnd(prefix))
      try {
        if (!it.hasNext) null
        else {
          val (k, v) = it.next()
          decode(v, fromOf(k), ByteBuffer.wrap(v).getLong)
        }
      } finally it.close()
    }

  /** The smallest validFrom > ts among `key`'s history versions, else the latest's. */
  private def nextFrom(key: Array[Byte], ts: Long, cur: LatestVersion): Long =
    if (cur.dir.covers(ts)) cur.dir.nextFrom(ts, cur.from)
    else {
      historyScans += 1
      val prefix = keyPrefix(key)
      val it = history.scanGroup(KeyGroups.LengthPrefixed, prefix, prefix, Some(historyKey(key, ts)))
      var next = cur.from
      try it.foreach { case (k, _) => next = fromOf(k) }
      finally it.close()
      next
    }

  private def insertIntoHistory(key: Array[Byte], value: Array[Byte], ts: Long, cur: LatestVersion): Long = {
    val h = floorVersion(key, ts, cur)
    if (h != null && h.from == ts) {
      history.put(historyKey(key, ts), entry(h.validTo, value))
      h.validTo
    } else {
      counted(1)
      val next = nextFrom(key, ts, cur)
      if (h != null && h.validTo > ts) {
        // ts splits h's validity: h now ends where the new version begins
        writeHistory(key, h.from, ts, h.value)
      }
      writeHistory(key, ts, next, value)
      val dir = cur.dir.inserted(ts)
      if (dir ne cur.dir) latest.put(key, latestEntry(cur.from, cur.indexed, cur.value, dir))
      next
    }
  }
}

object VersionedKeyValueStore {

  /**
   * Rewrites every stored value (latest and history versions; tombstones have none) of the
   * versioned store `name` in `store` with `f` (a change of the values' schema, in the task that
   * converts them); timestamps, directories and the expiry index stay.
   */
  private[kstate] def mapValues(store: KStateStore, name: String, f: Array[Byte] => Array[Byte]): Unit = {
    for (latest <- store.existingFamily(s"kstate_vs_${name}_latest")) {
      val it = latest.scan(Array.emptyByteArray, None)
      try it.foreach { case (k, v) =>
          if (v(16) != 1) {
            val at = 17 + HistoryDirectory.readFrom(v, 17).encodedSize
            latest.put(k, java.util.Arrays.copyOfRange(v, 0, at) ++ f(java.util.Arrays.copyOfRange(v, at, v.length)))
          }
        }
      finally it.close()
    }
    for (history <- store.existingFamily(s"kstate_vs_${name}_history")) {
      val it = history.scan(Array.emptyByteArray, None)
      try it.foreach { case (k, v) =>
          if (v(8) != 1)
            history.put(k, java.util.Arrays.copyOfRange(v, 0, 9) ++ f(java.util.Arrays.copyOfRange(v, 9, v.length)))
        }
      finally it.close()
    }
  }

  /**
   * put's result when the record is the latest version of its key. KIP-914 uses -1, a valid
   * validTo once event times may be negative (a version ending at -1); kstate uses
   * `Long.MinValue + 1`, which no validTo can be: a validTo is above the put's timestamp, and
   * timestamps are above `Long.MinValue` (kstate's null time).
   */
  val Latest: Long = Long.MinValue + 1

  /** put's result when the record was older than the grace period and not stored (KIP-914). */
  val NotPut: Long = Long.MinValue

  private val NoTime = Long.MinValue

  /** The store's layout (the meta's last byte): 2 since latest entries hold a [[HistoryDirectory]]. */
  private val Layout: Byte = 2
  private val MetaBytes = 33
  private val KindHistory: Byte = 0
  private val KindTombstone: Byte = 1

  /** `t - d`, saturating at `Long.MinValue` (no stream time yet means no cutoff). */
  private def minus(t: Long, d: Long): Long = if (t == NoTime || t < Long.MinValue + d) NoTime else t - d

  private def flip(segment: Long): Array[Byte] = ByteBuffer.allocate(8).putLong(segment ^ Long.MinValue).array()

  private def keyPrefix(key: Array[Byte]): Array[Byte] =
    ByteBuffer.allocate(4 + key.length).putInt(key.length).put(key).array()

  /** The validFrom in history key `k`. */
  private def fromOf(k: Array[Byte]): Long = ~ByteBuffer.wrap(k, k.length - 8, 8).getLong ^ Long.MinValue

  private def historyKey(key: Array[Byte], from: Long): Array[Byte] =
    ByteBuffer.allocate(12 + key.length).putInt(key.length).put(key)
      .putLong(~(from ^ Long.MinValue)).array()

  private def expiryKey(segment: Long, kind: Byte, key: Array[Byte]): Array[Byte] =
    ByteBuffer.allocate(9 + key.length).putLong(segment ^ Long.MinValue).put(kind).put(key).array()

  /** No index entry written (a key without history). */
  private val NoSegment = Long.MinValue

  /**
   * The segment interval when none is given, from the history retention, in the same steps as
   * Kafka's default: a third of it (at least 2 s) up to 1 minute, a fifth (at least 20 s) up to 5
   * minutes, a twelfth (at least 1 minute) up to an hour, else a 24th (at least 5 minutes).
   */
  def defaultSegmentInterval(historyRetentionMs: Long): Long =
    if (historyRetentionMs <= 60000L) math.max(historyRetentionMs / 3, 2000L)
    else if (historyRetentionMs <= 300000L) math.max(historyRetentionMs / 5, 20000L)
    else if (historyRetentionMs <= 3600000L) math.max(historyRetentionMs / 12, 60000L)
    else math.max(historyRetentionMs / 24, 300000L)

  private def entry(ts: Long, value: Array[Byte]): Array[Byte] = {
    val b = ByteBuffer.allocate(9 + (if (value == null) 0 else value.length)).putLong(ts)
    if (value == null) b.put(1.toByte) else b.put(0.toByte).put(value)
    b.array()
  }
}

/** One version: its value (never null), its timestamp, and validTo (None: the latest). */
final case class VersionedRecord(value: Array[Byte], timestamp: Long, validTo: Option[Long])
