package io.kstate.buffer

import java.util.{Arrays => JArrays, TreeMap => JTreeMap}

import scala.collection.mutable

/** A record leaving the buffer: its key and latest value, when its key was first buffered, and
 * the timestamp of that latest value. Arrays are the buffer's own; callers must not modify them. */
final case class BufferedRecord(key: Array[Byte], value: Array[Byte], bufferTime: Long, recordTime: Long)

/**
 * The heap tier of KIP-328's time-ordered key/value buffer (the buffer behind `suppress`).
 *
 * Contract:
 *  - `put` of a new key buffers it at `bufferTime`; `put` of a buffered key replaces its value and
 *    record time but keeps its original buffer time, so a key's timer is not restarted (KIP-328's
 *    rate limit: "later updates replace the value but do not restart the timer").
 *  - Order is (buffer time, key bytes unsigned lexicographic), as Kafka's buffer key: oldest
 *    first, and deterministic whatever order the keys were put in.
 *  - `evictWhile(cond)(f)` removes records oldest first, calling `f` for each, as long as `cond`
 *    holds before each removal; `cond` may read the buffer (e.g. `minBufferTime <= t`, or
 *    `numBytes > max` for emit-early-when-full).
 *  - Accounting is exact: `numRecords`, and `numBytes` = sum over records of key length + value
 *    length + [[HeapTimeOrderedBuffer.RecordOverheadBytes]] (the two timestamps and lengths a
 *    record needs when written out). Heap overhead of the JVM objects is not included.
 *  - Keys and values passed in are kept, not copied: callers hand over ownership.
 *
 * Not thread-safe.
 */
final class HeapTimeOrderedBuffer {
  import HeapTimeOrderedBuffer._

  private val byKey = mutable.HashMap.empty[Key, Entry]
  private val byTime = new JTreeMap[Entry, Entry](EntryOrdering)
  private var bytes = 0L

  def numRecords: Long = byKey.size.toLong
  def numBytes: Long = bytes
  def isEmpty: Boolean = byKey.isEmpty

  /** Buffer time of the oldest record, `Long.MaxValue` when empty. */
  def minBufferTime: Long = if (byTime.isEmpty) Long.MaxValue else byTime.firstKey().bufferTime

  def get(key: Array[Byte]): Option[BufferedRecord] = byKey.get(new Key(key)).map(toRecord)

  def put(key: Array[Byte], value: Array[Byte], recordTime: Long, bufferTime: Long): Unit = {
    val k = new Key(key)
    byKey.get(k) match {
      case Some(e) =>
        bytes += value.length - e.value.length
        e.value = value
        e.recordTime = recordTime
      case None =>
        val e = new Entry(k, value, bufferTime, recordTime)
        byKey.update(k, e)
        byTime.put(e, e)
        bytes += recordBytes(key.length, value.length)
    }
  }

  /** Removes `key` if buffered; returns the removed record. */
  def remove(key: Array[Byte]): Option[BufferedRecord] =
    byKey.remove(new Key(key)).map { e => byTime.remove(e); bytes -= sizeOf(e); toRecord(e) }

  def evictWhile(cond: => Boolean)(f: BufferedRecord => Unit): Unit =
    while (!byTime.isEmpty && cond) {
      val e = byTime.pollFirstEntry().getKey
      byKey.remove(e.key)
      bytes -= sizeOf(e)
      f(toRecord(e))
    }

  private def sizeOf(e: Entry): Long = recordBytes(e.key.bytes.length, e.value.length)
  private def toRecord(e: Entry) = BufferedRecord(e.key.bytes, e.value, e.bufferTime, e.recordTime)
}

object HeapTimeOrderedBuffer {
  /** Per-record bytes beyond key and value: buffer time, record time, key and value lengths. */
  val RecordOverheadBytes: Long = 8L + 8L + 4L + 4L

  def recordBytes(keyLength: Int, valueLength: Int): Long =
    keyLength.toLong + valueLength.toLong + RecordOverheadBytes

  /** Key bytes with content equality. */
  private final class Key(val bytes: Array[Byte]) {
    override val hashCode: Int = JArrays.hashCode(bytes)
    override def equals(o: Any): Boolean = o match {
      case k: Key => JArrays.equals(bytes, k.bytes)
      case _ => false
    }
  }

  private final class Entry(val key: Key, var value: Array[Byte], val bufferTime: Long, var recordTime: Long)

  /** (buffer time, key bytes unsigned lexicographic): Kafka's buffer key order. */
  private val EntryOrdering: java.util.Comparator[Entry] = (a: Entry, b: Entry) => {
    val c = java.lang.Long.compare(a.bufferTime, b.bufferTime)
    if (c != 0) c else JArrays.compareUnsigned(a.key.bytes, b.key.bytes)
  }
}
