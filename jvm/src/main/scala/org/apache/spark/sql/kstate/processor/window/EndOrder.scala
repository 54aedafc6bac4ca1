package org.apache.spark.sql.kstate.processor.window

/**
 * Puts a micro-batch's closing spans (a key and its [[StoredSession]]) in end order, stably:
 * spans with equal ends keep the order they were closed in, as `sortBy(_._2.end)` would.
 *
 * A micro-batch can close a span per input record, and a sort that compares through the tuples
 * reads two objects per comparison, scattered on the heap. So when the ends of the batch span
 * less than 2^(63 - b) ms, with b the bits of the largest index (about 2^39 ms, 17 years, for a
 * million spans), each span becomes one long, (end - smallest end) << b | index, and a sort of
 * those longs (which are distinct) is the stable sort by end; otherwise the tuples are sorted
 * with a comparator (a stable merge sort). Both give the same order.
 */
private[window] object EndOrder {

  def sortInPlace[K, A](spans: Array[(K, StoredSession[A])]): Unit = {
    val n = spans.length
    if (n < 2) return
    var lo = Long.MaxValue
    var hi = Long.MinValue
    var i = 0
    while (i < n) {
      val e = spans(i)._2.end
      if (e < lo) lo = e
      if (e > hi) hi = e
      i += 1
    }
    val indexBits = 64 - java.lang.Long.numberOfLeadingZeros((n - 1).toLong)
    val span = hi - lo // negative when it overflows
    if (span >= 0 && (span >>> (63 - indexBits)) == 0) {
      val packed = new Array[Long](n)
      i = 0
      while (i < n) { packed(i) = ((spans(i)._2.end - lo) << indexBits) | i; i += 1 }
      java.util.Arrays.sort(packed)
      val before = spans.clone()
      val mask = (1L << indexBits) - 1
      i = 0
      while (i < n) { spans(i) = before((packed(i) & mask).toInt); i += 1 }
    } else {
      java.util.Arrays.sort(
        spans,
        new java.util.Comparator[(K, StoredSession[A])] {
          override def compare(x: (K, StoredSession[A]), y: (K, StoredSession[A])): Int =
            java.lang.Long.compare(x._2.end, y._2.end)
        }
      )
    }
  }
}
