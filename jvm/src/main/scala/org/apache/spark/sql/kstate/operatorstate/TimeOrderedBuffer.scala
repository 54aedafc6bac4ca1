package org.apache.spark.sql.kstate.operatorstate

import java.nio.ByteBuffer
import java.util.{Arrays, HashMap, TreeMap}

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.kstate.processor.suppress.{BufferLimits, SuppressBuffer}
import org.apache.spark.sql.kstate.provider.KStateStore
import org.apache.spark.sql.kstate.engine.{Bytes, HashedKey}

/** A record leaving the buffer: its key and latest value, when its key was first buffered, and
 * the timestamp of that latest value. */
final case class BufferedRecord(key: Array[Byte], value: Array[Byte], bufferTime: Long, recordTime: Long)

/**
 * KIP-328's time-ordered key/value buffer (the buffer behind `suppress`), kept in one kstate
 * state store so that it is checkpointed with the operator's state.
 *
 * Contract:
 *  - `put` of a new key buffers it at `bufferTime`; `put` of a buffered key replaces its value and
 *    record time but keeps its original buffer time, so a key's timer is not restarted.
 *  - Order is (buffer time, key bytes unsigned lexicographic), as Kafka's buffer key: oldest
 *    first, and deterministic whatever order the keys were put in.
 *  - `evictWhile(cond)(f)` removes records oldest first, calling `f` for each, as long as `cond`
 *    holds before each removal. `cond` may read `numRecords`, `numBytes` and `minBufferTime`,
 *    which already reflect the removals made so far; `f` must not modify the buffer.
 *  - Accounting is exact: `numRecords`, and `numBytes` = sum over records of
 *    [[TimeOrderedBuffer.recordBytes]] (key + value + the two timestamps and two lengths).
 *  - Limits ([[BufferLimits]]): `enforceLimits` (the [[SuppressBuffer]] contract's) emits early,
 *    fails with `KSTATE_BUFFER_FULL`, or (spill to disk) does nothing, because in that mode the
 *    limits bound the heap instead: the store's uncommitted changes are spilled to its local disk
 *    when they pass the limits, so the buffer may grow past them while heap use stays within
 *    `maxBytes` plus a constant (docs/state-store.md).
 *  - Heap: between micro-batches nothing is held on the heap (the contents are in the store).
 *    Within one, a buffer of at most `heapMirrorMax` records and [[TimeOrderedBuffer.HeapMirrorBytes]]
 *    bytes, with limits that do not spill, is held on the heap (below); otherwise only the
 *    store's write set of changed entries, bounded as above.
 *  - Life cycle: one instance per store version (task); counters are written to the store when
 *    it commits. Keys and values passed in are kept, not copied; returned arrays are fresh.
 *
 * Layout (three column families of the owning store; `flip` maps signed to unsigned order):
 * {{{
 *   time  flip(bufferTime):8 key     -> recordTime:8 value
 *   key   key                        -> bufferTime:8 valueLength:4
 *   meta  "c"                        -> numRecords:8 numBytes:8
 * }}}
 *
 * The heap mirror: while the buffer is small (as above) and its limits do not spill, its records
 * are loaded onto the heap by one scan when the version first uses it, and every operation reads
 * the heap, not the store (an eviction would otherwise scan the store, which merges its
 * uncommitted writes with its committed entries each time). A record first buffered in this
 * version is held only on the heap, and written to the store when the version commits if it is
 * still buffered then; a record of an earlier version is updated and deleted in the store as it
 * changes. Most records of `until_time_limit` wait a few seconds of event time and leave in the
 * micro-batch that brought them, so they never reach the store, its changelog or its working
 * copy. Example: a micro-batch spanning 80 s of event time with a 10-s limit writes about an
 * eighth of its records at the commit, instead of putting and deleting all of them. A buffer
 * that outgrows the mirror writes its unwritten records to the store and goes on in the store
 * for the rest of the version. A failed task's version is never committed, so nothing is lost.
 * Same records, same order, same counters either way.
 *
 * Not thread-safe.
 */
final class TimeOrderedBuffer(
    store: KStateStore,
    val name: String,
    val limits: BufferLimits,
    heapMirrorMax: Int = TimeOrderedBuffer.HeapMirrorMax
) extends SuppressBuffer[Array[Byte], Array[Byte], BufferedRecord] {
  import TimeOrderedBuffer._

  private val byTime = store.bytes(s"kstate_buf_${name}_time")
  private val byKey = store.bytes(s"kstate_buf_${name}_key")
  private val meta = store.bytes(s"kstate_buf_${name}_meta")

  private var records: Long = 0L
  private var bytes: Long = 0L

  /** A lower bound of the oldest buffer time (exact when `minExact`). */
  private var minTime: Long = Long.MaxValue
  private var minExact: Boolean = false
  private var dirty: Boolean = false

  /**
   * No time entry is below this key (within this store version): evictions delete from the
   * oldest end, so scans for the oldest records start here instead of reading past every entry
   * this version has already deleted. A put below it lowers it.
   */
  private var scanFrom: Array[Byte] = Array.emptyByteArray

  /** The records on the heap by time key (null: not loaded, or not allowed), and the same by key. */
  private var mirror: TreeMap[Array[Byte], Held] = _
  private var mirrorKeys: HashMap[HashedKey, Held] = _

  /** False when the limits spill, or once the buffer outgrew the mirror in this version. */
  private var mirrorAllowed = !limits.spills

  Option(meta.get(CountersKey)).foreach { b =>
    val bb = ByteBuffer.wrap(b)
    records = bb.getLong
    bytes = bb.getLong
  }
  if (records == 0) minExact = true
  if (limits.spills) {
    // Each buffered record is two changed entries (time and key families).
    store.limitHeap(
      limits.maxBytes,
      if (limits.maxRecords == Long.MaxValue) Long.MaxValue else 2 * limits.maxRecords
    )
  }
  store.beforeCommit { () =>
    writeUnwritten()
    if (dirty) {
      meta.put(CountersKey, ByteBuffer.allocate(16).putLong(records).putLong(bytes).array())
      dirty = false
    }
  }

  def numRecords: Long = records
  def numBytes: Long = bytes
  def isEmpty: Boolean = records == 0

  /**
   * Whether the records are on the heap: loads them now if the mirror is allowed and the buffer
   * is small enough.
   */
  private def onHeap: Boolean = {
    if (mirror == null && mirrorAllowed) {
      if (records > heapMirrorMax || bytes > HeapMirrorBytes) mirrorAllowed = false
      else {
        mirror = new TreeMap[Array[Byte], Held](Bytes.Order)
        mirrorKeys = new HashMap[HashedKey, Held]()
        val it = byTime.scan(Array.emptyByteArray, None, chunked = true)
        try while (it.hasNext) {
            val (tk, v) = it.next()
            hold(new Held(tk, v, stored = true))
          }
        finally it.close()
      }
    }
    mirror != null
  }

  private def hold(h: Held): Unit = { mirror.put(h.timeKey, h); mirrorKeys.put(h.key, h) }

  /** Writes the records held only on the heap into the store (at the commit, or when the mirror is dropped). */
  private def writeUnwritten(): Unit =
    if (mirror != null) mirror.values().forEach { h =>
      if (!h.stored) {
        byTime.put(h.timeKey, h.value)
        byKey.put(h.key.bytes, index(timeOf(h.timeKey), h.value.length - 8))
        h.stored = true
      }
    }

  /** Leaves the heap for the rest of this version: the store holds every record from now on. */
  private def dropMirror(): Unit = {
    writeUnwritten()
    minTime = if (mirror.isEmpty) Long.MaxValue else timeOf(mirror.firstKey)
    minExact = true
    scanFrom = Array.emptyByteArray
    mirror = null
    mirrorKeys = null
    mirrorAllowed = false
  }

  /** Buffer time of the oldest record, `Long.MaxValue` when empty. */
  def minBufferTime: Long = {
    if (onHeap) return if (mirror.isEmpty) Long.MaxValue else timeOf(mirror.firstKey)
    if (!minExact) {
      val it = byTime.scan(scanFrom, None, chunked = true)
      try {
        if (it.hasNext) {
          val k = it.next()._1
          minTime = timeOf(k)
          scanFrom = k
        } else minTime = Long.MaxValue
      } finally it.close()
      minExact = true
    }
    minTime
  }

  def get(key: Array[Byte]): Option[BufferedRecord] =
    if (onHeap) Option(mirrorKeys.get(new HashedKey(key))).map(h => recordOf(h).copy(key = key))
    else Option(byKey.get(key)).map { idx =>
      val bt = ByteBuffer.wrap(idx).getLong
      val (rt, v) = splitValue(byTime.get(timeKey(bt, key)))
      BufferedRecord(key, v, bt, rt)
    }

  /** Buffers `value` under `key`; returns whether it replaced a buffered record of the key. */
  def put(key: Array[Byte], value: Array[Byte], recordTime: Long, bufferTime: Long): Boolean =
    if (onHeap) putOnHeap(key, value, recordTime, bufferTime) else putInStore(key, value, recordTime, bufferTime)

  private def putOnHeap(key: Array[Byte], value: Array[Byte], recordTime: Long, bufferTime: Long): Boolean = {
    val hk = new HashedKey(key)
    val h = mirrorKeys.get(hk)
    if (h != null) {
      val oldLength = h.value.length - 8
      h.value = joinValue(recordTime, value)
      if (h.stored) {
        byTime.put(h.timeKey, h.value)
        if (oldLength != value.length) byKey.put(key, index(timeOf(h.timeKey), value.length))
      }
      bytes += value.length - oldLength
      dirty = true
      true
    } else if (mirror.size >= heapMirrorMax || bytes + recordBytes(key.length, value.length) > HeapMirrorBytes) {
      dropMirror()
      putInStore(key, value, recordTime, bufferTime)
    } else {
      // the caller's key array may be reused by it: the held key is a copy (the time key's tail)
      val tk = timeKey(bufferTime, key)
      hold(new Held(tk, joinValue(recordTime, value), stored = false))
      records += 1
      bytes += recordBytes(key.length, value.length)
      dirty = true
      false
    }
  }

  private def putInStore(key: Array[Byte], value: Array[Byte], recordTime: Long, bufferTime: Long): Boolean = {
    val idx = byKey.get(key)
    if (idx != null) {
      val bb = ByteBuffer.wrap(idx)
      val bt = bb.getLong
      val oldLength = bb.getInt
      byTime.put(timeKey(bt, key), joinValue(recordTime, value))
      if (oldLength != value.length) {
        byKey.put(key, index(bt, value.length))
        bytes += value.length - oldLength
      }
    } else {
      val tk = timeKey(bufferTime, key)
      byTime.put(tk, joinValue(recordTime, value))
      if (Arrays.compareUnsigned(tk, scanFrom) < 0) scanFrom = tk
      byKey.put(key, index(bufferTime, value.length))
      records += 1
      bytes += recordBytes(key.length, value.length)
      if (bufferTime < minTime) minTime = bufferTime
    }
    dirty = true
    idx != null
  }

  /** Removes `key` if buffered; returns the removed record. */
  def remove(key: Array[Byte]): Option[BufferedRecord] =
    if (onHeap) Option(mirrorKeys.get(new HashedKey(key))).map { h =>
      unhold(h)
      recordOf(h)
    }
    else removeInStore(key)

  /** Drops a held record from the heap and, if it was written, from the store; counts it out. */
  private def unhold(h: Held): Unit = {
    mirror.remove(h.timeKey)
    mirrorKeys.remove(h.key)
    if (h.stored) {
      byTime.delete(h.timeKey)
      byKey.delete(h.key.bytes)
    }
    records -= 1
    bytes -= recordBytes(h.key.bytes.length, h.value.length - 8)
    dirty = true
  }

  private def removeInStore(key: Array[Byte]): Option[BufferedRecord] = get(key).map { r =>
    byTime.delete(timeKey(r.bufferTime, key))
    byKey.delete(key)
    records -= 1
    bytes -= recordBytes(key.length, r.value.length)
    if (records == 0) { minTime = Long.MaxValue; minExact = true }
    else if (r.bufferTime == minTime) minExact = false // still a lower bound
    dirty = true
    r
  }

  def evictWhile(cond: => Boolean)(f: BufferedRecord => Unit): Unit = {
    if (onHeap) {
      while (!mirror.isEmpty && cond) {
        val h = mirror.firstEntry.getValue
        unhold(h)
        f(recordOf(h))
      }
      return
    }
    if (records == 0 || !cond) return
    // Scan in chunks; each chunk's records are deleted after its scan is closed, then the next
    // scan starts after the last evicted entry.
    var from = scanFrom
    var done = false
    while (!done) {
      val evicted = new ArrayBuffer[BufferedRecord](64)
      val it = byTime.scan(from, None, chunked = true)
      try {
        while (!done && evicted.length < EvictionChunk) {
          if (!it.hasNext) {
            minTime = Long.MaxValue; minExact = true; done = true
          } else {
            val (tk, v) = it.next()
            minTime = timeOf(tk); minExact = true
            if (!cond) { done = true; scanFrom = tk }
            else {
              val (rt, value) = splitValue(v)
              val key = Arrays.copyOfRange(tk, 8, tk.length)
              records -= 1
              bytes -= recordBytes(key.length, value.length)
              minExact = false
              evicted += BufferedRecord(key, value, minTime, rt)
              from = Bytes.successor(tk)
              scanFrom = from
            }
          }
        }
      } finally it.close()
      evicted.foreach { r =>
        byTime.delete(timeKey(r.bufferTime, r.key))
        byKey.delete(r.key)
        dirty = true
      }
      evicted.foreach(f)
    }
  }
}

object TimeOrderedBuffer {

  /**
   * Rewrites the value of every record buffered in `store` under `name` with `f` (a change of the
   * buffered rows' schema, in the task that converts them before it processes): the key family's
   * value lengths and the byte count follow; order, buffer times and record times stay.
   */
  private[kstate] def mapValues(store: KStateStore, name: String, f: Array[Byte] => Array[Byte]): Unit =
    for (byTime <- store.existingFamily(s"kstate_buf_${name}_time")) {
      val byKey = store.bytes(s"kstate_buf_${name}_key")
      var delta = 0L
      val it = byTime.scan(Array.emptyByteArray, None)
      try it.foreach { case (k, v) =>
          val converted = f(java.util.Arrays.copyOfRange(v, 8, v.length))
          delta += converted.length - (v.length - 8)
          byTime.put(k, ByteBuffer.allocate(8 + converted.length).put(v, 0, 8).put(converted).array())
          byKey.put(
            java.util.Arrays.copyOfRange(k, 8, k.length),
            ByteBuffer.allocate(12).putLong(ByteBuffer.wrap(k).getLong ^ Long.MinValue).putInt(converted.length).array()
          )
        }
      finally it.close()
      val meta = store.bytes(s"kstate_buf_${name}_meta")
      Option(meta.get(CountersKey)).foreach { c =>
        val b = ByteBuffer.wrap(c)
        meta.put(CountersKey, ByteBuffer.allocate(16).putLong(b.getLong).putLong(b.getLong + delta).array())
      }
    }

  /** Per-record bytes beyond key and value: buffer time, record time, key and value lengths. */
  val RecordOverheadBytes: Long = 8L + 8L + 4L + 4L

  def recordBytes(keyLength: Int, valueLength: Int): Long =
    keyLength.toLong + valueLength.toLong + RecordOverheadBytes

  /** Most records held on the heap (about 150 bytes each beyond their keys and values). */
  val HeapMirrorMax = 65536

  /** Most bytes ([[recordBytes]]) held on the heap. */
  val HeapMirrorBytes: Long = 16L << 20

  /** A record on the heap: its time key, `recordTime:8 value` (the time family's value), its key (the time key's tail). */
  private final class Held(val timeKey: Array[Byte], var value: Array[Byte], var stored: Boolean) {
    val key = new HashedKey(Arrays.copyOfRange(timeKey, 8, timeKey.length))
  }

  private def recordOf(h: Held): BufferedRecord = {
    val (rt, v) = splitValue(h.value)
    BufferedRecord(h.key.bytes, v, timeOf(h.timeKey), rt)
  }

  private val CountersKey = Array[Byte]('c')
  private val EvictionChunk = 4096

  private def timeKey(bufferTime: Long, key: Array[Byte]): Array[Byte] =
    ByteBuffer.allocate(8 + key.length).putLong(bufferTime ^ Long.MinValue).put(key).array()

  private def timeOf(timeKey: Array[Byte]): Long = ByteBuffer.wrap(timeKey).getLong ^ Long.MinValue

  private def index(bufferTime: Long, valueLength: Int): Array[Byte] =
    ByteBuffer.allocate(12).putLong(bufferTime).putInt(valueLength).array()

  private def joinValue(recordTime: Long, value: Array[Byte]): Array[Byte] =
    ByteBuffer.allocate(8 + value.length).putLong(recordTime).put(value).array()

  private def splitValue(v: Array[Byte]): (Long, Array[Byte]) =
    (ByteBuffer.wrap(v).getLong, Arrays.copyOfRange(v, 8, v.length))

}
