package org.apache.spark.sql.kstate.state.versioned

import java.nio.ByteBuffer

import io.kstate.KStateErrors

import org.apache.spark.sql.kstate.state.KStateStore

/**
 * A versioned key/value store (KIP-889, with KIP-914's put result) on one kstate state store:
 * every key keeps its history of values, each valid from its own timestamp until the next
 * version's, so lookups can ask "what was the value as of time t".
 *
 * Rules:
 *  - `put(key, value, ts)` returns the new version's validTo: [[VersionedKeyValueStore.Latest]]
 *    (-1) when it is now the latest version, the next version's timestamp when it went into
 *    history, or [[VersionedKeyValueStore.NotPut]] (`Long.MinValue`) when `ts` is more than the
 *    grace period behind the observed stream time (nothing is stored).
 *  - A null value is a tombstone: a version whose value is "absent". `get` never returns it.
 *  - A put with the timestamp of an existing version replaces that version's value.
 *  - `get(key)` is the latest version; `get(key, asOf)` the version with the largest timestamp
 *    <= asOf (inclusive), or null when `asOf` is older than observed stream time minus the
 *    history retention (the history may have been cleaned up).
 *  - Grace period and history retention are separate settings (Kafka ties them). The grace
 *    period may not exceed the retention: an accepted put must stay queryable.
 *  - Observed stream time is the largest timestamp put so far; it is persisted with the store
 *    when it commits.
 *  - `cleanup()` deletes versions whose validTo is at or before stream time minus retention,
 *    and latest tombstones that old, through a time index: it touches only expired entries.
 *
 * Layout (in four column families of the owning store; `flip` maps signed to unsigned order):
 * {{{
 *   latest   key                                   -> validFrom:8 tomb:1 value
 *   history  klen:4 key ~flip(validFrom):8          -> validTo:8 tomb:1 value   (newest first)
 *   expiry   flip(expiresAt):8 kind:1 klen:4 key validFrom:8  -> ()
 *   meta     "t"                                    -> observed stream time:8
 * }}}
 * Not thread-safe; lives for one store version (one task).
 */
final class VersionedKeyValueStore(
    store: KStateStore,
    name: String,
    historyRetentionMs: Long,
    gracePeriodMs: Long) {
  import VersionedKeyValueStore._

  if (historyRetentionMs < 0 || gracePeriodMs < 0 || gracePeriodMs > historyRetentionMs) {
    throw KStateErrors.invalidVersionedStoreConfig(name, historyRetentionMs, gracePeriodMs)
  }

  private val latest = store.bytes(s"kstate_vs_${name}_latest")
  private val history = store.bytes(s"kstate_vs_${name}_history")
  private val expiry = store.bytes(s"kstate_vs_${name}_expiry")
  private val meta = store.bytes(s"kstate_vs_${name}_meta")
  private val StreamTimeKey = Array[Byte]('t')

  private var streamTime: Long = Option(meta.get(StreamTimeKey)).map(b => ByteBuffer.wrap(b).getLong)
    .getOrElse(NoTime)
  private var streamTimeMoved = false
  // Stream time is written once, when the store commits, not at every put that advances it.
  store.beforeCommit(() => if (streamTimeMoved) {
    meta.put(StreamTimeKey, ByteBuffer.allocate(8).putLong(streamTime).array())
    streamTimeMoved = false
  })

  /** The largest timestamp put so far (`Long.MinValue` before the first put). */
  def observedStreamTime: Long = streamTime

  def put(key: Array[Byte], value: Array[Byte], timestamp: Long): Long = {
    if (timestamp < minus(streamTime, gracePeriodMs)) return NotPut
    if (timestamp > streamTime) {
      streamTime = timestamp
      streamTimeMoved = true
    }
    val cur = latestOf(key)
    if (cur == null || timestamp > cur.from) {
      if (cur != null) {
        if (cur.tomb) expiry.delete(expiryKey(cur.from, KindTombstone, key, cur.from))
        writeHistory(key, cur.from, timestamp, cur.value)
      }
      writeLatest(key, timestamp, value)
      Latest
    } else if (timestamp == cur.from) {
      if (cur.tomb) expiry.delete(expiryKey(cur.from, KindTombstone, key, cur.from))
      writeLatest(key, timestamp, value)
      Latest
    } else {
      insertIntoHistory(key, value, timestamp, cur.from)
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
    if (asOf < minus(streamTime, historyRetentionMs)) return null
    val cur = latestOf(key)
    if (cur != null && cur.from <= asOf) {
      if (cur.tomb) null else VersionedRecord(cur.value, cur.from, None)
    } else {
      val h = floorVersion(key, asOf)
      if (h == null || h.validTo <= asOf || h.tomb) null
      else VersionedRecord(h.value, h.from, Some(h.validTo))
    }
  }

  /** Deletes expired versions and tombstones; returns how many entries it removed. */
  def cleanup(): Int = {
    val cutoff = minus(streamTime, historyRetentionMs)
    if (cutoff == NoTime) return 0
    val it = expiry.scan(Array.emptyByteArray, Some(flip(cutoff + 1)))
    var removed = 0
    try it.foreach { case (k, _) =>
      val b = ByteBuffer.wrap(k)
      val expiresAt = b.getLong ^ Long.MinValue
      val kind = b.get
      val userKey = new Array[Byte](b.getInt)
      b.get(userKey)
      val from = b.getLong
      kind match {
        case KindHistory =>
          val hk = historyKey(userKey, from)
          val h = history.get(hk)
          if (h != null && ByteBuffer.wrap(h).getLong == expiresAt) history.delete(hk)
        case KindTombstone =>
          val cur = latestOf(userKey)
          if (cur != null && cur.tomb && cur.from == from) latest.delete(userKey)
      }
      expiry.delete(k)
      removed += 1
    } finally it.close()
    removed
  }

  // ---- internals ---------------------------------------------------------------------------

  private final class Version(val from: Long, val validTo: Long, val tomb: Boolean,
      val value: Array[Byte])

  private def latestOf(key: Array[Byte]): Version = {
    val b = latest.get(key)
    if (b == null) null else decode(b, from = ByteBuffer.wrap(b).getLong, validTo = Latest)
  }

  private def decode(b: Array[Byte], from: Long, validTo: Long): Version = {
    val tomb = b(8) == 1
    new Version(from, validTo, tomb, if (tomb) null else java.util.Arrays.copyOfRange(b, 9, b.length))
  }

  private def writeLatest(key: Array[Byte], from: Long, value: Array[Byte]): Unit = {
    latest.put(key, entry(from, value))
    if (value == null) expiry.put(expiryKey(from, KindTombstone, key, from), Array.emptyByteArray)
  }

  private def writeHistory(key: Array[Byte], from: Long, validTo: Long, value: Array[Byte]): Unit = {
    history.put(historyKey(key, from), entry(validTo, value))
    expiry.put(expiryKey(validTo, KindHistory, key, from), Array.emptyByteArray)
  }

  /** The history version of `key` with the largest validFrom <= ts. */
  private def floorVersion(key: Array[Byte], ts: Long): Version = {
    val prefix = keyPrefix(key)
    val it = history.scan(historyKey(key, ts), org.apache.spark.sql.kstate.state.store.Bytes.prefixEnd(prefix))
    try {
      if (!it.hasNext) null
      else {
        val (k, v) = it.next()
        val from = ~ByteBuffer.wrap(k, k.length - 8, 8).getLong ^ Long.MinValue
        decode(v, from, ByteBuffer.wrap(v).getLong)
      }
    } finally it.close()
  }

  /** The smallest validFrom > ts among `key`'s history versions, else the latest's. */
  private def nextFrom(key: Array[Byte], ts: Long, latestFrom: Long): Long = {
    val it = history.scan(keyPrefix(key), Some(historyKey(key, ts)))
    var next = latestFrom
    try it.foreach { case (k, _) => next = ~ByteBuffer.wrap(k, k.length - 8, 8).getLong ^ Long.MinValue }
    finally it.close()
    next
  }

  private def insertIntoHistory(key: Array[Byte], value: Array[Byte], ts: Long, latestFrom: Long): Long = {
    val h = floorVersion(key, ts)
    if (h != null && h.from == ts) {
      history.put(historyKey(key, ts), entry(h.validTo, value))
      h.validTo
    } else {
      val next = nextFrom(key, ts, latestFrom)
      if (h != null && h.validTo > ts) {
        // ts splits h's validity: h now ends where the new version begins
        expiry.delete(expiryKey(h.validTo, KindHistory, key, h.from))
        writeHistory(key, h.from, ts, h.value)
      }
      writeHistory(key, ts, next, value)
      next
    }
  }
}

object VersionedKeyValueStore {
  /** put's result when the record is the latest version of its key (KIP-914). */
  val Latest: Long = -1L
  /** put's result when the record was older than the grace period and not stored (KIP-914). */
  val NotPut: Long = Long.MinValue

  private val NoTime = Long.MinValue
  private val KindHistory: Byte = 0
  private val KindTombstone: Byte = 1

  /** `t - d`, saturating at `Long.MinValue` (no stream time yet means no cutoff). */
  private def minus(t: Long, d: Long): Long = if (t == NoTime || t < Long.MinValue + d) NoTime else t - d

  private def flip(ts: Long): Array[Byte] = ByteBuffer.allocate(8).putLong(ts ^ Long.MinValue).array()

  private def keyPrefix(key: Array[Byte]): Array[Byte] =
    ByteBuffer.allocate(4 + key.length).putInt(key.length).put(key).array()

  private def historyKey(key: Array[Byte], from: Long): Array[Byte] =
    ByteBuffer.allocate(12 + key.length).putInt(key.length).put(key)
      .putLong(~(from ^ Long.MinValue)).array()

  private def expiryKey(expiresAt: Long, kind: Byte, key: Array[Byte], from: Long): Array[Byte] =
    ByteBuffer.allocate(21 + key.length).putLong(expiresAt ^ Long.MinValue).put(kind)
      .putInt(key.length).put(key).putLong(from).array()

  private def entry(ts: Long, value: Array[Byte]): Array[Byte] = {
    val b = ByteBuffer.allocate(9 + (if (value == null) 0 else value.length)).putLong(ts)
    if (value == null) b.put(1.toByte) else b.put(0.toByte).put(value)
    b.array()
  }
}

/** One version: its value (never null), its timestamp, and validTo (None: the latest). */
final case class VersionedRecord(value: Array[Byte], timestamp: Long, validTo: Option[Long])
