package org.apache.spark.sql.kstate.engine

import java.util.{ArrayList, Arrays, TreeMap}

/**
 * The uncommitted changes of one store version. An entry is either a write (new value bytes),
 * a delete ([[WriteSet.Deleted]]), or a read-only note of whether the key existed before this
 * version (value null), kept so that row counting does not look the key up twice.
 *
 * Point operations use a hash table of the entries by open addressing (parallel arrays of hash
 * codes and entries, linear probing): an entry is three objects (itself, its key and value
 * arrays) and no map node, which matters because a version's entries live until it commits and
 * every young collection meanwhile copies them. Ordered scans and the commit need the changes in RocksDB's
 * key order, so a sorted view ([[WriteSet.SortedView]]) is built when first needed, and only then:
 *  - `base`: the entries sorted by key when it was built (one sort of an array);
 *  - `tail`: entries inserted since, unsorted. Once it reaches an eighth of `base` it is sorted
 *    and merged into a new `base` (amortised constant work per insert); while it is smaller, a
 *    scan that needs it builds `tailIndex`, a tree kept up to date from then on, so a version
 *    that interleaves writes and scans (joins, session windows, the versioned store) never
 *    re-sorts everything per scan.
 * A scan within one column family (keys sharing their first two bytes, [[FamilyCodec]]'s prefix:
 * every family scan of [[org.apache.spark.sql.kstate.provider.KStateStore]]) uses a sorted view of
 * that family's entries alone, so writes to other families (a join's table versions next to its
 * grace buffer's scans) are never sorted for it; a scan across families uses one view of all
 * entries. Versions that never scan in order pay for one sort, at commit.
 *
 * `heapBytes` estimates the JVM heap the entries occupy (arrays, entries, table slots; see
 * [[WriteSet.heapBytesOf]]) plus the sorted view's; the store spills the write set to its local
 * database when the estimate passes its limit, then calls `clear()`.
 */
private[kstate] final class WriteSet(expectedEntries: Int = 0) {
  import WriteSet._

  // The hash table: slots(i) null when empty; hashes(i) the hash of slots(i)'s key.
  private var hashes: Array[Int] = _
  private var slots: Array[Entry] = _
  private var count = 0
  // The entries in insertion order: also their order in memory (allocated one after another),
  // so the commit's passes over all entries read memory front to back, not at random.
  private var inserted = new Array[Entry](math.max(16, expectedEntries))
  allocate(AddressTable.capacityFor(expectedEntries))
  private var entriesHeap = 0L

  /** The sorted view of all entries (null: none), for scans across families and the commit. */
  private var global: SortedView = _

  /** Sorted views of single families' entries, by [[WriteSet.bucketOf]], built by their scans. */
  private val families = new java.util.HashMap[Integer, SortedView]()

  /** Group indexes of single families' entries, by bucket, built by their group scans ([[changesInGroup]]). */
  private val groupIndexes = new java.util.HashMap[Integer, GroupIndex]()
  private var viewHeap = 0L

  /**
   * The buckets of `families` and `groupIndexes` as a bit set of all 65,536 (null: none), so
   * that an insert into a family without either (most of them) is one bit test, not two map
   * lookups.
   */
  private var viewBuckets: Array[Long] = _

  /**
   * Estimated heap bytes held by the entries (see [[WriteSet.heapBytesOf]]), the hash table's
   * and insertion order's arrays at their current capacities, and the sorted view.
   */
  def heapBytes: Long = entriesHeap + tableBytes + viewHeap

  /** Heap of the hash table's two arrays and the insertion-order array. */
  private[kstate] def tableBytes: Long = 48L + 8L * slots.length + 4L * inserted.length

  /** Number of entries (changes and existence notes). */
  def numEntries: Long = count.toLong

  /** Forgets every entry (after they were spilled). */
  def clear(): Unit = {
    allocate(AddressTable.MinCapacity)
    inserted = new Array[Entry](16)
    count = 0
    entriesHeap = 0L
    dropSortedView()
  }

  def lookup(key: HashedKey): Entry = {
    val s = find(key.bytes, key.hashCode)
    if (s >= 0) slots(s) else null
  }

  def write(key: Array[Byte], value: Array[Byte]): Unit = write(new HashedKey(key), value)

  def write(k: HashedKey, value: Array[Byte]): Unit = {
    val s = find(k.bytes, k.hashCode)
    if (s < 0) insert(~s, new Entry(k.bytes, k.hashCode, value, Unknown))
    else {
      val e = slots(s)
      entriesHeap += arrayBytes(value) - arrayBytes(e.value)
      e.value = value
    }
  }

  def noteRead(key: HashedKey, existed: Boolean): Unit = {
    val s = find(key.bytes, key.hashCode)
    if (s < 0) insert(~s, new Entry(key.bytes, key.hashCode, null, if (existed) Present else Absent))
  }

  /** The slot holding `key`, or `~slot` of the free slot where it would go. */
  private def find(key: Array[Byte], hash: Int): Int = {
    val mask = slots.length - 1
    var i = hash & mask
    while (true) {
      val e = slots(i)
      if (e == null) return ~i
      if (hashes(i) == hash && Arrays.equals(e.key, key)) return i
      i = (i + 1) & mask
    }
    throw new IllegalStateException("unreachable")
  }

  private def allocate(capacity: Int): Unit = {
    hashes = new Array[Int](capacity)
    slots = new Array[Entry](capacity)
  }

  /** Every entry, in insertion order. */
  private def allEntries: Array[Entry] = Arrays.copyOf(inserted, count)

  /** Rebuilds the table with `capacity` slots from the first `count` entries of `inserted`. */
  private def rebuild(capacity: Int): Unit = {
    allocate(capacity)
    val mask = capacity - 1
    var n = 0
    while (n < count) {
      val e = inserted(n)
      var i = e.hash & mask
      while (slots(i) != null) i = (i + 1) & mask
      hashes(i) = e.hash; slots(i) = e
      n += 1
    }
  }

  private def insert(slot: Int, e: Entry): Unit = {
    hashes(slot) = e.hash; slots(slot) = e
    if (count == inserted.length) inserted = Arrays.copyOf(inserted, count * 2)
    inserted(count) = e
    count += 1
    if (count > slots.length * AddressTable.MaxLoad) rebuild(slots.length * 2)
    entriesHeap += heapBytesOf(e.key, e.value)
    if (global != null) viewHeap += global.add(e)
    if (viewBuckets != null) {
      val b = bucketOf(e.key)
      if (b >= 0 && (viewBuckets(b >>> 6) & (1L << b)) != 0) {
        val v = families.get(b)
        if (v != null) viewHeap += v.add(e)
        val g = groupIndexes.get(b)
        if (g != null) viewHeap += g.add(e)
      }
    }
  }

  /** Notes that bucket `b` has a sorted view or a group index (which inserts must keep up to date). */
  private def markViewBucket(b: Int): Unit = {
    if (viewBuckets == null) viewBuckets = new Array[Long](1024)
    viewBuckets(b >>> 6) |= 1L << b
  }

  private def dropSortedView(): Unit = {
    global = null
    families.clear()
    groupIndexes.clear()
    viewBuckets = null
    viewHeap = 0L
  }

  /** The sorted view for a scan of [from, until), up to date: its family's, or the global one. */
  private def sortedView(from: Array[Byte], until: Option[Array[Byte]]): SortedView = {
    val b = singleFamily(from, until)
    if (b < 0) {
      if (global == null) { global = new SortedView(sortedArray(allEntries)); viewHeap += global.heap }
      viewHeap += global.update()
      global
    } else {
      var v = families.get(b)
      if (v == null) {
        v = new SortedView(sortedArray(entriesOf(b)))
        families.put(b, v)
        markViewBucket(b)
        viewHeap += v.heap
      }
      viewHeap += v.update()
      v
    }
  }

  /** The entries whose key is in family bucket `b`. */
  private def entriesOf(b: Int): Array[Entry] = {
    val out = new ArrayList[Entry]()
    var i = 0
    while (i < count) {
      if (bucketOf(inserted(i).key) == b) out.add(inserted(i))
      i += 1
    }
    out.toArray(new Array[Entry](0))
  }

  /**
   * Written or deleted entries with keys in [from, until), in key order, copied out: all of
   * them, or the first `limit` (then the result has exactly `limit` entries, and a caller that
   * needs the rest asks again from after the last key).
   */
  def changesIn(
      from: Array[Byte],
      until: Option[Array[Byte]],
      limit: Int = Int.MaxValue
  ): Array[(Array[Byte], Array[Byte])] = {
    val out = Array.newBuilder[(Array[Byte], Array[Byte])]
    var n = 0
    if (until.forall(u => Bytes.Order.compare(from, u) < 0)) {
      val view = sortedView(from, until)
      val base = view.base
      var i = view.lowerBound(from)
      val end = until.map(view.lowerBound).getOrElse(base.length)
      val fromTail = if (view.tailIndex == null) java.util.Collections.emptyIterator[Entry]()
      else (until match {
        case Some(u) => view.tailIndex.subMap(from, true, u, false)
        case None => view.tailIndex.tailMap(from, true)
      }).values().iterator()
      var t = if (fromTail.hasNext) fromTail.next() else null
      while (n < limit && (i < end || t != null)) {
        val e =
          if (t == null || (i < end && Bytes.Order.compare(base(i).key, t.key) < 0)) { i += 1; base(i - 1) }
          else { val x = t; t = if (fromTail.hasNext) fromTail.next() else null; x }
        if (e.value != null) { out += ((e.key, e.value)); n += 1 }
      }
    }
    out.result()
  }

  /**
   * Written or deleted entries with keys in [from, until), in key order, copied out, for a scan
   * that stays within one key group: every key of [from, until) starts with `group`, a whole
   * group of its family under `groups` (the family's keys start after `prefixLength` bytes; one
   * family, one `groups`). Reads the group's entries from the family's group index (built by the
   * first such scan, then kept up to date), not from a sorted view: no sorted structure over the
   * family is kept for these scans.
   */
  def changesInGroup(
      group: Array[Byte],
      groups: KeyGroups,
      prefixLength: Int,
      from: Array[Byte],
      until: Option[Array[Byte]]
  ): Array[(Array[Byte], Array[Byte])] = {
    val b = bucketOf(group)
    require(b >= 0 && Bytes.startsWith(from, group), "a group scan needs a group of one family and a start within it")
    var index = groupIndexes.get(b)
    if (index == null) {
      index = new GroupIndex(groups, prefixLength)
      var i = 0
      while (i < count) {
        val e = inserted(i)
        if (bucketOf(e.key) == b) viewHeap += index.add(e)
        i += 1
      }
      groupIndexes.put(b, index)
      markViewBucket(b)
    }
    val entries = index.entriesOf(group)
    if (entries == null) Array.empty
    else {
      val out = new ArrayList[Entry](entries.size)
      entries.forEach { e =>
        if (
          e.value != null && Bytes.Order.compare(e.key, from) >= 0 && until.forall(u =>
            Bytes.Order.compare(e.key, u) < 0
          )
        ) {
          out.add(e)
        }
      }
      out.sort((x: Entry, y: Entry) => Bytes.Order.compare(x.key, y.key))
      val result = new Array[(Array[Byte], Array[Byte])](out.size)
      var i = 0
      while (i < result.length) { val e = out.get(i); result(i) = (e.key, e.value); i += 1 }
      result
    }
  }

  /** Drops every entry with a key in [from, until) (rare: a dropped column family). */
  def clearRange(from: Array[Byte], until: Option[Array[Byte]]): Unit = {
    val (dropped, kept) = allEntries.partition { e =>
      Bytes.Order.compare(e.key, from) >= 0 && until.forall(u => Bytes.Order.compare(e.key, u) < 0)
    }
    dropped.foreach(e => entriesHeap -= heapBytesOf(e.key, e.value))
    inserted = Arrays.copyOf(kept, math.max(16, kept.length))
    count = kept.length
    rebuild(AddressTable.capacityFor(count))
    dropSortedView()
  }

  /**
   * All written or deleted entries in the order they were first written (or read), for a commit
   * that needs no key order (a heap working copy that keeps no sorted index): no sort at all.
   */
  def unsortedChanges: Array[Entry] = {
    val out = new Array[Entry](count)
    var n = 0
    var i = 0
    while (i < count) {
      val e = inserted(i)
      if (e.value != null) { out(n) = e; n += 1 }
      i += 1
    }
    if (n == out.length) out else Arrays.copyOf(out, n)
  }

  /** Calls `f` on every written or deleted entry under `prefix` (read notes are not changes), in insertion order. */
  private def foreachChange(prefix: Array[Byte])(f: Entry => Unit): Unit = {
    var i = 0
    while (i < count) {
      val e = inserted(i)
      if (e.value != null && Bytes.startsWith(e.key, prefix)) f(e)
      i += 1
    }
  }

  /**
   * The changes under `prefix`, captured now (later writes do not show through), in one pass:
   * the written (not deleted) entries in no particular order as (key, value) arrays, and the set
   * of every key written or deleted (a [[KeySet]]: no allocation per key).
   */
  def changesWithPrefix(prefix: Array[Byte]): (Array[Array[Byte]], Array[Array[Byte]], KeySet) = {
    val ks = new ArrayList[Array[Byte]]()
    val vs = new ArrayList[Array[Byte]]()
    val changed = new KeySet(count)
    foreachChange(prefix) { e =>
      changed.add(e.key, e.hash)
      if (!e.isDelete) { ks.add(e.key); vs.add(e.value) }
    }
    (ks.toArray(new Array[Array[Byte]](0)), vs.toArray(new Array[Array[Byte]](0)), changed)
  }

  /** The keys under `prefix` this version wrote or deleted so far. */
  def keysWithPrefix(prefix: Array[Byte]): KeySet = {
    val set = new KeySet(count)
    foreachChange(prefix)(e => set.add(e.key, e.hash))
    set
  }

  /**
   * Deletes in place every written (not deleted) entry under `prefix` whose value `expired`
   * accepts, and returns how many: what writing [[Deleted]] to each of their keys would do,
   * without hashing and finding the keys again. `expired` reads the entry's own value array and
   * must not keep or change it.
   */
  def deleteWhere(prefix: Array[Byte])(expired: Array[Byte] => Boolean): Int = {
    var n = 0
    foreachChange(prefix) { e =>
      if (!e.isDelete && expired(e.value)) {
        entriesHeap -= arrayBytes(e.value)
        e.value = Deleted
        n += 1
      }
    }
    n
  }

  /**
   * All written or deleted entries in key order (RocksDB applies sorted write batches and
   * multi-gets markedly faster than random-order ones; the heap working copy merges them).
   * The array may be the write set's own: callers must not modify it.
   */
  def sortedChanges: Array[Entry] = {
    val all =
      if (global == null) sortedArray(allEntries)
      else {
        viewHeap += global.merge()
        global.base
      }
    var n = 0
    var i = 0
    while (i < all.length) { if (all(i).value != null) n += 1; i += 1 }
    if (n == all.length) all
    else {
      val out = new Array[Entry](n)
      n = 0
      i = 0
      while (i < all.length) { val e = all(i); if (e.value != null) { out(n) = e; n += 1 }; i += 1 }
      out
    }
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
   * the entry object (12-byte header, three references, an int and a byte: 32). The table's
   * slots are counted by capacity ([[WriteSet.tableBytes]]).
   * The sorted view adds [[SlotBytes]] per entry, and [[IndexEntryBytes]] per entry of the
   * tail's index.
   */
  final val EntryOverheadBytes: Long = 32L

  /** A tree node of the tail's index. */
  final val IndexEntryBytes: Long = 40L

  /** A reference in the sorted view's arrays. */
  final val SlotBytes: Long = 4L

  /** The tail is merged into the base once it has this many entries (or an eighth of it). */
  private final val MinTailMerge = 1024

  /** `entries` in key order. */
  private def sortedArray(entries: java.util.Collection[Entry]): Array[Entry] =
    sortedArray(entries.toArray(new Array[Entry](0)))

  /**
   * The family bucket of a key, numbered in key order (so buckets in ascending order are disjoint
   * key ranges in ascending order): its first two bytes (unsigned); -1 for a key shorter than two
   * bytes, which is only ever scanned through the global view.
   */
  private[kstate] def bucketOf(key: Array[Byte]): Int =
    if (key.length < 2) -1 else ((key(0) & 0xff) << 8) | (key(1) & 0xff)

  /** The bucket every key of [from, until) is in, or -1 when the range may span several. */
  private[kstate] def singleFamily(from: Array[Byte], until: Option[Array[Byte]]): Int = {
    val b = bucketOf(from)
    if (b < 0) -1
    else until match {
      case Some(u) if bucketOf(u) == b => b
      case Some(u) if Bytes.prefixEnd(Arrays.copyOf(from, 2)).exists(Arrays.equals(_, u)) => b
      case None if from(0) == -1 && from(1) == -1 => b // the last family: its end is the keyspace's
      case _ => -1
    }
  }

  /**
   * A sorted view of some entries: `base` sorted when built, `tail` added since (unsorted), and
   * `tailIndex` over the tail once a scan needs it while it is too small to merge. `add`,
   * `update` and `merge` return the change of the view's heap estimate.
   */
  private final class SortedView(var base: Array[Entry]) {
    val tail = new ArrayList[Entry]()
    var tailIndex: TreeMap[Array[Byte], Entry] = _

    def heap: Long = SlotBytes * base.length

    def add(e: Entry): Long = {
      tail.add(e)
      if (tailIndex != null) { tailIndex.put(e.key, e); SlotBytes + IndexEntryBytes }
      else SlotBytes
    }

    /** Makes `base` plus `tailIndex` (null when the tail is empty) sorted for a scan. */
    def update(): Long =
      if (tail.isEmpty) 0L
      else if (tail.size >= math.max(MinTailMerge, base.length / 8)) merge()
      else if (tailIndex == null) {
        tailIndex = new TreeMap[Array[Byte], Entry](Bytes.Order)
        tail.forEach(e => tailIndex.put(e.key, e))
        IndexEntryBytes * tail.size
      } else 0L

    /** Sorts the tail and merges it into a new `base` (the two hold different keys). */
    def merge(): Long = if (tail.isEmpty) 0L
    else {
      // the tail's slots were counted as they were added; its index goes
      val before = heap + SlotBytes * tail.size + (if (tailIndex != null) IndexEntryBytes * tail.size else 0L)
      val t = sortedArray(tail)
      val out = new Array[Entry](base.length + t.length)
      var i = 0
      var j = 0
      var n = 0
      while (i < base.length || j < t.length) {
        if (j >= t.length || (i < base.length && Bytes.Order.compare(base(i).key, t(j).key) < 0)) {
          out(n) = base(i); i += 1
        } else {
          out(n) = t(j); j += 1
        }
        n += 1
      }
      base = out
      tail.clear()
      tailIndex = null
      heap - before
    }

    /** The first position in `base` whose key is >= `key`. */
    def lowerBound(key: Array[Byte]): Int = {
      var lo = 0
      var hi = base.length
      while (lo < hi) {
        val mid = (lo + hi) >>> 1
        if (Bytes.Order.compare(base(mid).key, key) < 0) lo = mid + 1 else hi = mid
      }
      lo
    }
  }

  /** `all` in key order (a new array; `all` is not changed). */
  private[kstate] def sortedArray(all: Array[Entry]): Array[Entry] = {
    // plain loops: a generic `map` over these arrays writes each slot through ScalaRunTime
    val n = all.length
    val keys = new Array[Array[Byte]](n)
    var i = 0
    while (i < n) { keys(i) = all(i).key; i += 1 }
    val order = KeySort.order(keys, n)
    val out = new Array[Entry](n)
    i = 0
    while (i < n) { out(i) = all(order(i)); i += 1 }
    out
  }

  /** Heap bytes of a byte array: 16-byte header, contents padded to 8 bytes. */
  def arrayBytes(a: Array[Byte]): Long =
    if (a == null || (a eq Deleted)) 0L else 16L + ((a.length + 7L) & ~7L)

  def heapBytesOf(key: Array[Byte], value: Array[Byte]): Long =
    EntryOverheadBytes + arrayBytes(key) + arrayBytes(value)

  /**
   * `key` with its hash ([[HashedKey.hashOf]]); `value`: new bytes, [[Deleted]], or null (read
   * only). `existed`: before this version.
   */
  final class Entry(val key: Array[Byte], val hash: Int, var value: Array[Byte], var existed: Byte) {
    def this(k: HashedKey, value: Array[Byte], existed: Byte) = this(k.bytes, k.hashCode, value, existed)
    def isDelete: Boolean = value eq Deleted
  }

}
