package org.apache.spark.sql.kstate.engine

import java.util.Arrays

/**
 * The committed entries of a store's working copy kept on the JVM heap: the working copy of a
 * store whose state is small enough (see [[HeapStateBudget]]). Point reads are hash lookups and
 * scans walk a sorted index, so a state that fits in memory pays neither JNI calls nor
 * RocksDB's write path.
 *
 * Layout, built so that the state is a few large arrays to the garbage collector, not two small
 * ones per entry:
 *  - the entries' bytes: records in the pages of an [[EntryArena]], each addressed by a `long`;
 *  - a hash index ([[AddressTable]]) from key to record address. Keys appended in order to an
 *    empty state (a restore reading a snapshot, which lists its keys in key order) do not go
 *    into it one by one: their hashes wait beside the sorted index, and the hash index is built
 *    from both in one pass ([[AddressTable.build]]) when first needed or [[buildHashIndex]] is
 *    called (at the end of each restored file). Inserting millions of keys one at a time
 *    touches a random slot of a table larger than the CPU caches for each; the build places them
 *    region by region;
 *  - a sorted index for ordered reads (scans, counts, range deletes): record addresses in
 *    unsigned key order. It is kept only while ordered reads use it:
 *    - while they do (an ordered read since the last commit, [[keepsIndex]]), a version's
 *      changes arrive sorted ([[applySorted]]) and renew the index by one linear merge;
 *    - otherwise a version's changes arrive in any order ([[applyUnsorted]]), update the hash
 *      index only and drop the sorted one: a state read only by key and by unordered iteration
 *      (Spark's aggregations and deduplication) never pays for a sort, as with Spark's HDFS
 *      provider;
 *    - single puts and deletes (a restore replaying files) only invalidate it.
 *    An invalid index is rebuilt by one sort of all keys when an ordered read next needs it.
 *
 * Every put appends a record; the record it replaces, and a deleted one, become garbage. Once
 * garbage exceeds a quarter of the live bytes, 48 bytes per live entry and `minGarbageBytes`,
 * the live records are copied into a new arena, in key order while the sorted index is valid.
 * A compaction costs per entry (the hash index is rebuilt) and per byte (the copy): the quarter
 * bounds the heap of large entries rewritten often (a versioned store's latest entries, which
 * hold the key's recent history: at most 1.25 times their live bytes), the 48 bytes keep states
 * of small entries (deduplication's) compacting no more often than when garbage equalled the
 * live bytes. Example: 1M entries of 200 bytes compact at 50 MB of garbage; of 40 bytes at 48 MB.
 *
 * Rules:
 *  - Only committed versions (and a restore in progress) live here: a store's uncommitted
 *    changes stay in its write set, and a store that spills moves the working copy to RocksDB
 *    first. So the state changes only when a version is committed or restored.
 *  - The sorted index arrays and the arena's pages are never modified once written, only
 *    replaced or appended to, so a scan keeps the ones it started on and is frozen at the
 *    version it was opened at, like a RocksDB snapshot.
 *  - Arrays handed in are copied into the arena (the caller may reuse them); arrays handed out
 *    are fresh copies, so no caller can alter the state.
 *  - `heapBytes` is the heap held: the arena's pages, the hash index's and the sorted index's
 *    arrays.
 *  - Not thread-safe: the owning provider serialises access.
 */
private[kstate] final class HeapState(private[kstate] val minGarbageBytes: Long = HeapState.MinGarbageBytes) {
  import HeapState._

  private var arena = new EntryArena
  // The hash index; while `deferred`, empty, and every entry is in the sorted index with its
  // key's hash at the same position of `pendingHashes` (use `hashIndex`, which builds it).
  private var table = new AddressTable
  private var deferred = false
  private var pendingHashes: Array[Int] = NoHashes
  // The sorted index: index(0 until indexSize) are record addresses in ascending key order;
  // valid only when `indexed`. Slots below indexSize are never written again; appendSorted
  // fills slots above it.
  private var index: Array[Long] = NoAddresses
  private var indexSize = 0
  private var indexed = true

  /** Whether an ordered read used the index since the last version was applied. */
  private var indexUsed = false

  /** Bytes of the live records in the arena. */
  private var live = 0L

  /** Heap held; while the hash index waits to be built, the table it will be counts already. */
  def heapBytes: Long = {
    val hashIndexBytes =
      if (!deferred) table.tableBytes
      else AddressTable.tableBytesOf(AddressTable.capacityFor(indexSize)) + 16L + 4L * pendingHashes.length
    arena.allocatedBytes + hashIndexBytes + (16L + 8L * index.length)
  }

  def size: Int = if (deferred) indexSize else table.size

  /** Builds the hash index if it waits to be built (a restore's end: see [[StateLoader.finish]]). */
  def buildHashIndex(): Unit = hashIndex

  /** Whether the hash index waits to be built (for tests). */
  private[kstate] def hashIndexDeferred: Boolean = deferred

  /** The hash index, built first if it was deferred. */
  private def hashIndex: AddressTable = {
    if (deferred) {
      table = AddressTable.build(pendingHashes, index, indexSize)
      pendingHashes = NoHashes
      deferred = false
    }
    table
  }

  /** Bytes of the live records (for tests: the arena's other bytes are garbage or free). */
  private[kstate] def liveBytes: Long = live

  /** Bytes of records written to the current arena, live or garbage (for tests). */
  private[kstate] def arenaUsedBytes: Long = arena.usedBytes

  def get(key: HashedKey): Array[Byte] = {
    val a = hashIndex.get(arena.pages, key.bytes, key.hashCode)
    if (a == AddressTable.Empty) null else EntryArena.value(arena.pages, a)
  }

  def contains(key: HashedKey): Boolean = hashIndex.get(arena.pages, key.bytes, key.hashCode) != AddressTable.Empty

  /** Puts one entry (restores); the index is rebuilt when next needed. */
  def put(key: Array[Byte], value: Array[Byte]): Unit = {
    putEntry(key, HashedKey.hashOf(key), value)
    indexed = false
    maybeCompact()
  }

  /** Deletes one entry (restores); the index is rebuilt when next needed. */
  def delete(key: Array[Byte]): Unit =
    if (removeEntry(key, HashedKey.hashOf(key))) {
      indexed = false
      maybeCompact()
    }

  /**
   * Applies one version's changes: `changes` sorted by key without duplicates, a value of
   * [[WriteSet.Deleted]] deleting its key. Returns the change in the number of entries.
   */
  def applySorted(changes: Array[WriteSet.Entry]): Long = applySorted(changes, 0, changes.length)

  /**
   * Whether the next version's changes should arrive sorted ([[applySorted]]) to keep the
   * sorted index: it is valid and an ordered read used it since the last version was applied.
   */
  def keepsIndex: Boolean = indexed && indexUsed

  /**
   * Applies one version's changes in any order (no duplicate keys; [[WriteSet.Deleted]]
   * deletes) to the hash index and drops the sorted one. Returns the change in the number of
   * entries.
   */
  def applyUnsorted(changes: Array[WriteSet.Entry]): Long = {
    val before = size
    hashIndex.ensureCapacity(before + changes.length)
    applyToTable(changes, 0, changes.length)
    index = NoAddresses; indexSize = 0; indexed = false
    indexUsed = false
    maybeCompact()
    (size - before).toLong
  }

  /** [[applySorted]] of `changes(from until until)`. */
  def applySorted(changes: Array[WriteSet.Entry], from: Int, until: Int): Long = {
    val count = until - from
    val before = size
    indexUsed = false
    if (!indexed) {
      hashIndex.ensureCapacity(before + count)
      applyToTable(changes, from, until)
    } else if (
      count > 0 && noDeletes(changes, from, until) &&
      (indexSize == 0 || EntryArena.compareKey(arena.pages, index(indexSize - 1), changes(from).key) < 0)
    ) {
      // new keys only: into an empty state, the hash index waits (see the class doc)
      if (!deferred && table.size == 0) deferred = true
      if (!deferred) table.ensureCapacity(before + count)
      appendSorted(changes, from, until)
    } else {
      hashIndex.ensureCapacity(before + count)
      val size = indexSize
      val out = new Array[Long](size + count)
      var i = 0
      var n = 0
      var c = from
      while (c < until) {
        val e = changes(c)
        c += 1
        // copy the unchanged entries before e in one block, found by galloping (a few changes
        // into a large index cost O(changes x log gap) comparisons, not one per index entry)
        val pos = gallop(i, size, e.key)
        System.arraycopy(index, i, out, n, pos - i)
        n += pos - i
        i = pos
        val replaces = i < size && EntryArena.compareKey(arena.pages, index(i), e.key) == 0
        if (e.isDelete) removeEntry(e.key, e.hash)
        else {
          out(n) = putEntry(e.key, e.hash, e.value)
          n += 1
        }
        if (replaces) i += 1
      }
      System.arraycopy(index, i, out, n, size - i)
      n += size - i
      index = out
      indexSize = n
    }
    maybeCompact()
    (size - before).toLong
  }

  /**
   * Adds new keys, all greater than every indexed key, at the end of the index (restoring a
   * snapshot, which is written in key order): amortised constant work per key, no merge.
   */
  private def appendSorted(changes: Array[WriteSet.Entry], from: Int, until: Int): Unit = {
    val count = until - from
    if (indexSize + count > index.length) {
      val capacity = math.max(indexSize + count, math.min(Int.MaxValue - 8, index.length.toLong * 2).toInt)
      index = Arrays.copyOf(index, capacity)
    }
    if (deferred && pendingHashes.length < index.length) pendingHashes = Arrays.copyOf(pendingHashes, index.length)
    var c = from
    while (c < until) {
      val e = changes(c)
      val at = indexSize + c - from
      if (deferred) {
        index(at) = arena.append(e.key, e.value)
        pendingHashes(at) = e.hash
        live += EntryArena.recordBytes(e.key.length, e.value.length)
      } else index(at) = putEntry(e.key, e.hash, e.value)
      c += 1
    }
    indexSize += count
  }

  /** Removes every entry with a key in [from, until); returns how many there were. */
  def deleteRange(from: Array[Byte], until: Option[Array[Byte]]): Long = {
    orderedRead()
    val (lo, hi) = bounds(from, until)
    val pages = arena.pages
    var i = lo
    while (i < hi) {
      val a = index(i)
      hashIndex.removeAddress(EntryArena.keyHash(pages, a), a)
      live -= EntryArena.recordBytes(pages, a)
      i += 1
    }
    if (hi > lo) {
      index = without(index, indexSize, lo, hi)
      indexSize -= hi - lo
    }
    maybeCompact()
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
    new IndexScan(arena.pages, index, lo, hi)
  }

  /** Whether [[foreach]] walks the entries in key order (the sorted index is valid). */
  def iteratesInKeyOrder: Boolean = indexed

  /**
   * Every entry as fresh arrays (for snapshots and moving to RocksDB): in key order while the
   * index is valid, else in the hash index's order (no sort just for this).
   */
  def foreach(f: (Array[Byte], Array[Byte]) => Unit): Unit = {
    val pages = arena.pages
    if (indexed) {
      var i = 0
      while (i < indexSize) { f(EntryArena.key(pages, index(i)), EntryArena.value(pages, index(i))); i += 1 }
    } else {
      var s = 0
      while (s < table.slots) {
        val a = table.addressAt(s)
        if (a != AddressTable.Empty) f(EntryArena.key(pages, a), EntryArena.value(pages, a))
        s += 1
      }
    }
  }

  /**
   * The entries whose key starts with `prefix`, except those `skip` names, in no particular
   * order (for an unordered iteration), as fresh arrays the caller may hand out. Read lazily
   * from a copy of the hash index's slots taken now (primitive arrays: a copy, not an object per
   * entry) and the current pages, so the iteration is frozen at this version whatever is
   * committed later, and holds no more than one entry at a time.
   */
  def entriesWithPrefix(prefix: Array[Byte], skip: HashedKey => Boolean): Iterator[(Array[Byte], Array[Byte])] = {
    val pages = arena.pages
    val (addrs, hashes) = hashIndex.copyOfSlots
    new Iterator[(Array[Byte], Array[Byte])] {
      private var s = -1
      // the key of slot s, copied once for the skip test and handed out by next()
      private var key: Array[Byte] = _
      advance()
      private def advance(): Unit = {
        s += 1
        while (s < addrs.length && !wanted(s)) s += 1
      }
      private def wanted(slot: Int): Boolean = {
        val a = addrs(slot)
        a != AddressTable.Empty && EntryArena.startsWith(pages, a, prefix) && {
          val k = EntryArena.key(pages, a)
          val keep = !skip(HashedKey.withHash(k, hashes(slot)))
          if (keep) key = k
          keep
        }
      }
      override def hasNext: Boolean = s < addrs.length
      override def next(): (Array[Byte], Array[Byte]) = {
        if (!hasNext) throw new NoSuchElementException("end of the heap state's entries")
        val a = addrs(s)
        val k = key
        advance()
        (k, EntryArena.value(pages, a))
      }
    }
  }

  /**
   * Every entry as it is now, for reading on another thread (the snapshot maintenance writes):
   * frozen like [[scan]], but without touching the sorted index (no sort, no note of an ordered
   * read): in key order while the index is valid, else in the hash index's order from a copy of
   * its slots. Later versions applied by the owner do not show through (pages and index arrays
   * are only appended to or replaced, never rewritten). The caller must take it under the
   * owner's lock, so that it sees every write before it.
   */
  def frozenEntries(): Iterator[(Array[Byte], Array[Byte])] =
    if (indexed) {
      val pages = arena.pages
      val idx = index
      val n = indexSize
      Iterator.range(0, n).map(i => (EntryArena.key(pages, idx(i)), EntryArena.value(pages, idx(i))))
    } else entriesWithPrefix(Array.emptyByteArray, _ => false)

  /**
   * [[frozenEntries]] in key order whatever the state of the sorted index (a table snapshot needs
   * key order): without a valid index, the keys of a copy of the hash index's slots, taken now,
   * are sorted ([[KeySort]]) when the iteration starts, on the reading thread. That holds every
   * key at once, as fresh arrays, until it is handed out. Take it under the owner's lock.
   */
  def frozenEntriesInKeyOrder(): Iterator[(Array[Byte], Array[Byte])] =
    if (indexed) frozenEntries()
    else {
      val pages = arena.pages
      val slots = hashIndex.copyOfSlots._1
      new Iterator[(Array[Byte], Array[Byte])] {
        private var addrs: Array[Long] = _
        private var keys: Array[Array[Byte]] = _
        private var order: Array[Int] = _
        private var i = 0
        private def sort(): Unit = if (order == null) {
          var n = 0
          slots.foreach(a => if (a != AddressTable.Empty) n += 1)
          addrs = new Array[Long](n)
          keys = new Array[Array[Byte]](n)
          var j = 0
          slots.foreach { a =>
            if (a != AddressTable.Empty) { addrs(j) = a; keys(j) = EntryArena.key(pages, a); j += 1 }
          }
          order = KeySort.order(keys, n)
        }
        override def hasNext: Boolean = { sort(); i < order.length }
        override def next(): (Array[Byte], Array[Byte]) = {
          if (!hasNext) throw new NoSuchElementException("end of the heap state's entries")
          val p = order(i)
          i += 1
          val k = keys(p)
          keys(p) = null // handed out: not held any longer
          (k, EntryArena.value(pages, addrs(p)))
        }
      }
    }

  def clear(): Unit = {
    arena = new EntryArena
    table = new AddressTable
    deferred = false; pendingHashes = NoHashes
    index = NoAddresses; indexSize = 0; indexed = true; indexUsed = false
    live = 0L
  }

  /** `changes(from until until)` to the hash index only (the sorted index is invalid or dropped). */
  private def applyToTable(changes: Array[WriteSet.Entry], from: Int, until: Int): Unit = {
    var c = from
    while (c < until) {
      val e = changes(c)
      if (e.isDelete) removeEntry(e.key, e.hash) else putEntry(e.key, e.hash, e.value)
      c += 1
    }
  }

  /** Appends the entry's record and points the hash index at it; returns its address. */
  private def putEntry(key: Array[Byte], hash: Int, value: Array[Byte]): Long = {
    val a = arena.append(key, value)
    val pages = arena.pages
    val old = hashIndex.put(pages, key, hash, a)
    live += EntryArena.recordBytes(key.length, value.length)
    if (old != AddressTable.Empty) live -= EntryArena.recordBytes(pages, old)
    a
  }

  private def removeEntry(key: Array[Byte], hash: Int): Boolean = {
    val pages = arena.pages
    val old = hashIndex.remove(pages, key, hash)
    if (old != AddressTable.Empty) live -= EntryArena.recordBytes(pages, old)
    old != AddressTable.Empty
  }

  /** The garbage the arena may hold before it compacts (see the class doc). */
  private[kstate] def garbageAllowed: Long =
    math.max(math.max(live / 4, HeapState.GarbagePerEntry * size), minGarbageBytes)

  /** Copies the live records into a new arena once garbage passes [[garbageAllowed]]. */
  private def maybeCompact(): Unit =
    if (arena.usedBytes - live > garbageAllowed) {
      val from = arena.pages
      val to = new EntryArena(live)
      if (indexed) {
        // in key order, so that scans read pages front to back; the hash index is rebuilt
        // (a deferred one stays deferred: its hashes keep their positions)
        val t = if (deferred) null else new AddressTable(indexSize)
        val moved = new Array[Long](indexSize)
        var i = 0
        while (i < indexSize) {
          val a = to.copyOf(from, index(i))
          moved(i) = a
          if (t != null) t.putNew(EntryArena.keyHash(to.pages, a), a)
          i += 1
        }
        if (t != null) table = t
        index = moved
      } else {
        var s = 0
        while (s < table.slots) {
          val a = table.addressAt(s)
          if (a != AddressTable.Empty) table.setAddressAt(s, to.copyOf(from, a))
          s += 1
        }
      }
      arena = to
    }

  /** Makes the sorted index valid for an ordered read, and notes that one happened. */
  private def orderedRead(): Unit = {
    sortIndex()
    indexUsed = true
  }

  /** Makes the sorted index valid: one sort of all keys, after single puts and deletes. */
  private def sortIndex(): Unit = if (!indexed) {
    val n = table.size
    val pages = arena.pages
    val addrs = new Array[Long](n)
    val keys = new Array[Array[Byte]](n)
    var i = 0
    var s = 0
    while (s < table.slots) {
      val a = table.addressAt(s)
      if (a != AddressTable.Empty) { addrs(i) = a; keys(i) = EntryArena.key(pages, a); i += 1 }
      s += 1
    }
    val order = KeySort.order(keys, n)
    index = new Array[Long](n)
    i = 0
    while (i < n) { index(i) = addrs(order(i)); i += 1 }
    indexSize = n
    indexed = true
  }

  /** The first position p in [from, size) with key(p) >= key (size if none), by galloping. */
  private def gallop(from: Int, size: Int, key: Array[Byte]): Int = {
    val pages = arena.pages
    // find a window (lo, hi] that holds the answer, doubling the step
    var lo = from - 1 // key(lo) < key, or lo = from - 1
    var step = 1
    var hi = from
    while (hi < size && EntryArena.compareKey(pages, index(hi), key) < 0) {
      lo = hi
      hi = math.min(size, hi + step)
      step <<= 1
    }
    // now key(lo) < key (or lo = from - 1) and (hi == size or key(hi) >= key)
    var l = lo + 1
    var h = hi
    while (l < h) {
      val mid = (l + h) >>> 1
      if (EntryArena.compareKey(pages, index(mid), key) < 0) l = mid + 1 else h = mid
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
    val pages = arena.pages
    var lo = 0
    var hi = indexSize
    while (lo < hi) {
      val mid = (lo + hi) >>> 1
      if (EntryArena.compareKey(pages, index(mid), key) < 0) lo = mid + 1 else hi = mid
    }
    lo
  }
}

private[kstate] object HeapState {

  /**
   * The heap a heap state of `entries` entries of `rawBytes` key and value bytes takes at least:
   * its records in the arena (8 bytes of lengths each), its sorted index (8 bytes each) and its
   * hash index at its load factor ([[heapBytes]] counts the same, plus the arena's free room).
   */
  def bytesFor(entries: Long, rawBytes: Long): Long = {
    val n = math.min(entries, AddressTable.MaxCapacity.toLong).toInt
    rawBytes + 16L * entries + AddressTable.tableBytesOf(AddressTable.capacityFor(n))
  }

  /** Garbage a compaction waits for per live entry (see the class doc). */
  final val GarbagePerEntry: Long = 48L

  /** Garbage below this many bytes never triggers a compaction (small states; tests lower it). */
  final val MinGarbageBytes: Long = 256L * 1024

  private val NoAddresses = new Array[Long](0)
  private val NoHashes = new Array[Int](0)

  private def noDeletes(changes: Array[WriteSet.Entry], from: Int, until: Int): Boolean = {
    var c = from
    while (c < until && !changes(c).isDelete) c += 1
    c == until
  }

  /** A copy of `a(0 until size)` without positions [lo, hi). */
  private def without(a: Array[Long], size: Int, lo: Int, hi: Int): Array[Long] = {
    val out = new Array[Long](size - (hi - lo))
    System.arraycopy(a, 0, out, 0, lo)
    System.arraycopy(a, hi, out, lo, size - hi)
    out
  }

  /** A scan over the index array and arena pages captured when it was opened; hands out copies. */
  private final class IndexScan(pages: Array[Array[Byte]], index: Array[Long], from: Int, until: Int)
      extends StateScan {
    private var i = from
    private var closed = false
    override def valid: Boolean = !closed && i < until
    override def key: Array[Byte] = EntryArena.key(pages, index(i))
    override def value: Array[Byte] = EntryArena.value(pages, index(i))
    override def next(): Unit = i += 1
    override def close(): Unit = closed = true
  }
}
