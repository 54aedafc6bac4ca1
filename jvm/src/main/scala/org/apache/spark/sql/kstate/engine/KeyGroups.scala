package org.apache.spark.sql.kstate.engine

import java.util.{ArrayList, Arrays, HashMap}

import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.hash.Murmur3_x86_32

/**
 * How a column family's keys fall into groups that scans stay within: the versioned store's
 * history keys are `klen:4 key validFrom:8`, and every history scan reads one key's versions
 * (`klen:4 key`). `length(key, offset)` is the length of the group part of `key` from `offset`
 * (where the family's own key starts, after its prefix); for a key too short to hold it, the rest
 * of the key.
 */
private[kstate] trait KeyGroups {
  def length(key: Array[Byte], offset: Int): Int
}

private[kstate] object KeyGroups {

  /** Groups led by a 4-byte big-endian length and that many bytes (`klen:4 key`). */
  val LengthPrefixed: KeyGroups = (key: Array[Byte], offset: Int) =>
    if (key.length - offset < 4) key.length - offset
    else {
      val n = ((key(offset) & 0xff) << 24) | ((key(offset + 1) & 0xff) << 16) |
        ((key(offset + 2) & 0xff) << 8) | (key(offset + 3) & 0xff)
      math.min(key.length - offset, 4 + math.max(0, n))
    }
}

/**
 * The entries of one family of a [[WriteSet]] by key group ([[KeyGroups]]): a hash map from a
 * group (a key's first bytes, the family prefix included) to its entries in insertion order. A
 * scan within one group reads that group's few entries and sorts them, instead of keeping a
 * sorted view of the whole family up to date on every insert. `add` returns the change of the
 * heap estimate. Not thread-safe.
 */
private[kstate] final class GroupIndex(groups: KeyGroups, prefixLength: Int) {
  import GroupIndex._

  private val byGroup = new HashMap[Group, ArrayList[WriteSet.Entry]]()

  def add(e: WriteSet.Entry): Long = {
    val g = new Group(e.key, prefixLength + groups.length(e.key, prefixLength))
    val list = byGroup.get(g)
    if (list == null) {
      val l = new ArrayList[WriteSet.Entry](2)
      l.add(e)
      byGroup.put(g, l)
      GroupBytes + WriteSet.SlotBytes
    } else {
      list.add(e)
      WriteSet.SlotBytes
    }
  }

  /** The entries whose key's group is `group` (a whole group, family prefix included), or null. */
  def entriesOf(group: Array[Byte]): ArrayList[WriteSet.Entry] = byGroup.get(new Group(group, group.length))
}

private[kstate] object GroupIndex {

  /** Heap estimate of a group: its map node, key wrapper and list (with a 2-slot array). */
  final val GroupBytes: Long = 32L + 24L + 24L + 24L

  /** The first `length` bytes of `bytes`, compared and hashed by content; no copy. */
  final class Group(val bytes: Array[Byte], val length: Int) {
    // Murmur3, as for whole keys: a polynomial hash of keys that differ only in a few low bytes
    // (a long key's UnsafeRow) collides often enough to turn the map's buckets into trees
    override val hashCode: Int =
      Murmur3_x86_32.hashUnsafeBytes2(bytes, Platform.BYTE_ARRAY_OFFSET, length, 42)
    override def equals(o: Any): Boolean = o match {
      case g: Group => g.length == length && Arrays.equals(bytes, 0, length, g.bytes, 0, length)
      case _ => false
    }
  }
}
