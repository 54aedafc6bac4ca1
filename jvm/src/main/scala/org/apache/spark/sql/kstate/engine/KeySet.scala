package org.apache.spark.sql.kstate.engine

import java.util.Arrays

/**
 * A set of keys with their hashes ([[HashedKey]]'s), filled once and then read: open addressing
 * with linear probing in two parallel arrays (hashes and keys), sized for at most `capacity`
 * keys, so nothing is allocated per key and the table never grows. It holds the keys a store
 * version had changed when an unordered scan opened ([[WriteSet.changesWithPrefix]]), for the
 * scan's committed side to skip: one per scan, built from the write set's entries and hashes.
 *
 * Keys added are kept, not copied; the caller must not change them. Adding more than `capacity`
 * distinct keys is an error. Not thread-safe.
 */
private[kstate] final class KeySet(capacity: Int) {
  require(capacity >= 0, s"capacity must be >= 0, got $capacity")
  private val slots = AddressTable.capacityFor(capacity)
  private val mask = slots - 1
  private val hashes = new Array[Int](slots)
  private val keys = new Array[Array[Byte]](slots)
  private var count = 0

  def size: Int = count

  /** Adds `key`, whose hash is `hash`, unless it is in the set. */
  def add(key: Array[Byte], hash: Int): Unit = {
    val s = find(key, hash)
    if (s < 0) {
      if (count == capacity) throw new IllegalStateException(s"a key set for $capacity keys is full")
      keys(~s) = key
      hashes(~s) = hash
      count += 1
    }
  }

  def contains(key: HashedKey): Boolean = find(key.bytes, key.hashCode) >= 0

  /** The slot holding `key`, or `~slot` of the empty slot where it would go. */
  private def find(key: Array[Byte], hash: Int): Int = {
    var i = hash & mask
    while (keys(i) != null) {
      if (hashes(i) == hash && Arrays.equals(keys(i), key)) return i
      i = (i + 1) & mask
    }
    ~i
  }
}
