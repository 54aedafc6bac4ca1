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
 *   latest   key                                   -> validFrom:8 indexed:8 tomb:1 recent history  value
 *   history  klen:4 key ~flip(validFrom):8          -> validTo:8 tomb:1 value   (newest first)
 *   expiry   flip(segment):8 kind:1 key             -> ()
 *   meta     "t"                                    -> stream time:8 lowest segment:8 cleaned through:8 versions:8 layout:1
 * }}}
 *
 * A key's newest history versions live in its latest entry, with their values ([[RecentHistory]]:
 * at most 16, newest first, each a varint time delta, a varint length and the value); only older
 * ones have entries of their own in the history family, and the latest entry's `truncated` bit
 * says there may be some. So a key with at most 16 history versions is one entry, and a version
 * costs its value and a few bytes, with no hash entry or key of its own. Example: puts at 10, 20,
 * 30 and 40: the latest entry holds the value at 40 and [30, 20, 10] with their values, not
 * truncated; `get(k, 25)` finds 20 there (valid to 30, its newer neighbour's validFrom).
 *  - A put of a new latest version moves the old latest to the front of the list: the other
 *    versions' bytes are copied unchanged. The 17th moves the oldest into the history family.
 *  - `get(key, asOf)` older than the latest, and an out-of-order put, answer from the latest
 *    entry when its list covers the time (the time is at or after the oldest held, or the list is
 *    not truncated). Only an older time of a truncated list scans the key's history family.
 *    An out-of-order put within the list inserts there (the oldest moving out past 16).
 *  - Cleanup of a key deletes its expired versions from the history family (a scan, only when
 *    truncated), then from the list's old end: every version in the list is newer than every one
 *    in the family.
 *
 * Time is cut into segments of `segmentIntervalMs` (Kafka's default for the retention, unless
 * given). The expiry index holds one history entry per key (kind 0), in a segment at or before
 * the one in which the key's oldest history version ends, and one entry per latest tombstone
 * (kind 1): `indexed` in the latest entry is the segment of the key's history entry. The common
 * put (a new latest version) writes only the latest entry, and an index entry only when the key
 * had no history. Cleanup drains the index up to the last segment wholly at or before the
 * cutoff, deletes each of those keys' expired versions and indexes the key again where its oldest
 * remaining version ends; then it deletes the expired latest tombstones: a key's history is found
 * through its latest entry, so the latest entry goes last. Example: tombstones at 57 and 77 (the
 * one at 57 now history, valid to 77) index a tombstone in segment 57 and history in segment 77;
 * a cleanup past 77 deletes the history version at 57, then the latest tombstone at 77.
 * The segment interval only sets the index's granularity: reopening with another is safe.
 *
 * The layout is version 3 (the meta's `layout` byte). Layout 2 listed only the validFrom of the
 * newest 16 history versions in the latest entry, every version in the history family, and an
 * index entry per key and segment: such a store is read as it is, entry by entry (bit 6 of an
 * entry's count byte tells them apart), its entries written in layout 3 as they change. A store
 * of layout 1 (before the list, no layout byte) fails to open with
 * `KSTATE_VERSIONED_STORE_LAYOUT_OUTDATED`; a newer one (a later kstate's: the meta's last byte,
 * the meta at least 33 bytes) with `KSTATE_CHECKPOINT_FROM_NEWER_KSTATE`. A store without meta is
 * empty (every put moves stream time, which the meta records at commit).
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
  private var upgrading = false
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
    if (layout < OldestReadable) throw KStateErrors.versionedStoreLayoutOutdated(name, layout, Layout)
    val b = ByteBuffer.wrap(raw)
    streamTime = b.getLong; lowestSegment = b.getLong; cleanedThrough = b.getLong; versions = b.getLong
    // an older layout's entries are rewritten in this one as they change: the meta says so from
    // the next commit on, so that an older kstate refuses the store rather than misread it
    upgrading = layout < Layout
  }
  private var metaMoved = upgrading
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

  /** The history `key`'s latest entry holds, null without a latest entry (a test seam). */
  private[kstate] def recentOf(key: Array[Byte]): RecentHistory = Option(latestOf(key)).map(_.recent).orNull

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
      latest.put(
        latestKey,
        if (raw == null) latestEntry(timestamp, NoSegment, value, RecentHistory.Empty)
        else newLatest(key, raw, rawFrom, timestamp, value)
      )
      if (value == null) addIndex(segmentOf(timestamp), KindTombstone, key)
      counted(1)
      return Latest
    }
    val cur = decodeLatest(raw)
    if (timestamp == cur.from) {
      latest.put(latestKey, latestEntry(timestamp, cur.indexed, value, cur.recent))
      if (value == null && !cur.tomb) addIndex(segmentOf(timestamp), KindTombstone, key)
      Latest
    } else if (cur.recent.covers(timestamp)) {
      insertIntoRecent(key, value, timestamp, cur)
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
    } else if (cur.recent.covers(asOf)) {
      val r = cur.recent
      val i = r.floorIndex(asOf)
      if (i < 0 || r.value(i) == null) null else VersionedRecord(r.value(i), r.from(i), Some(r.validTo(i, cur.from)))
    } else {
      val h = historyFloor(key, asOf)
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
    // latest entry, and a tombstone's index entry may be in an older segment than its key's
    // history (one left when an older tombstone moved into history)
    entries.forEach { k =>
      val userKey = java.util.Arrays.copyOfRange(k, 9, k.length)
      if (seen.add(ByteBuffer.wrap(java.util.Arrays.copyOfRange(k, 8, k.length)))) k(8) match {
        case KindHistory => removed += deleteHistoryBefore(userKey, bound, lastExpired)
        case KindTombstone => tombstones.add(userKey)
      }
      expiry.delete(k)
    }
    tombstones.forEach { key =>
      val cur = latestOf(key)
      if (cur != null && cur.tomb && cur.from < bound) {
        // its history ended before the tombstone, so before `bound`: deleted above
        latest.delete(key); removed += 1 + cur.recent.size
      }
    }
    lowestSegment = math.max(lowestSegment, lastExpired + 1)
    cleanedThrough = lastExpired
    versions -= removed
    metaMoved = true
    removed
  }

  /**
   * Deletes `key`'s history versions with validTo < `bound` (the oldest ones: those in the
   * history family first, then the oldest held in its latest entry), rewrites its latest entry
   * without them, and indexes the key again at its oldest remaining history version's end;
   * returns how many it deleted.
   */
  private def deleteHistoryBefore(key: Array[Byte], bound: Long, lastExpired: Long): Int = {
    val cur = latestOf(key)
    if (cur == null) return 0 // a key's history never outlives its latest entry
    val recent = cur.recent
    var removed = 0
    var familyLeft = false
    var oldestValidTo = NoTime // the oldest remaining history version's validTo, if any
    if (recent.truncated) {
      val all = historyVersions(key) // newest first
      var keep = all.length
      while (keep > 0 && all(keep - 1)._2 < bound) keep -= 1
      var i = keep
      while (i < all.length) { history.delete(historyKey(key, all(i)._1)); i += 1 }
      removed += all.length - keep
      familyLeft = keep > 0
      if (familyLeft) oldestValidTo = all(keep - 1)._2
    }
    // a version held in the latest entry is newer than every one in the history family: none
    // of them ends before `bound` while one in the family does not
    val expired = if (familyLeft) 0 else recent.expiredBefore(bound, cur.from)
    val left = recent.withoutOldest(expired, familyLeft)
    removed += expired
    if (!familyLeft && left.size > 0) oldestValidTo = left.validTo(left.size - 1, cur.from)
    val indexed =
      if (oldestValidTo == NoTime) NoSegment
      else {
        val s = segmentOf(oldestValidTo)
        if (cur.indexed != NoSegment && cur.indexed > lastExpired && cur.indexed <= s) cur.indexed
        else { addIndex(s, KindHistory, key); s }
      }
    if ((left ne recent) || indexed != cur.indexed) latest.put(key, latestEntry(cur.from, indexed, cur.value, left))
    removed
  }

  /** The validFrom and validTo of every version of `key` in the history family, newest first (a scan). */
  private def historyVersions(key: Array[Byte]): Array[(Long, Long)] = {
    historyScans += 1
    val prefix = keyPrefix(key)
    val it = history.scanGroup(KeyGroups.LengthPrefixed, prefix, prefix, Bytes.prefixEnd(prefix))
    val out = Array.newBuilder[(Long, Long)]
    try it.foreach { case (k, v) => out += ((fromOf(k), ByteBuffer.wrap(v).getLong)) }
    finally it.close()
    out.result()
  }

  // ---- internals ---------------------------------------------------------------------------

  /** A version in the history family. */
  private final class Version(val from: Long, val validTo: Long, val tomb: Boolean, val value: Array[Byte])

  /**
   * A latest entry: `indexed` is the segment of its key's history index entry (see the class
   * doc), `recent` its newest history versions, decoded when first asked for.
   */
  private final class LatestVersion(raw: Array[Byte]) {
    val from: Long = ByteBuffer.wrap(raw).getLong(0)
    val indexed: Long = ByteBuffer.wrap(raw).getLong(8)
    val tomb: Boolean = raw(16) == 1
    private val valueAt = RecentHistory.endOf(raw, 17)
    def value: Array[Byte] = if (tomb) null else java.util.Arrays.copyOfRange(raw, valueAt, raw.length)
    lazy val recent: RecentHistory = RecentHistory.readFrom(raw, 17, from)
  }

  private def latestOf(key: Array[Byte]): LatestVersion = decodeLatest(latest.get(key))

  /** The latest version in latest-entry bytes `b` (null for null). */
  private def decodeLatest(b: Array[Byte]): LatestVersion = if (b == null) null else new LatestVersion(b)

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
   * Keeps the key indexed at or before the segment in which a history version now ending at
   * `validTo` ends: returns the segment of the key's index entry, `indexed` when that entry is
   * known to exist there or earlier (and no cleanup has drained it), else a new entry's.
   */
  private def indexHistory(key: Array[Byte], validTo: Long, indexed: Long): Long = {
    val s = segmentOf(validTo)
    if (indexed != NoSegment && indexed <= s && indexed > cleanedThrough) indexed
    else { addIndex(s, KindHistory, key); s }
  }

  /**
   * The common put, on the latest entry's bytes `raw` (its validFrom `rawFrom` < `from`): the
   * latest version moves to the front of the recent history, whose other versions' bytes are
   * copied unchanged; past [[RecentHistory.Max]] the oldest moves into the history family. A key
   * with no history before is indexed at the moved version's end.
   */
  private def newLatest(
      key: Array[Byte],
      raw: Array[Byte],
      rawFrom: Long,
      from: Long,
      value: Array[Byte]
  ): Array[Byte] = {
    val dir = raw(17)
    val layout2 = RecentHistory.isLayout2(dir)
    val n = if (layout2) 0 else RecentHistory.sizeOf(dir)
    val hadHistory = RecentHistory.sizeOf(dir) > 0 || RecentHistory.truncatedIn(dir)
    val valueAt = RecentHistory.endOf(raw, 17)
    var heldEnd = valueAt // the end of the held versions' bytes that stay
    var truncated = hadHistory && (layout2 || RecentHistory.truncatedIn(dir))
    if (n == RecentHistory.Max) {
      val oldest = RecentHistory.oldestIn(raw, 17, rawFrom)
      history.put(historyKey(key, oldest.from), entry(oldest.validTo, oldest.value))
      heldEnd = oldest.offset
      truncated = true
    }
    val rawIndexed = ByteBuffer.wrap(raw).getLong(8)
    val indexed = if (hadHistory) rawIndexed else indexHistory(key, from, NoSegment)
    val oldTomb = raw(16) == 1
    val oldValueLength = raw.length - valueAt
    val delta = from - rawFrom
    val vlen = if (oldTomb) 0L else oldValueLength + 1L
    val held = if (layout2) 0 else heldEnd - 18
    val b = ByteBuffer.allocate(
      18 + RecentHistory.varLongSize(delta) + RecentHistory.varLongSize(vlen) + (if (oldTomb) 0 else oldValueLength) +
        held + (if (value == null) 0 else value.length)
    )
    b.putLong(from).putLong(indexed).put((if (value == null) 1 else 0).toByte)
    b.put(RecentHistory.dirByte(math.min(n + 1, RecentHistory.Max), truncated))
    RecentHistory.putVarLong(b, delta)
    RecentHistory.putVarLong(b, vlen)
    if (!oldTomb) b.put(raw, valueAt, oldValueLength)
    if (held > 0) b.put(raw, 18, held)
    if (value != null) b.put(value)
    b.array()
  }

  /** The version of `key` in the history family with the largest validFrom <= ts (a scan). */
  private def historyFloor(key: Array[Byte], ts: Long): Version = {
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

  /** The smallest validFrom > ts among `key`'s versions in the history family, else `otherwise` (a scan). */
  private def historyNext(key: Array[Byte], ts: Long, otherwise: Long): Long = {
    historyScans += 1
    val prefix = keyPrefix(key)
    val it = history.scanGroup(KeyGroups.LengthPrefixed, prefix, prefix, Some(historyKey(key, ts)))
    var next = otherwise
    try it.foreach { case (k, _) => next = fromOf(k) }
    finally it.close()
    next
  }

  /** An out-of-order put at a time the latest entry's recent history covers. */
  private def insertIntoRecent(key: Array[Byte], value: Array[Byte], ts: Long, cur: LatestVersion): Long = {
    val recent = cur.recent
    val i = recent.floorIndex(ts)
    if (i >= 0 && recent.from(i) == ts) {
      latest.put(key, latestEntry(cur.from, cur.indexed, cur.value, recent.replaced(i, value)))
      recent.validTo(i, cur.from)
    } else {
      counted(1)
      val next = recent.nextFrom(ts, cur.from)
      var held = recent.inserted(ts, value)
      // the oldest version's end may move earlier (a split, or a new oldest version) only
      // while no version is in the history family
      val indexed =
        if (recent.truncated) cur.indexed else indexHistory(key, held.validTo(held.size - 1, cur.from), cur.indexed)
      if (held.size > RecentHistory.Max) {
        val o = held.size - 1
        history.put(historyKey(key, held.from(o)), entry(held.validTo(o, cur.from), held.value(o)))
        held = held.withoutOldest(1, stillTruncated = true)
      }
      latest.put(key, latestEntry(cur.from, indexed, cur.value, held))
      next
    }
  }

  /** An out-of-order put older than every version the latest entry holds, whose key has versions in the history family. */
  private def insertIntoHistory(key: Array[Byte], value: Array[Byte], ts: Long, cur: LatestVersion): Long = {
    val h = historyFloor(key, ts)
    if (h != null && h.from == ts) {
      history.put(historyKey(key, ts), entry(h.validTo, value))
      h.validTo
    } else {
      counted(1)
      val next = historyNext(key, ts, cur.recent.oldestFrom(cur.from))
      // ts splits h's validity: h now ends where the new version begins
      val split = h != null && h.validTo > ts
      if (split) history.put(historyKey(key, h.from), entry(ts, h.value))
      history.put(historyKey(key, ts), entry(next, value))
      val indexed = indexHistory(key, if (split) ts else next, cur.indexed)
      if (indexed != cur.indexed) latest.put(key, latestEntry(cur.from, indexed, cur.value, cur.recent))
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
          val b = ByteBuffer.wrap(v)
          val from = b.getLong(0)
          val at = RecentHistory.endOf(v, 17)
          val value = if (v(16) == 1) null else f(java.util.Arrays.copyOfRange(v, at, v.length))
          latest.put(k, latestEntry(from, b.getLong(8), value, RecentHistory.readFrom(v, 17, from).mapValues(f)))
        }
      finally it.close()
    }
    // the rewritten latest entries are layout 3 (see the class doc)
    for (meta <- store.existingFamily(s"kstate_vs_${name}_meta"); raw <- Option(meta.get(Array[Byte]('t')))) {
      if (raw.length >= MetaBytes && raw(raw.length - 1) < Layout)
        meta.put(Array[Byte]('t'), raw.updated(raw.length - 1, Layout))
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

  /** The history versions a latest entry's bytes hold besides its own (0 in a layout 2 entry). */
  private[kstate] def versionsHeldIn(latestEntry: Array[Byte]): Int =
    if (RecentHistory.isLayout2(latestEntry(17))) 0 else RecentHistory.sizeOf(latestEntry(17))

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

  /**
   * The store's layout (the meta's last byte): 3 since latest entries hold their newest history
   * versions ([[RecentHistory]]); layout 2 (a directory of validFroms) is read too, entry by entry.
   */
  private[kstate] val Layout: Byte = 3
  private[kstate] val OldestReadable: Byte = 2
  private[kstate] val MetaBytes = 33
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

  /** A latest entry's bytes: its version at `from` (`value`, null: a tombstone), index segment and recent history. */
  private def latestEntry(from: Long, indexed: Long, value: Array[Byte], recent: RecentHistory): Array[Byte] = {
    val b = ByteBuffer.allocate(17 + recent.encodedSize(from) + (if (value == null) 0 else value.length))
      .putLong(from).putLong(indexed).put((if (value == null) 1 else 0).toByte)
    recent.writeTo(b, from)
    if (value != null) b.put(value)
    b.array()
  }

  private def entry(ts: Long, value: Array[Byte]): Array[Byte] = {
    val b = ByteBuffer.allocate(9 + (if (value == null) 0 else value.length)).putLong(ts)
    if (value == null) b.put(1.toByte) else b.put(0.toByte).put(value)
    b.array()
  }
}

/** One version: its value (never null), its timestamp, and validTo (None: the latest). */
final case class VersionedRecord(value: Array[Byte], timestamp: Long, validTo: Option[Long])
