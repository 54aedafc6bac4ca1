package org.apache.spark.sql.kstate.state.store

import java.util.{Arrays, TreeMap}

/**
 * The committed entries of a store's working copy kept on the JVM heap, in unsigned key byte
 * order: the working copy of a store whose state is small enough (see [[HeapStateBudget]]).
 * Reads are map lookups and scans walk the map, so the common case of a state that fits in
 * memory pays neither JNI calls nor RocksDB's write path.
 *
 * Rules:
 *  - Only committed versions (and a restore in progress) live here: a store's uncommitted
 *    changes stay in its write set, and a store that spills moves the working copy to RocksDB
 *    first. So the map changes only when a version is committed or restored.
 *  - Arrays handed in are kept, not copied (they come from write sets and state files, which
 *    never touch them again); arrays handed out are copies, so no caller can alter the state.
 *  - `heapBytes` is an estimate of the heap held: per entry the tree node and both arrays.
 *  - Not thread-safe: the owning provider serialises access.
 */
private[kstate] final class HeapState {
  import HeapState._

  private val map = new TreeMap[Array[Byte], Array[Byte]](Bytes.Order)
  private var heap = 0L

  def heapBytes: Long = heap

  def size: Int = map.size

  def get(key: Array[Byte]): Array[Byte] = {
    val v = map.get(key)
    if (v == null) null else v.clone()
  }

  def contains(key: Array[Byte]): Boolean = map.containsKey(key)

  def put(key: Array[Byte], value: Array[Byte]): Unit = {
    val old = map.put(key, value)
    heap += WriteSet.arrayBytes(value) +
      (if (old == null) NodeBytes + WriteSet.arrayBytes(key) else -WriteSet.arrayBytes(old))
  }

  def delete(key: Array[Byte]): Unit = {
    val old = map.remove(key)
    if (old != null) heap -= NodeBytes + WriteSet.arrayBytes(key) + WriteSet.arrayBytes(old)
  }

  /** Removes every entry with a key in [from, until); returns how many there were. */
  def deleteRange(from: Array[Byte], until: Option[Array[Byte]]): Long = {
    val view = range(from, until)
    var n = 0L
    view.forEach { (k, v) =>
      heap -= NodeBytes + WriteSet.arrayBytes(k) + WriteSet.arrayBytes(v)
      n += 1
    }
    view.clear()
    n
  }

  /** Number of entries with a key in [from, until). */
  def count(from: Array[Byte], until: Option[Array[Byte]]): Long = range(from, until).size.toLong

  /**
   * The entries in [from, until) as they are now. The range's references are copied out (not
   * the bytes), so the scan is unaffected by later commits, like a RocksDB snapshot.
   */
  def scan(from: Array[Byte], until: Option[Array[Byte]]): StateScan = {
    val view = range(from, until)
    val keys = new Array[Array[Byte]](view.size)
    val values = new Array[Array[Byte]](keys.length)
    var i = 0
    view.forEach { (k, v) => keys(i) = k; values(i) = v; i += 1 }
    new ArrayScan(keys, values)
  }

  /** Every entry in key order, without copying (for snapshots and moving to RocksDB). */
  def foreach(f: (Array[Byte], Array[Byte]) => Unit): Unit = map.forEach((k, v) => f(k, v))

  def clear(): Unit = { map.clear(); heap = 0L }

  private def range(from: Array[Byte], until: Option[Array[Byte]]): java.util.NavigableMap[Array[Byte], Array[Byte]] =
    until match {
      case Some(u) if Bytes.Order.compare(from, u) >= 0 => new TreeMap[Array[Byte], Array[Byte]](Bytes.Order)
      case Some(u) => map.subMap(from, true, u, false)
      case None => map.tailMap(from, true)
    }
}

private[kstate] object HeapState {
  /**
   * Heap of one tree node beyond its arrays, for a 64-bit JVM with compressed references:
   * header, five references and the colour flag, rounded up.
   */
  final val NodeBytes: Long = 40L

  /** A scan over arrays captured when it was opened; hands out copies. */
  private final class ArrayScan(keys: Array[Array[Byte]], values: Array[Array[Byte]]) extends StateScan {
    private var i = 0
    private var closed = false
    override def valid: Boolean = !closed && i < keys.length
    override def key: Array[Byte] = Arrays.copyOf(keys(i), keys(i).length)
    override def value: Array[Byte] = Arrays.copyOf(values(i), values(i).length)
    override def next(): Unit = i += 1
    override def close(): Unit = closed = true
  }
}
