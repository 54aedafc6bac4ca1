package org.apache.spark.sql.kstate.engine

/**
 * The model side of the heap state suites: keys as lists of unsigned byte values (0..255), in
 * RocksDB's unsigned byte order, and the conversions to and from store keys.
 */
private[kstate] object UnsignedKeys {
  def less(a: List[Int], b: List[Int]): Boolean = (a, b) match {
    case (Nil, Nil) => false
    case (Nil, _) => true
    case (_, Nil) => false
    case (x :: xs, y :: ys) => if (x != y) x < y else less(xs, ys)
  }

  def bytes(k: List[Int]): Array[Byte] = k.map(_.toByte).toArray
  def ints(b: Array[Byte]): List[Int] = b.toList.map(_ & 0xff)

  def inRange(k: List[Int], from: List[Int], until: Option[List[Int]]): Boolean =
    !less(k, from) && until.forall(u => less(k, u))

  /** A version's changes (None: delete) as write-set entries in key order. */
  def entries(changes: Map[List[Int], Option[Array[Byte]]]): Array[WriteSet.Entry] =
    changes.toList.sortWith((a, b) => less(a._1, b._1)).map { case (k, v) =>
      new WriteSet.Entry(new HashedKey(bytes(k)), v.map(_.clone()).getOrElse(WriteSet.Deleted), WriteSet.Unknown)
    }.toArray
}
