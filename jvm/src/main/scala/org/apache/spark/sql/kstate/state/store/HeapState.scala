package org.apache.spark.sql.kstate.state.store

import java.util.{Arrays, HashMap}

/**
 * The committed entries of a store's working copy kept on the JVM heap: the working copy of a
 * store whose state is small enough (see [[HeapStateBudget]]). Point reads are hash lookups and
 * scans walk a sorted index, so a state that fits in memory pays neither JNI calls nor
 * RocksDB's write path.
 *
 * Layout: a hash map from key bytes to value bytes, plus a sorted index (parallel arrays of
 * keys and values in unsigned key order) for ordered reads (scans, counts, range deletes).
 * The index is kept only while ordered reads use it:
 *  - while they do (an ordered read since the last commit, [[keepsIndex]]), a version's changes
 *    arrive sorted ([[applySorted]]) and renew the index by one linear merge;
 *  - otherwise a version's changes arrive in any order ([[applyUnsorted]]), update the map only
 *    and drop the index: a state read only by key and by unordered iteration (Spark's
 *    aggregations and deduplication) never pays for a sort, as with Spark's HDFS provider;
 *  - single puts and deletes (a restore replaying files) only invalidate it.
 * An invalid index is rebuilt by one sort of all entries when an ordered read next needs it.
 * The index arrays are never modified once built, only replaced, so a scan keeps the arrays it
 * started on and is frozen at the version it was opened at, like a RocksDB snapshot.
 *
 * Rules:
 *  - Only committed versions (and a restore in progress) live here: a store's uncommitted
 *    changes stay in its write set, and a store that spills moves the working copy to RocksDB
 *    first. So the state changes only when a version is committed or restored.
 *  - Arrays handed in are kept, not copied (they come from write sets and state files, which
 *    never touch them again); arrays handed out are copies, so no caller can alter the state.
 *  - `heapBytes` estimates the heap held: per entry [[HeapState.EntryBytes]] plus both arrays.
 *  - Not thread-safe: the owning provider serialises access.
 */
private[kstate] final class HeapState {
  import HeapState._

  private val map = new HashMap[HashedKey, Array[Byte]]()
  // The sorted index: keys(0 until indexSize) ascending, values aligned; valid only when
  // `indexed`. Slots below indexSize are never written again; appendSorted fills slots above it.
  private var keys: Array[Array[Byte]] = NoArrays
  private var values: Array[Array[Byte]] = NoArrays
  private var indexSize = 0
  private var indexed = true
  /** Whether an ordered read used the index since the last version was applied. */
  private var indexUsed = false
  private var heap = 0L

  def heapBytes: Long = heap

  def size: Int = map.size

  def get(key: HashedKey): Array[Byte] = {
    val v = map.get(key)
    if (v == null) null else v.clone()
  }

  def contains(key: HashedKey): Boolean = map.containsKey(key)

  /** Puts one entry (restores); the index is rebuilt when next needed. */
  def put(key: Array[Byte], value: Array[Byte]): Unit = {
    putInMap(new HashedKey(key), value)
    indexed = false
  }

  /** Deletes one entry (restores); the index is rebuilt when next needed. */
  def delete(key: Array[Byte]): Unit = if (removeFromMap(new HashedKey(key))) indexed = false

  /**
   * Applies one version's changes: `changes` sorted by key without duplicates, a value of
   * [[WriteSet.Deleted]] deleting its key. Returns the change in the number of entries.
   */
  def applySorted(changes: Array[WriteSet.Entry]): Long = applySorted(changes, changes.length)

  /**
   * Whether the next version's changes should arrive sorted ([[applySorted]]) to keep the
   * sorted index: it is valid and an ordered read used it since the last version was applied.
   */
  def keepsIndex: Boolean = indexed && indexUsed

  /**
   * Applies one version's changes in any order (no duplicate keys; [[WriteSet.Deleted]]
   * deletes) to the map and drops the sorted index. Returns the change in the number of entries.
   */
  def applyUnsorted(changes: Array[WriteSet.Entry]): Long = {
    val before = map.size
    applyToMap(changes, changes.length)
    keys = NoArrays; values = NoArrays; indexSize = 0; indexed = false
    indexUsed = false
    (map.size - before).toLong
  }

  /** [[applySorted]] of `changes(0 until count)`. */
  def applySorted(changes: Array[WriteSet.Entry], count: Int): Long = {
    val before = map.size
    indexUsed = false
    if (!indexed) applyToMap(changes, count)
    else if (count > 0 && noDeletes(changes, count) &&
        (indexSize == 0 || Bytes.Order.compare(keys(indexSize - 1), changes(0).key) < 0)) {
      appendSorted(changes, count)
    } else {
      val size = indexSize
      val outK = new Array[Array[Byte]](size + count)
      val outV = new Array[Array[Byte]](outK.length)
      var i = 0
      var n = 0
      var c = 0
      while (c < count) {
        val e = changes(c)
        c += 1
        // copy the unchanged keys before e in one block, found by galloping (a few changes
        // into a large index cost O(changes x log gap) comparisons, not one per index key)
        val pos = gallop(i, size, e.key)
        System.arraycopy(keys, i, outK, n, pos - i)
        System.arraycopy(values, i, outV, n, pos - i)
        n += pos - i
        i = pos
        val replaces = i < size && Bytes.Order.compare(keys(i), e.key) == 0
        if (e.isDelete) removeFromMap(e.hashed)
        else {
          putInMap(e.hashed, e.value)
          // the map keeps the key array it already had; so does the index
          outK(n) = if (replaces) keys(i) else e.key
          outV(n) = e.value
          n += 1
        }
        if (replaces) i += 1
      }
      System.arraycopy(keys, i, outK, n, size - i)
      System.arraycopy(values, i, outV, n, size - i)
      n += size - i
      keys = outK
      values = outV
      indexSize = n
    }
    (map.size - before).toLong
  }

  /**
   * Adds new keys, all greater than every indexed key, at the end of the index (restoring a
   * snapshot, which is written in key order): amortised constant work per key, no merge.
   */
  private def appendSorted(changes: Array[WriteSet.Entry], count: Int): Unit = {
    if (indexSize + count > keys.length) {
      val capacity = math.max(indexSize + count, math.min(Int.MaxValue - 8, keys.length.toLong * 2).toInt)
      keys = Arrays.copyOf(keys, capacity)
      values = Arrays.copyOf(values, capacity)
    }
    var c = 0
    while (c < count) {
      val e = changes(c)
      putInMap(e.hashed, e.value)
      keys(indexSize + c) = e.key
      values(indexSize + c) = e.value
      c += 1
    }
    indexSize += count
  }

  /** Removes every entry with a key in [from, until); returns how many there were. */
  def deleteRange(from: Array[Byte], until: Option[Array[Byte]]): Long = {
    orderedRead()
    val (lo, hi) = bounds(from, until)
    var i = lo
    while (i < hi) { removeFromMap(new HashedKey(keys(i))); i += 1 }
    if (hi > lo) {
      keys = without(keys, indexSize, lo, hi)
      values = without(values, indexSize, lo, hi)
      indexSize -= hi - lo
    }
    (hi - lo).toLong
  }

  /** Number of entries with a key in [from, until). */
  def count(from: Array[Byte], until: Option[Array[Byte]]): Long = {
    orderedRead()
    val (lo, hi) = bounds(from, until)
    (hi - lo).toLong
  }

  /** The entries in [from, until) as they are now, unaffected by later changes. */
  def scan(from: Array[Byte], until: Option[Array[Byte]]): StateScan = {
    orderedRead()
    val (lo, hi) = bounds(from, until)
    new IndexScan(keys, values, lo, hi)
  }

  /**
   * Every entry, without copying (for snapshots and moving to RocksDB): in key order while the
   * index is valid, else in the map's order (no sort just for this).
   */
  def foreach(f: (Array[Byte], Array[Byte]) => Unit): Unit =
    if (indexed) {
      var i = 0
      while (i < indexSize) { f(keys(i), values(i)); i += 1 }
    } else map.forEach((k, v) => f(k.bytes, v))

  /**
   * The entries whose key starts with `prefix`, except those `skip` names, in no particular
   * order, as (keys, values) arrays captured now (for an unordered iteration). The arrays
   * hold the state's own byte arrays: callers hand out copies.
   */
  def entriesWithPrefix(prefix: Array[Byte], skip: HashedKey => Boolean)
      : (Array[Array[Byte]], Array[Array[Byte]]) = {
    val ks = new java.util.ArrayList[Array[Byte]]()
    val vs = new java.util.ArrayList[Array[Byte]]()
    map.forEach { (k, v) =>
      if (Bytes.startsWith(k.bytes, prefix) && !skip(k)) { ks.add(k.bytes); vs.add(v) }
    }
    (ks.toArray(NoArrays), vs.toArray(NoArrays))
  }

  def clear(): Unit = {
    map.clear()
    keys = NoArrays; values = NoArrays; indexSize = 0; indexed = true; indexUsed = false
    heap = 0L
  }

  /** `changes(0 until count)` to the map only (the index is invalid or dropped). */
  private def applyToMap(changes: Array[WriteSet.Entry], count: Int): Unit = {
    var c = 0
    while (c < count) {
      val e = changes(c)
      if (e.isDelete) removeFromMap(e.hashed) else putInMap(e.hashed, e.value)
      c += 1
    }
  }

  private def putInMap(key: HashedKey, value: Array[Byte]): Unit = {
    val old = map.put(key, value)
    heap += WriteSet.arrayBytes(value) +
      (if (old == null) EntryBytes + WriteSet.arrayBytes(key.bytes) else -WriteSet.arrayBytes(old))
  }

  private def removeFromMap(key: HashedKey): Boolean = {
    val old = map.remove(key)
    if (old != null) heap -= EntryBytes + WriteSet.arrayBytes(key.bytes) + WriteSet.arrayBytes(old)
    old != null
  }

  /** Makes the sorted index valid for an ordered read, and notes that one happened. */
  private def orderedRead(): Unit = {
    index()
    indexUsed = true
  }

  /** Makes the sorted index valid: one sort of all entries, after single puts and deletes. */
  private def index(): Unit = if (!indexed) {
    val n = map.size
    val ks = new Array[Array[Byte]](n)
    val vs = new Array[Array[Byte]](n)
    var i = 0
    map.forEach { (k, v) => ks(i) = k.bytes; vs(i) = v; i += 1 }
    val order = KeySort.order(ks, n)
    keys = new Array[Array[Byte]](n)
    values = new Array[Array[Byte]](n)
    i = 0
    while (i < n) { keys(i) = ks(order(i)); values(i) = vs(order(i)); i += 1 }
    indexSize = n
    indexed = true
  }

  /** The first position p in [from, size) with keys(p) >= key (size if none), by galloping. */
  private def gallop(from: Int, size: Int, key: Array[Byte]): Int = {
    // find a window (lo, hi] that holds the answer, doubling the step
    var lo = from - 1 // keys(lo) < key, or lo = from - 1
    var step = 1
    var hi = from
    while (hi < size && Bytes.Order.compare(keys(hi), key) < 0) {
      lo = hi
      hi = math.min(size, hi + step)
      step <<= 1
    }
    // now keys(lo) < key (or lo = from - 1) and (hi == size or keys(hi) >= key)
    var l = lo + 1
    var h = hi
    while (l < h) {
      val mid = (l + h) >>> 1
      if (Bytes.Order.compare(keys(mid), key) < 0) l = mid + 1 else h = mid
    }
    l
  }

  /** Index positions [lo, hi) of the keys in [from, until). */
  private def bounds(from: Array[Byte], until: Option[Array[Byte]]): (Int, Int) = {
    val lo = lowerBound(from)
    val hi = until.map(lowerBound).getOrElse(indexSize)
    (lo, math.max(lo, hi))
  }

  /** The first index position whose key is >= `key`. */
  private def lowerBound(key: Array[Byte]): Int = {
    var lo = 0
    var hi = indexSize
    while (lo < hi) {
      val mid = (lo + hi) >>> 1
      if (Bytes.Order.compare(keys(mid), key) < 0) lo = mid + 1 else hi = mid
    }
    lo
  }
}

private[kstate] object HeapState {
  /**
   * Heap of one entry beyond its arrays, for a 64-bit JVM with compressed references: the hash
   * map node (32), its table slot (8, at the map's load factor), the key wrapper (24) and the
   * two index slots (8).
   */
  final val EntryBytes: Long = 72L

  private val NoArrays = new Array[Array[Byte]](0)

  private def noDeletes(changes: Array[WriteSet.Entry], count: Int): Boolean = {
    var c = 0
    while (c < count && !changes(c).isDelete) c += 1
    c == count
  }

  /** A copy of `a(0 until size)` without positions [lo, hi). */
  private def without(a: Array[Array[Byte]], size: Int, lo: Int, hi: Int): Array[Array[Byte]] = {
    val out = new Array[Array[Byte]](size - (hi - lo))
    System.arraycopy(a, 0, out, 0, lo)
    System.arraycopy(a, hi, out, lo, size - hi)
    out
  }

  /** A scan over index arrays captured when it was opened; hands out copies. */
  private final class IndexScan(keys: Array[Array[Byte]], values: Array[Array[Byte]], from: Int,
      until: Int) extends StateScan {
    private var i = from
    private var closed = false
    override def valid: Boolean = !closed && i < until
    override def key: Array[Byte] = keys(i).clone()
    override def value: Array[Byte] = values(i).clone()
    override def next(): Unit = i += 1
    override def close(): Unit = closed = true
  }
}
