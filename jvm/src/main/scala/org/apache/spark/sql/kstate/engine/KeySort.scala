package org.apache.spark.sql.kstate.engine

import java.util.Arrays

/**
 * Sorts store keys in unsigned byte order (RocksDB's) without chasing two pointers per
 * comparison.
 *
 * Comparing byte arrays pair by pair is bound by cache misses: each comparison loads two arrays
 * from scattered heap addresses, and a sort makes about n log n of them. Here a range of keys is
 * sorted by one `long` per key, read once and sorted as primitives:
 * {{{
 *   the key's next bits after the prefix all keys of the range share | the key's position
 * }}}
 * The shared prefix (column family id, equal leading columns, UnsafeRow headers) is skipped, so
 * the bits that follow decide the order in most cases. Keys whose longs agree on everything but
 * the position (a "tie run") are sorted the same way among themselves, from the next shared
 * prefix on: most significant digit first, 64-bit digits. Small ranges, and ties whose shared
 * prefix does not grow (a key ending inside the compared bits, padded with zeros), are sorted by
 * comparing keys. The result equals a comparison sort's.
 */
private[kstate] object KeySort {

  /** Below this many keys, insertion sort by comparison. */
  private val Small = 24

  /** Positions of `keys(0 until n)` in ascending unsigned byte order of the keys. */
  def order(keys: Array[Array[Byte]], n: Int): Array[Int] = {
    val pos = Array.range(0, n)
    sortRange(keys, pos, 0, n, -1)
    pos
  }

  /**
   * Sorts `pos(from until until)` by their keys. `shared`: the length of the prefix the parent
   * range's keys shared (-1 at the top), so a tie run that shares no more falls back to
   * comparisons instead of recursing forever.
   */
  private def sortRange(keys: Array[Array[Byte]], pos: Array[Int], from: Int, until: Int, shared: Int): Unit = {
    val m = until - from
    if (m < Small) { insertionSort(keys, pos, from, until); return }
    val lcp = commonPrefix(keys, pos, from, until)
    if (lcp <= shared) { comparisonSort(keys, pos, from, until); return }
    val posBits = 32 - Integer.numberOfLeadingZeros(m - 1)
    val keyBits = 64 - posBits
    val packed = new Array[Long](m)
    var i = 0
    while (i < m) {
      // flip the sign bit so that a signed sort orders the longs as unsigned
      packed(i) = ((bitsAt(keys(pos(from + i)), lcp, keyBits) << posBits) | i) ^ Long.MinValue
      i += 1
    }
    Arrays.sort(packed)
    val posMask = (1L << posBits) - 1
    val before = Arrays.copyOfRange(pos, from, until)
    i = 0
    while (i < m) { pos(from + i) = before((packed(i) & posMask).toInt); i += 1 }
    var start = 0
    while (start < m) {
      var end = start + 1
      while (end < m && (packed(end) >>> posBits) == (packed(start) >>> posBits)) end += 1
      if (end - start > 1) sortRange(keys, pos, from + start, from + end, lcp)
      start = end
    }
  }

  /** The length of the prefix all keys of the range share. */
  private def commonPrefix(keys: Array[Array[Byte]], pos: Array[Int], from: Int, until: Int): Int = {
    val ref = keys(pos(from))
    var lcp = ref.length
    var i = from + 1
    while (i < until && lcp > 0) {
      val k = keys(pos(i))
      val len = math.min(lcp, k.length)
      val m = Arrays.mismatch(k, 0, len, ref, 0, len)
      lcp = if (m < 0) len else m
      i += 1
    }
    lcp
  }

  /** `count` bits (< 64) of `key` starting at byte `from`, zero-padded past its end. */
  private def bitsAt(key: Array[Byte], from: Int, count: Int): Long = {
    var v = 0L
    var b = 0
    while (b < 8) {
      val at = from + b
      v = (v << 8) | (if (at < key.length) (key(at) & 0xffL) else 0L)
      b += 1
    }
    v >>> (64 - count)
  }

  private def insertionSort(keys: Array[Array[Byte]], pos: Array[Int], from: Int, until: Int): Unit = {
    var i = from + 1
    while (i < until) {
      val p = pos(i)
      val k = keys(p)
      var j = i - 1
      while (j >= from && Bytes.Order.compare(keys(pos(j)), k) > 0) { pos(j + 1) = pos(j); j -= 1 }
      pos(j + 1) = p
      i += 1
    }
  }

  private def comparisonSort(keys: Array[Array[Byte]], pos: Array[Int], from: Int, until: Int): Unit = {
    val boxed = Arrays.copyOfRange(pos, from, until).map(Integer.valueOf)
    Arrays.sort(boxed, (a: Integer, b: Integer) => Bytes.Order.compare(keys(a), keys(b)))
    var i = 0
    while (i < boxed.length) { pos(from + i) = boxed(i); i += 1 }
  }
}
