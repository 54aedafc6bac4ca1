package org.apache.spark.sql.kstate.operatorstate

import org.apache.spark.sql.kstate.provider.KStateStore

import java.nio.ByteBuffer
import java.util.Arrays

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.kstate.processor.StreamTime
import org.apache.spark.sql.kstate.processor.join.StreamTableJoinBuffer
import org.apache.spark.sql.kstate.engine.Bytes

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
 * Reads: a buffer of at most `heapMirrorMax` records is also kept in a sorted map on the heap for
 * the task (loaded by one scan when first used), and evictions read it instead of scanning the
 * store: a join evicts after every buffered stream record, and a scan of the store merges its
 * uncommitted writes with its committed entries each time. A buffer that grows past the limit
 * drops the map and is scanned in the store, in chunks, so its memory stays the store's to bound
 * (spill). Same records, same order either way.
 *
 * Writes, while the map is used: a record put in this store version (its arrival at or after
 * the version's first) goes into the map only, and into the store when the version commits if it
 * is still buffered then. Most
 * records wait only the grace, seconds of event time, and leave in the micro-batch that brought
 * them: they never reach the store, its changelog or its working copy (Example: 1,000 events and
 * a grace of 10 s in a micro-batch spanning 200 s of event time: about 50 are written at the
 * commit, not 1,000 puts and 950 deletes). A record of an earlier version is deleted from the
 * store when it leaves. When the map is dropped (the limit passed), the unwritten records are
 * written to the store first. A failed task's version is never committed, so nothing is lost.
 *
 * One instance per store version (task); not thread-safe.
 */
final class StoreStreamTableJoinBuffer(
    store: KStateStore,
    name: String,
    keyFields: Int,
    valueFields: Int,
    heapMirrorMax: Int = StoreStreamTableJoinBuffer.HeapMirrorMax
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

  /** The buffered records on the heap (record key -> value), while there are few; null: not loaded or too many. */
  private var mirror: java.util.TreeMap[Array[Byte], Array[Byte]] = _

  /** False once the buffer outgrew the mirror in this store version: it is not loaded again. */
  private var mirrorAllowed = true

  Option(meta.get(MetaKey)).foreach { b =>
    val bb = ByteBuffer.wrap(b)
    time = bb.getLong
    arrivals = bb.getLong
    count = bb.getLong
  }

  /** The first arrival of this store version: a record from it on is held only in the mirror while there is one. */
  private val firstArrival = arrivals

  /** Whether the record `rk` is held only in the mirror (see the class doc). */
  private def unwritten(rk: Array[Byte]): Boolean = mirror != null && arrivalOf(rk) >= firstArrival

  /** Writes the records held only in the mirror into the store. */
  private def writeUnwritten(): Unit =
    if (mirror != null) mirror.forEach((k, v) => if (arrivalOf(k) >= firstArrival) records.put(k, v))

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

  /** The heap mirror, loaded now if allowed and not yet loaded; null when the buffer has too many records. */
  private def heapMirror(): java.util.TreeMap[Array[Byte], Array[Byte]] = {
    if (mirror == null && mirrorAllowed) {
      if (count > heapMirrorMax) mirrorAllowed = false
      else {
        val m = new java.util.TreeMap[Array[Byte], Array[Byte]](Bytes.Order)
        val it = records.scan(timePrefix(Long.MinValue), None)
        try while (it.hasNext) { val (k, v) = it.next(); m.put(k, v) }
        finally it.close()
        mirror = m
      }
    }
    mirror
  }

  override def put(key: UnsafeRow, value: UnsafeRow, ts: Long): Unit = {
    val k = key.getBytes
    val v = value.getBytes
    val m = heapMirror()
    val rk = recordKey(ts, k, arrivals)
    val rv = ByteBuffer.allocate(4 + k.length + v.length).putInt(k.length).put(k).put(v).array()
    if (m != null && m.size >= heapMirrorMax) {
      // outgrown: from now on the store holds every record
      writeUnwritten()
      mirror = null
      mirrorAllowed = false
    }
    if (mirror != null) mirror.put(rk, rv) else records.put(rk, rv)
    arrivals += 1
    count += 1
    if (ts < lowest) lowest = ts
    dirty = true
  }

  override def evictUpTo(time: Long)(f: StreamTableJoinBuffer.Evicted[UnsafeRow, UnsafeRow]): Unit = {
    if (count == 0 || time < lowest) return
    val until = if (time == Long.MaxValue) None else Some(timePrefix(time + 1))
    var done = false
    while (!done) {
      // a chunk at a time: deletes are made after its read, callbacks after the deletes
      val chunk = new ArrayBuffer[(Array[Byte], Array[Byte])](64)
      val m = heapMirror()
      if (m != null) {
        val due = until.fold(m.entrySet().iterator())(u => m.headMap(u, false).entrySet().iterator())
        while (chunk.length < EvictionChunk && due.hasNext) {
          val e = due.next()
          chunk += ((e.getKey, e.getValue))
          due.remove()
        }
      } else {
        val it = records.scan(timePrefix(lowest), until, chunked = true)
        try while (chunk.length < EvictionChunk && it.hasNext) chunk += it.next()
        finally it.close()
      }
      done = chunk.length < EvictionChunk
      chunk.foreach { case (k, _) => if (!unwritten(k)) records.delete(k) }
      count -= chunk.length
      dirty = dirty || chunk.nonEmpty
      chunk.foreach { case (k, v) =>
        val bb = ByteBuffer.wrap(v)
        val keyLength = bb.getInt
        val keyRow = new UnsafeRow(keyFields)
        keyRow.pointTo(Arrays.copyOfRange(v, 4, 4 + keyLength), keyLength)
        val valueRow = new UnsafeRow(valueFields)
        val valueBytes = Arrays.copyOfRange(v, 4 + keyLength, v.length)
        valueRow.pointTo(valueBytes, valueBytes.length)
        f(keyRow, valueRow, ByteBuffer.wrap(k).getLong ^ Long.MinValue)
      }
    }
    if (time != Long.MaxValue) lowest = time + 1
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

  /** Most records kept in the heap mirror (about 100 bytes each for a join of small rows). */
  val HeapMirrorMax = 65536

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
