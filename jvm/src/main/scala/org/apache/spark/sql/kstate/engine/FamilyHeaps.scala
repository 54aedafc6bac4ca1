package org.apache.spark.sql.kstate.engine

import java.util.Arrays

/**
 * The heap working copy of a store: one [[HeapState]] per column family, found by the 2-byte
 * family prefix every store key starts with ([[FamilyCodec.prefixOf]]).
 *
 * Why per family: a [[HeapState]] keeps its sorted index only while ordered reads use it, and
 * keeping it costs a sort of the version's changes and a merge at every commit. One operator's
 * families are read in different ways: the versioned store's latest values by key only, a join's
 * grace buffer and time indexes in order. With one index for the whole store, one small ordered
 * family made every commit sort every change; here each family's changes are sorted only if that
 * family was read in order since the last commit ([[applyChanges]]), and an unordered iteration
 * of one family walks that family's entries only.
 *
 * Rules:
 *  - Every key is at least 2 bytes long (a family prefix and the family's own key); ranges that
 *    span families (a whole-store scan or count, a bound shorter than a prefix) read the families
 *    they cover in prefix order, so results are the same as one store's.
 *  - Scans are frozen when opened, as [[HeapState.scan]]'s: a scan over several families opens
 *    each family's scan at once.
 *  - A family's [[HeapState]] is created by its first write and dropped when a range delete
 *    empties it whole (a dropped column family).
 *  - `heapBytes` and `size` are the sums over the families. Not thread-safe: the owning
 *    provider serialises access, as for [[HeapState]].
 */
private[kstate] final class FamilyHeaps(minGarbageBytes: Long = HeapState.MinGarbageBytes) {
  import FamilyHeaps._

  /** By family id (ids are small and allocated in sequence); null: no entries yet. */
  private var heaps = new Array[HeapState](8)

  def heapBytes: Long = fold(0L)(_ + _.heapBytes)

  def size: Int = fold(0)(_ + _.size)

  def get(key: HashedKey): Array[Byte] = {
    val h = heapOf(key.bytes)
    if (h == null) null else h.get(key)
  }

  def contains(key: HashedKey): Boolean = {
    val h = heapOf(key.bytes)
    h != null && h.contains(key)
  }

  /** Puts one entry (restores). */
  def put(key: Array[Byte], value: Array[Byte]): Unit = heapFor(key).put(key, value)

  /** Deletes one entry (restores). */
  def delete(key: Array[Byte]): Unit = {
    val h = heapOf(key)
    if (h != null) h.delete(key)
  }

  /**
   * Applies `changes(0 until count)`, sorted by key without duplicates ([[WriteSet.Deleted]]
   * deletes): each family's run with [[HeapState.applySorted]]. Returns the change in the number
   * of entries.
   */
  def applySorted(changes: Array[WriteSet.Entry], count: Int): Long = {
    var delta = 0L
    var from = 0
    while (from < count) {
      val id = idOf(changes(from).key)
      var until = from + 1
      while (until < count && idOf(changes(until).key) == id) until += 1
      delta += heapFor(id).applySorted(changes, from, until)
      from = until
    }
    delta
  }

  /**
   * Applies one version's changes in any order (no duplicate keys; [[WriteSet.Deleted]]
   * deletes): a family whose sorted index an ordered read used since the last version gets its
   * changes sorted and merged ([[HeapState.applySorted]]), any other family drops its index and
   * takes them as they come ([[HeapState.applyUnsorted]]). Returns the change in the number of
   * entries.
   */
  def applyChanges(changes: Array[WriteSet.Entry]): Long = {
    val byFamily = partition(changes)
    var delta = 0L
    var id = 0
    while (id < byFamily.length) {
      val part = byFamily(id)
      if (part != null) {
        val h = heapFor(id)
        delta += (if (h.keepsIndex) h.applySorted(WriteSet.sortedArray(part)) else h.applyUnsorted(part))
      }
      id += 1
    }
    delta
  }

  /** Whether family `id`'s next changes will be sorted to keep its index (for tests). */
  private[kstate] def keepsIndex(id: Int): Boolean = id < heaps.length && heaps(id) != null && heaps(id).keepsIndex

  /** Removes every entry with a key in [from, until); returns how many there were. */
  def deleteRange(from: Array[Byte], until: Option[Array[Byte]]): Long = {
    var n = 0L
    forRange(from, until) { (id, f, u) =>
      val h = heaps(id)
      if (f.isEmpty && u.isEmpty) { n += h.size; heaps(id) = null }
      else n += h.deleteRange(f.getOrElse(prefixOf(id)), u)
    }
    n
  }

  /** Number of entries with a key in [from, until). */
  def count(from: Array[Byte], until: Option[Array[Byte]]): Long = {
    val one = withinOneFamily(from, until)
    if (one >= 0) return if (one < heaps.length && heaps(one) != null) heaps(one).count(from, until) else 0L
    var n = 0L
    forRange(from, until) { (id, f, u) =>
      val h = heaps(id)
      n += (if (f.isEmpty && u.isEmpty) h.size.toLong else h.count(f.getOrElse(prefixOf(id)), u))
    }
    n
  }

  /** The entries in [from, until) as they are now, unaffected by later changes. */
  def scan(from: Array[Byte], until: Option[Array[Byte]]): StateScan = {
    val one = withinOneFamily(from, until)
    if (one >= 0) return if (one < heaps.length && heaps(one) != null) heaps(one).scan(from, until) else EmptyScan
    val scans = Vector.newBuilder[StateScan]
    forRange(from, until) { (id, f, u) => scans += heaps(id).scan(f.getOrElse(prefixOf(id)), u) }
    new ChainedScan(scans.result())
  }

  /** Builds every family's hash index that waits to be built ([[HeapState.buildHashIndex]]). */
  def buildHashIndexes(): Unit = heapsInOrder.foreach(_.buildHashIndex())

  /** Bytes of the live entries' keys and values (without the arena's record headers). */
  def rawBytes: Long = fold(0L)((n, h) => n + h.liveBytes - EntryArena.HeaderBytes * h.size)

  /** Whether [[foreach]] walks the entries in key order (every family's sorted index is valid). */
  def iteratesInKeyOrder: Boolean = heapsInOrder.forall(_.iteratesInKeyOrder)

  /**
   * Applies the entries of `scan` (key order, no deletes) in sorted runs of
   * [[StateLoader.CheckEvery]] ([[applySorted]]), asking `check` after each run and stopping
   * once it says no. Returns the entries applied and whether every check held. The caller closes
   * the scan.
   */
  def applyScan(scan: StateScan, check: () => Boolean): (Long, Boolean) = {
    val run = new Array[WriteSet.Entry](StateLoader.CheckEvery)
    var applied = 0L
    var ok = true
    var n = 0
    while (ok && scan.valid) {
      run(n) = new WriteSet.Entry(new HashedKey(scan.key), scan.value, WriteSet.Unknown)
      n += 1
      scan.next()
      if (n == run.length || !scan.valid) {
        applySorted(run, n)
        java.util.Arrays.fill(run.asInstanceOf[Array[AnyRef]], 0, n, null)
        applied += n
        n = 0
        ok = check()
      }
    }
    (applied, ok)
  }

  /** Every entry as fresh arrays, family by family (see [[HeapState.foreach]]). */
  def foreach(f: (Array[Byte], Array[Byte]) => Unit): Unit = heapsInOrder.foreach(_.foreach(f))

  /**
   * The entries whose key starts with `prefix`, except those `skip` names, in no particular
   * order (see [[HeapState.entriesWithPrefix]]): one family's only when `prefix` names one.
   */
  def entriesWithPrefix(prefix: Array[Byte], skip: HashedKey => Boolean): Iterator[(Array[Byte], Array[Byte])] =
    if (prefix.length >= PrefixLength) {
      val h = heapOf(prefix)
      if (h == null) Iterator.empty else h.entriesWithPrefix(prefix, skip)
    } else {
      val parts = heapsInOrder.map(_.entriesWithPrefix(prefix, skip))
      parts.iterator.flatMap(identity)
    }

  /** Every entry as it is now, for reading on another thread (see [[HeapState.frozenEntries]]). */
  def frozenEntries(): Iterator[(Array[Byte], Array[Byte])] = {
    val parts = heapsInOrder.map(_.frozenEntries())
    parts.iterator.flatMap(identity)
  }

  /** [[frozenEntries]] in key order, family by family (see [[HeapState.frozenEntriesInKeyOrder]]). */
  def frozenEntriesInKeyOrder(): Iterator[(Array[Byte], Array[Byte])] = {
    val parts = heapsInOrder.map(_.frozenEntriesInKeyOrder())
    parts.iterator.flatMap(identity)
  }

  def clear(): Unit = heaps = new Array[HeapState](8)

  // ---- internals ---------------------------------------------------------------------------

  /** The family id when [from, until) lies within one family's keys (the write set's rule), else -1. */
  private def withinOneFamily(from: Array[Byte], until: Option[Array[Byte]]): Int =
    WriteSet.singleFamily(from, until)

  private def heapOf(key: Array[Byte]): HeapState = {
    val id = idOf(key)
    if (id < heaps.length) heaps(id) else null
  }

  private def heapFor(key: Array[Byte]): HeapState = heapFor(idOf(key))

  private def heapFor(id: Int): HeapState = {
    if (id >= heaps.length) heaps = Arrays.copyOf(heaps, math.max(id + 1, heaps.length * 2))
    var h = heaps(id)
    if (h == null) { h = new HeapState(minGarbageBytes); heaps(id) = h }
    h
  }

  private def heapsInOrder: Vector[HeapState] = heaps.iterator.filter(_ != null).toVector

  private def fold[T](zero: T)(op: (T, HeapState) => T): T = {
    var acc = zero
    var i = 0
    while (i < heaps.length) { if (heaps(i) != null) acc = op(acc, heaps(i)); i += 1 }
    acc
  }

  /** `changes` by family id (null: no change in that family), each in the order given. */
  private def partition(changes: Array[WriteSet.Entry]): Array[Array[WriteSet.Entry]] = {
    // each key is read once (its id noted): the keys are scattered over the heap
    val ids = new Array[Int](changes.length)
    var maxId = -1
    var i = 0
    while (i < changes.length) { ids(i) = idOf(changes(i).key); maxId = math.max(maxId, ids(i)); i += 1 }
    val counts = new Array[Int](maxId + 1)
    i = 0
    while (i < ids.length) { counts(ids(i)) += 1; i += 1 }
    val out = new Array[Array[WriteSet.Entry]](maxId + 1)
    var id = 0
    while (id <= maxId) { if (counts(id) > 0) out(id) = new Array[WriteSet.Entry](counts(id)); id += 1 }
    java.util.Arrays.fill(counts, 0)
    i = 0
    while (i < changes.length) {
      val id = ids(i)
      out(id)(counts(id)) = changes(i)
      counts(id) += 1
      i += 1
    }
    out
  }

  /**
   * Calls `f(id, from, until)` for every family with entries whose keys meet [from, until), in
   * id order, with the bounds clipped to that family: `from` None when the range starts at or
   * before the family's first key, `until` None when it ends at or after its last.
   */
  private def forRange(from: Array[Byte], until: Option[Array[Byte]])(
      f: (Int, Option[Array[Byte]], Option[Array[Byte]]) => Unit
  ): Unit = {
    var id = 0
    while (id < heaps.length) {
      if (heaps(id) != null) {
        val prefix = prefixOf(id)
        val end = Bytes.prefixEnd(prefix)
        // the family's keys are [prefix, end): skip it when the range misses that interval
        val startsAfter = end.exists(e => Bytes.Order.compare(from, e) >= 0)
        val endsBefore = until.exists(u => Bytes.Order.compare(u, prefix) <= 0)
        if (!startsAfter && !endsBefore) {
          val lo = if (Bytes.Order.compare(from, prefix) <= 0) None else Some(from)
          val hi = until.filter(u => end.forall(e => Bytes.Order.compare(u, e) < 0))
          f(id, lo, hi)
        }
      }
      id += 1
    }
  }
}

private[kstate] object FamilyHeaps {
  final val PrefixLength = 2

  /** The family id a store key starts with. */
  def idOf(key: Array[Byte]): Int = {
    val id = WriteSet.bucketOf(key)
    if (id < 0) {
      throw new IllegalArgumentException(
        s"a state store key has a ${PrefixLength}-byte family prefix, got ${key.length} bytes"
      )
    }
    id
  }

  private def prefixOf(id: Int): Array[Byte] = FamilyCodec.prefixOf(id.toShort)

  private object EmptyScan extends StateScan {
    override def valid: Boolean = false
    override def key: Array[Byte] = throw new NoSuchElementException("empty scan")
    override def value: Array[Byte] = throw new NoSuchElementException("empty scan")
    override def next(): Unit = ()
    override def close(): Unit = ()
  }

  /** Several frozen scans read one after another (their ranges are disjoint and ascending). */
  private final class ChainedScan(scans: Vector[StateScan]) extends StateScan {
    private var i = 0
    skip()
    private def skip(): Unit = while (i < scans.size && !scans(i).valid) i += 1
    override def valid: Boolean = i < scans.size && scans(i).valid
    override def key: Array[Byte] = scans(i).key
    override def value: Array[Byte] = scans(i).value
    override def next(): Unit = { scans(i).next(); skip() }
    override def close(): Unit = { scans.foreach(_.close()); i = scans.size }
  }
}
