package org.apache.spark.sql.kstate.engine

import java.util.Arrays

/**
 * The heap working copy's hash index ([[HeapState]]): from key bytes to the address of the
 * key's record in an [[EntryArena]], by open addressing with linear probing in two parallel
 * primitive arrays (hash codes and addresses). Nothing is allocated per entry, and a probe
 * compares hash codes in an int array before it reads any key.
 *
 * Rules:
 *  - Keys are hashed by the caller ([[HashedKey]]'s hash: a key hashed for the write set is not
 *    hashed again); a key always comes with the same hash.
 *  - Keys are compared in the records the addresses point to, so lookups take the arena's
 *    current page table (`pages`); the table never reads records otherwise.
 *  - Absent is [[AddressTable.Empty]].
 *  - The table doubles past [[AddressTable.MaxLoad]] and never shrinks. Removal shifts later
 *    entries of the same probe run back, so no tombstones build up.
 *  - Slots are readable by position (`slots`, `addressAt`, `hashAt`) for iteration; an empty
 *    slot holds [[AddressTable.Empty]]. Positions change when the table grows or loses entries.
 *  - Not thread-safe.
 */
private[kstate] final class AddressTable(expectedEntries: Int = 0) {
  import AddressTable._

  private var hashes: Array[Int] = _
  private var addrs: Array[Long] = _
  private var mask = 0
  private var count = 0
  allocate(capacityFor(expectedEntries))

  def size: Int = count

  /** Number of slots (a power of two). */
  def slots: Int = addrs.length
  def addressAt(slot: Int): Long = addrs(slot)
  def hashAt(slot: Int): Int = hashes(slot)

  /** Replaces the address in an occupied slot (the record moved; same key). */
  def setAddressAt(slot: Int, addr: Long): Unit = addrs(slot) = addr

  /** Copies of the slot arrays (addresses, hashes), for an iteration unaffected by later changes. */
  def copyOfSlots: (Array[Long], Array[Int]) = (addrs.clone(), hashes.clone())

  /** Heap of the two slot arrays. */
  def tableBytes: Long = tableBytesOf(addrs.length)

  /** The address of `key`'s record, or [[Empty]]. */
  def get(pages: Array[Array[Byte]], key: Array[Byte], hash: Int): Long = {
    val s = find(pages, key, hash)
    if (s >= 0) addrs(s) else Empty
  }

  /** Points `key` at `addr`; returns the address it replaced, or [[Empty]]. */
  def put(pages: Array[Array[Byte]], key: Array[Byte], hash: Int, addr: Long): Long = {
    val s = find(pages, key, hash)
    if (s >= 0) {
      val old = addrs(s)
      addrs(s) = addr
      old
    } else {
      occupy(~s, hash, addr)
      Empty
    }
  }

  /** Adds a key known to be absent (rebuilding a table): no key is compared. */
  def putNew(hash: Int, addr: Long): Unit = {
    var i = hash & mask
    while (addrs(i) != Empty) i = (i + 1) & mask
    occupy(i, hash, addr)
  }

  /** Removes `key`; returns its address, or [[Empty]] if it was absent. */
  def remove(pages: Array[Array[Byte]], key: Array[Byte], hash: Int): Long = {
    val s = find(pages, key, hash)
    if (s < 0) Empty
    else {
      val old = addrs(s)
      removeAt(s)
      old
    }
  }

  /** Removes the entry at `addr`, whose key hashes to `hash`, without comparing keys. */
  def removeAddress(hash: Int, addr: Long): Unit = {
    var i = hash & mask
    while (addrs(i) != addr) {
      if (addrs(i) == Empty) throw new IllegalStateException(s"address $addr is not in the table")
      i = (i + 1) & mask
    }
    removeAt(i)
  }

  private def removeAt(s: Int): Unit = {
    // Backward shift: move each later entry of the run whose home slot is not cyclically in
    // (hole, its slot] into the hole, so every entry stays reachable from its home slot.
    var hole = s
    var j = (s + 1) & mask
    while (addrs(j) != Empty) {
      val home = hashes(j) & mask
      if (((j - home) & mask) >= ((j - hole) & mask)) {
        hashes(hole) = hashes(j); addrs(hole) = addrs(j)
        hole = j
      }
      j = (j + 1) & mask
    }
    addrs(hole) = Empty
    count -= 1
  }

  /** Makes room for `n` entries in all without growing again. */
  def ensureCapacity(n: Int): Unit = {
    val cap = capacityFor(n)
    if (cap > addrs.length) rehash(cap)
  }

  /** The slot holding `key`, or `~slot` of the free slot where it would go. */
  private def find(pages: Array[Array[Byte]], key: Array[Byte], hash: Int): Int = {
    var i = hash & mask
    while (true) {
      val a = addrs(i)
      if (a == Empty) return ~i
      if (hashes(i) == hash && EntryArena.keyEquals(pages, a, key)) return i
      i = (i + 1) & mask
    }
    throw new IllegalStateException("unreachable")
  }

  private def occupy(slot: Int, hash: Int, addr: Long): Unit = {
    hashes(slot) = hash; addrs(slot) = addr
    count += 1
    if (count > maxCount(addrs.length)) rehash(addrs.length * 2)
  }

  private def allocate(capacity: Int): Unit = {
    hashes = new Array[Int](capacity)
    addrs = new Array[Long](capacity)
    Arrays.fill(addrs, Empty)
    mask = capacity - 1
  }

  private def rehash(capacity: Int): Unit = {
    require(capacity <= MaxCapacity, s"state too large for the heap working copy: $count entries")
    val (oh, oa) = (hashes, addrs)
    allocate(capacity)
    var i = 0
    while (i < oa.length) {
      if (oa(i) != Empty) {
        var j = oh(i) & mask
        while (addrs(j) != Empty) j = (j + 1) & mask
        hashes(j) = oh(i); addrs(j) = oa(i)
      }
      i += 1
    }
  }
}

private[kstate] object AddressTable {

  /**
   * A table of the `n` keys whose hashes are `hashes(0 until n)` and record addresses
   * `addrs(0 until n)`, all distinct keys (no key is compared), sized for them. Inserted grouped
   * by the region of the table their home slot lies in, so that the probes of a group stay
   * within a few hundred KB: one at a time, each insert into a table of millions of slots would
   * miss the CPU caches. Any insertion order gives the same lookups (linear probing finds a key
   * from its home slot whatever was inserted before it).
   */
  def build(hashes: Array[Int], addrs: Array[Long], n: Int): AddressTable = {
    val t = new AddressTable(n)
    val slotBits = Integer.numberOfTrailingZeros(t.slots)
    if (n < BuildGroups || slotBits <= BuildGroupBits) {
      var i = 0
      while (i < n) { t.putNew(hashes(i), addrs(i)); i += 1 }
    } else {
      // a counting sort of the entries by the top BuildGroupBits bits of their home slot
      val mask = t.slots - 1
      val shift = slotBits - BuildGroupBits
      val starts = new Array[Int](BuildGroups + 1)
      var i = 0
      while (i < n) { starts(((hashes(i) & mask) >>> shift) + 1) += 1; i += 1 }
      var g = 0
      while (g < BuildGroups) { starts(g + 1) += starts(g); g += 1 }
      val order = new Array[Int](n)
      i = 0
      while (i < n) {
        val group = (hashes(i) & mask) >>> shift
        order(starts(group)) = i
        starts(group) += 1
        i += 1
      }
      i = 0
      while (i < n) { val e = order(i); t.putNew(hashes(e), addrs(e)); i += 1 }
    }
    t
  }

  /** [[build]]'s regions: 2^10 of them, each 1/1024 of the table. */
  private final val BuildGroupBits = 10
  private final val BuildGroups = 1 << BuildGroupBits

  /** No address (an empty slot, an absent key). Records never start at page -1. */
  final val Empty: Long = -1L
  final val MinCapacity = 16
  final val MaxCapacity: Int = 1 << 30

  /** Entries per slot before the table doubles. */
  final val MaxLoad = 0.6

  private def maxCount(capacity: Int): Int = (capacity * MaxLoad).toInt

  /** The smallest power-of-two capacity that holds `n` entries within the load factor. */
  def capacityFor(n: Int): Int = {
    var cap = MinCapacity
    while (maxCount(cap) < n && cap < MaxCapacity) cap *= 2
    cap
  }

  /** Heap of the slot arrays of a table of `capacity` slots (ints and longs, two headers). */
  def tableBytesOf(capacity: Int): Long = 32L + 12L * capacity
}
