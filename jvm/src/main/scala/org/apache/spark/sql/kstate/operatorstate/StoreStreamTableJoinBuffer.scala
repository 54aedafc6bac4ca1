package org.apache.spark.sql.kstate.operatorstate

import org.apache.spark.sql.kstate.provider.KStateStore

import java.nio.ByteBuffer
import java.util.{Arrays, Comparator, PriorityQueue}

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.kstate.processor.StreamTime
import org.apache.spark.sql.kstate.processor.join.StreamTableJoinBuffer
import org.apache.spark.unsafe.Platform

/**
 * KIP-923's grace buffer of a stream–table join ([[StreamTableJoinBuffer]]) in a column family of
 * a kstate state store, so that buffered stream records, the buffer's stream time and its arrival
 * counter are checkpointed with the join's state and survive restarts.
 *
 * Order: (timestamp, key bytes unsigned lexicographic, arrival), Kafka's buffer store order
 * (timestamp, serialized key, sequence number), with kstate's arrival counter persisted (Kafka's
 * restarts at 0). Keys are 1-field UnsafeRows of `keyFields` fields, values UnsafeRows of
 * `valueFields` fields; the rows passed in are copied to bytes, rows handed to `evictUpTo`'s
 * callback are fresh.
 *
 * Layout (`flip` maps signed to unsigned order; `escaped` doubles as a terminator-safe encoding so
 * that byte order of the concatenation is (key bytes, arrival) order for keys of any length):
 * {{{
 *   kstate_stj_<name>_buffer  flip(ts):8 escaped(key) 0x00 0x00 arrival:8 -> keyLength:4 key value
 *   kstate_stj_<name>_meta    "m"                                          -> streamTime:8 arrivals:8 records:8
 * }}}
 * The meta entry is written when the store commits, if anything changed.
 *
 * Reads: a buffer of at most `heapMirrorMax` records and `heapMirrorBytes` bytes
 * ([[StoreStreamTableJoinBuffer.recordBytes]]) is also held on the heap for the task (loaded by one scan when first used), and
 * evictions read it instead of scanning the store: a join evicts after every buffered stream
 * record, and a scan of the store merges its uncommitted writes with its committed entries each
 * time. The heap holds the records as the rows themselves in a binary heap by the same order
 * (timestamp, key bytes unsigned, arrival: what the record keys' byte order is), so a put and an
 * eviction cost a few comparisons of timestamps and no encoding: stream records arrive nearly in
 * time order, so a put lands near the bottom of the heap and an eviction takes its top. A buffer
 * that grows past either limit drops the heap and is scanned in the store, in chunks, so its
 * memory stays the store's to bound (spill). Same records, same order either way.
 *
 * Writes, while the heap is used: a record put in this store version (its arrival at or after
 * the version's first) is held on the heap only, and written to the store when the version
 * commits if it is still buffered then. Most
 * records wait only the grace, seconds of event time, and leave in the micro-batch that brought
 * them: they never reach the store, its changelog or its working copy (Example: 1,000 events and
 * a grace of 10 s in a micro-batch spanning 200 s of event time: about 50 are written at the
 * commit, not 1,000 puts and 950 deletes). A record of an earlier version is deleted from the
 * store when it leaves. When the heap is dropped (a limit passed), the unwritten records are
 * written to the store first. A failed task's version is never committed, so nothing is lost.
 *
 * One instance per store version (task); not thread-safe.
 */
final class StoreStreamTableJoinBuffer(
    store: KStateStore,
    name: String,
    keyFields: Int,
    valueFields: Int,
    heapMirrorMax: Int = StoreStreamTableJoinBuffer.HeapMirrorMax,
    heapMirrorBytes: Long = StoreStreamTableJoinBuffer.HeapMirrorBytes
) extends StreamTableJoinBuffer[UnsafeRow, UnsafeRow] {
  import StoreStreamTableJoinBuffer._

  private val records = store.bytes(s"kstate_stj_${name}_buffer")
  private val meta = store.bytes(s"kstate_stj_${name}_meta")

  private var time: Long = StreamTime.Unknown
  private var arrivals: Long = 0L
  private var count: Long = 0L
  private var dirty = false

  /** No buffered record is older than this (within this store version): scans start here. */
  private var lowest: Long = Long.MinValue

  /** The buffered records on the heap, oldest on top, while there are few; null: not loaded or too many. */
  private var mirror: PriorityQueue[Held] = _

  /** Bytes of the records on the heap ([[StoreStreamTableJoinBuffer.recordBytes]]). */
  private var mirrorBytes = 0L

  /** False once the buffer outgrew the heap in this store version: it is not loaded again. */
  private var mirrorAllowed = true

  Option(meta.get(MetaKey)).foreach { b =>
    val bb = ByteBuffer.wrap(b)
    time = bb.getLong
    arrivals = bb.getLong
    count = bb.getLong
  }

  /** The first arrival of this store version: a record from it on is held only on the heap while there is one. */
  private val firstArrival = arrivals

  /** Writes the records held only on the heap into the store. */
  private def writeUnwritten(): Unit =
    if (mirror != null) mirror.forEach(h => if (h.arrival >= firstArrival) records.put(h.recordKey, h.recordValue))

  store.beforeCommit { () =>
    writeUnwritten()
    if (dirty) {
      meta.put(MetaKey, ByteBuffer.allocate(24).putLong(time).putLong(arrivals).putLong(count).array())
      dirty = false
    }
  }

  override def streamTime: Long = time
  override def streamTime_=(t: Long): Unit = if (t != time) { time = t; dirty = true }
  override def numRecords: Long = count

  /** The heap of records, loaded now if allowed and not yet loaded; null when the buffer is too large. */
  private def heapMirror(): PriorityQueue[Held] = {
    if (mirror == null && mirrorAllowed) {
      if (count > heapMirrorMax) mirrorAllowed = false
      else {
        val m = new PriorityQueue[Held](math.max(16, count.toInt), HeldOrder)
        var bytes = 0L
        val it = records.scan(timePrefix(Long.MinValue), None)
        try while (it.hasNext) {
            val (k, v) = it.next()
            val h = decode(k, v)
            m.add(h)
            bytes += h.bytes
          }
        finally it.close()
        if (bytes > heapMirrorBytes) mirrorAllowed = false
        else { mirror = m; mirrorBytes = bytes }
      }
    }
    mirror
  }

  override def put(key: UnsafeRow, value: UnsafeRow, ts: Long): Unit = {
    val h = new Held(ts, arrivals, key, key.getBytes, value)
    val m = heapMirror()
    if (m != null && (m.size >= heapMirrorMax || mirrorBytes + h.bytes > heapMirrorBytes)) {
      // outgrown: from now on the store holds every record
      writeUnwritten()
      mirror = null
      mirrorBytes = 0L
      mirrorAllowed = false
    }
    if (mirror != null) { mirror.add(h); mirrorBytes += h.bytes }
    else records.put(h.recordKey, h.recordValue)
    arrivals += 1
    count += 1
    if (ts < lowest) lowest = ts
    dirty = true
  }

  override def evictUpTo(time: Long)(f: StreamTableJoinBuffer.Evicted[UnsafeRow, UnsafeRow]): Unit = {
    if (count == 0 || time < lowest) return
    val m = heapMirror()
    if (m != null) {
      while (!m.isEmpty && m.peek().ts <= time) {
        val h = m.poll()
        mirrorBytes -= h.bytes
        if (h.arrival < firstArrival) records.delete(h.recordKey)
        count -= 1
        dirty = true
        f(h.key, h.value, h.ts)
      }
    } else evictFromStore(time, f)
    if (time != Long.MaxValue) lowest = time + 1
  }

  /** [[evictUpTo]] reading the store, a chunk at a time: deletes are made after its read, callbacks after the deletes. */
  private def evictFromStore(time: Long, f: StreamTableJoinBuffer.Evicted[UnsafeRow, UnsafeRow]): Unit = {
    val until = if (time == Long.MaxValue) None else Some(timePrefix(time + 1))
    var done = false
    while (!done) {
      val chunk = new ArrayBuffer[(Array[Byte], Array[Byte])](64)
      val it = records.scan(timePrefix(lowest), until, chunked = true)
      try while (chunk.length < EvictionChunk && it.hasNext) chunk += it.next()
      finally it.close()
      done = chunk.length < EvictionChunk
      chunk.foreach { case (k, _) => records.delete(k) }
      count -= chunk.length
      dirty = dirty || chunk.nonEmpty
      chunk.foreach { case (k, v) =>
        val h = decode(k, v)
        f(h.key, h.value, h.ts)
      }
    }
  }

  /** A record read from the store. */
  private def decode(k: Array[Byte], v: Array[Byte]): Held = {
    val keyLength = ByteBuffer.wrap(v).getInt
    val keyBytes = Arrays.copyOfRange(v, 4, 4 + keyLength)
    val keyRow = new UnsafeRow(keyFields)
    keyRow.pointTo(keyBytes, keyLength)
    val valueBytes = Arrays.copyOfRange(v, 4 + keyLength, v.length)
    val valueRow = new UnsafeRow(valueFields)
    valueRow.pointTo(valueBytes, valueBytes.length)
    new Held(ByteBuffer.wrap(k).getLong ^ Long.MinValue, arrivalOf(k), keyRow, keyBytes, valueRow)
  }
}

object StoreStreamTableJoinBuffer {

  /**
   * Rewrites every buffered stream row of the join buffer `name` in `store` with `f` (a change of
   * the stream rows' schema, in the task that converts them); keys and order stay.
   */
  private[kstate] def mapRows(store: KStateStore, name: String, f: Array[Byte] => Array[Byte]): Unit =
    for (records <- store.existingFamily(s"kstate_stj_${name}_buffer")) {
      val it = records.scan(Array.emptyByteArray, None)
      try it.foreach { case (k, v) =>
          val at = 4 + ByteBuffer.wrap(v).getInt
          records.put(k, java.util.Arrays.copyOfRange(v, 0, at) ++ f(java.util.Arrays.copyOfRange(v, at, v.length)))
        }
      finally it.close()
    }

  private val MetaKey = Array[Byte]('m')
  private val EvictionChunk = 4096

  /** Most records held on the heap (about 150 bytes each beyond their rows' bytes). */
  val HeapMirrorMax = 65536

  /** Most bytes ([[recordBytes]]) held on the heap. */
  val HeapMirrorBytes: Long = 16L << 20

  /** A record's bytes for the heap's limit: its key and value rows, its timestamp and arrival. */
  def recordBytes(keyLength: Int, valueLength: Int): Long = keyLength.toLong + valueLength.toLong + 16L

  /**
   * A buffered record: its rows (handed to the eviction callback as they are), `keyBytes` the
   * key row's bytes (its order). The caller does not reuse the rows it puts
   * ([[StreamTableJoinBuffer]]'s contract), so neither is copied.
   */
  private final class Held(
      val ts: Long,
      val arrival: Long,
      val key: UnsafeRow,
      val keyBytes: Array[Byte],
      val value: UnsafeRow
  ) {
    def bytes: Long = recordBytes(keyBytes.length, value.getSizeInBytes)
    def recordKey: Array[Byte] = StoreStreamTableJoinBuffer.recordKey(ts, keyBytes, arrival)
    def recordValue: Array[Byte] = {
      val out = new Array[Byte](4 + keyBytes.length + value.getSizeInBytes)
      ByteBuffer.wrap(out).putInt(keyBytes.length)
      System.arraycopy(keyBytes, 0, out, 4, keyBytes.length)
      value.writeToMemory(out, Platform.BYTE_ARRAY_OFFSET + 4 + keyBytes.length)
      out
    }
  }

  /** The record keys' order ([[recordKey]]): timestamp, key bytes unsigned, arrival. */
  private val HeldOrder: Comparator[Held] = (a: Held, b: Held) => {
    val byTime = java.lang.Long.compare(a.ts, b.ts)
    if (byTime != 0) byTime
    else {
      val byKey = Arrays.compareUnsigned(a.keyBytes, b.keyBytes)
      if (byKey != 0) byKey else java.lang.Long.compare(a.arrival, b.arrival)
    }
  }

  /** The arrival counter at the end of record key `rk` ([[recordKey]]). */
  private def arrivalOf(rk: Array[Byte]): Long = ByteBuffer.wrap(rk, rk.length - 8, 8).getLong

  private def timePrefix(ts: Long): Array[Byte] = ByteBuffer.allocate(8).putLong(ts ^ Long.MinValue).array()

  /** flip(ts) ++ escaped key ++ 0x00 0x00 ++ arrival: ordered by (ts, key bytes, arrival). */
  private[kstate] def recordKey(ts: Long, key: Array[Byte], arrival: Long): Array[Byte] = {
    val zeros = key.count(_ == 0)
    val bb = ByteBuffer.allocate(8 + key.length + zeros + 2 + 8).putLong(ts ^ Long.MinValue)
    key.foreach { b => bb.put(b); if (b == 0) bb.put(0xff.toByte) }
    bb.put(0.toByte).put(0.toByte).putLong(arrival).array()
  }
}
