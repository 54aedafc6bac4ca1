package org.apache.spark.sql.kstate.state.store

import java.util.{Arrays, HashMap, TreeMap}

/**
 * The uncommitted changes of one store version. An entry is either a write (new value bytes),
 * a delete ([[WriteSet.Deleted]]), or a read-only note of whether the key existed before this
 * version (value null), kept so that row counting does not look the key up twice.
 *
 * Point operations use a hash map. Ordered scans need the changes in RocksDB's key order: a
 * sorted index is built on the first ordered scan and kept up to date from then on, so
 * versions that never scan in order (most of them) never pay for sorting.
 *
 * `heapBytes` estimates the JVM heap the entries occupy (arrays, wrappers, map nodes; see
 * [[WriteSet.heapBytesOf]]); the store spills the write set to its local database when the
 * estimate passes its limit, then calls `clear()`.
 */
private[kstate] final class WriteSet {
  import WriteSet._

  private val entries = new HashMap[HashedKey, Entry]()
  private var index: TreeMap[Array[Byte], Entry] = _
  private var heap = 0L

  /** Estimated heap bytes held by the entries (see [[WriteSet.heapBytesOf]]). */
  def heapBytes: Long = heap

  /** Number of entries (changes and existence notes). */
  def numEntries: Long = entries.size.toLong

  /** Forgets every entry (after they were spilled). */
  def clear(): Unit = {
    entries.clear()
    index = null
    heap = 0L
  }

  def lookup(key: HashedKey): Entry = entries.get(key)

  def write(key: Array[Byte], value: Array[Byte]): Unit = {
    val k = new HashedKey(key)
    val e = entries.get(k)
    if (e == null) insert(new Entry(k, value, Unknown))
    else {
      heap += arrayBytes(value) - arrayBytes(e.value)
      e.value = value
    }
  }

  def noteRead(key: HashedKey, existed: Boolean): Unit =
    if (!entries.containsKey(key)) insert(new Entry(key, null, if (existed) Present else Absent))

  private def insert(e: Entry): Unit = {
    entries.put(e.hashed, e)
    heap += heapBytesOf(e.key, e.value)
    if (index != null) { index.put(e.key, e); heap += IndexEntryBytes }
  }

  private def sorted: TreeMap[Array[Byte], Entry] = {
    if (index == null) {
      index = new TreeMap[Array[Byte], Entry](Bytes.Order)
      entries.values().forEach(e => index.put(e.key, e))
      heap += IndexEntryBytes * entries.size
    }
    index
  }

  private def range(from: Array[Byte], until: Option[Array[Byte]]): java.util.NavigableMap[Array[Byte], Entry] =
    until match {
      case Some(u) if Bytes.Order.compare(from, u) >= 0 => new TreeMap[Array[Byte], Entry](Bytes.Order)
      case Some(u) => sorted.subMap(from, true, u, false)
      case None => sorted.tailMap(from, true)
    }

  /** Written or deleted entries with keys in [from, until), in key order, copied out. */
  def changesIn(from: Array[Byte], until: Option[Array[Byte]]): Array[(Array[Byte], Array[Byte])] = {
    val out = Array.newBuilder[(Array[Byte], Array[Byte])]
    range(from, until).forEach((k, e) => if (e.value != null) out += ((k, e.value)))
    out.result()
  }

  /** Drops every entry with a key in [from, until). */
  def clearRange(from: Array[Byte], until: Option[Array[Byte]]): Unit = {
    val view = range(from, until)
    view.values().forEach(e => heap -= heapBytesOf(e.key, e.value) + IndexEntryBytes)
    view.values().forEach(e => entries.remove(e.hashed))
    view.clear()
  }

  /**
   * All written or deleted entries in key order (RocksDB applies sorted write batches and
   * multi-gets markedly faster than random-order ones).
   */
  def sortedChanges: Array[Entry] = {
    val out = new Array[Entry](entries.size)
    var n = 0
    val it = (if (index != null) index.values() else entries.values()).iterator()
    while (it.hasNext) {
      val e = it.next()
      if (e.value != null) { out(n) = e; n += 1 }
    }
    val changes = if (n == out.length) out else java.util.Arrays.copyOf(out, n)
    if (index == null) {
      java.util.Arrays.sort(changes, (a: Entry, b: Entry) => Bytes.Order.compare(a.key, b.key))
    }
    changes
  }
}

private[kstate] object WriteSet {
  /** Marks a deleted key; compared by reference. */
  val Deleted: Array[Byte] = new Array[Byte](0)

  final val Unknown: Byte = -1
  final val Absent: Byte = 0
  final val Present: Byte = 1

  /**
   * Heap estimate of one entry beyond its arrays, for a 64-bit JVM with compressed references:
   * the key wrapper (24), the entry (24), the hash map node (32) and its table slot (8, at the
   * map's load factor). The sorted index adds [[IndexEntryBytes]] per entry.
   */
  final val EntryOverheadBytes: Long = 88L
  final val IndexEntryBytes: Long = 40L

  /** Heap bytes of a byte array: 16-byte header, contents padded to 8 bytes. */
  def arrayBytes(a: Array[Byte]): Long =
    if (a == null || (a eq Deleted)) 0L else 16L + ((a.length + 7L) & ~7L)

  def heapBytesOf(key: Array[Byte], value: Array[Byte]): Long =
    EntryOverheadBytes + arrayBytes(key) + arrayBytes(value)

  /** `value`: new bytes, [[Deleted]], or null (read only). `existed`: before this version. */
  final class Entry(val hashed: HashedKey, var value: Array[Byte], var existed: Byte) {
    def key: Array[Byte] = hashed.bytes
    def isDelete: Boolean = value eq Deleted
  }

}
