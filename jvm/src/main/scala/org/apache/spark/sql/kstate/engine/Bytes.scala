package org.apache.spark.sql.kstate.engine

import java.util.{Arrays, Comparator}

/**
 * Byte-array helpers of the kstate store. Keys are compared as unsigned bytes, the order
 * RocksDB's default comparator uses, so the in-memory write set and the database agree on scan
 * order.
 */
private[kstate] object Bytes {
  val Order: Comparator[Array[Byte]] = (a: Array[Byte], b: Array[Byte]) => Arrays.compareUnsigned(a, b)

  def startsWith(a: Array[Byte], prefix: Array[Byte]): Boolean =
    a.length >= prefix.length &&
      Arrays.equals(a, 0, prefix.length, prefix, 0, prefix.length)

  /**
   * The smallest key greater than every key starting with `prefix`, or None when no such key
   * exists (the prefix is all 0xFF).
   */
  def prefixEnd(prefix: Array[Byte]): Option[Array[Byte]] = {
    var i = prefix.length - 1
    while (i >= 0 && prefix(i) == 0xff.toByte) i -= 1
    if (i < 0) None
    else {
      val end = Arrays.copyOf(prefix, i + 1)
      end(i) = (end(i) + 1).toByte
      Some(end)
    }
  }

  /** The smallest key greater than `key`: `key` followed by a zero byte. */
  def successor(key: Array[Byte]): Array[Byte] = Arrays.copyOf(key, key.length + 1)

  def concat(a: Array[Byte], b: Array[Byte]): Array[Byte] = {
    val out = Arrays.copyOf(a, a.length + b.length)
    System.arraycopy(b, 0, out, a.length, b.length)
    out
  }
}
