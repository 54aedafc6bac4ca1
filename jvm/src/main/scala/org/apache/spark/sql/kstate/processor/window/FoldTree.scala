package org.apache.spark.sql.kstate.processor.window

/**
 * Aggregates of records at positions 0 until n, some of them active, folded over a range of
 * positions in O(log n) merges: a segment tree of [[MergingAggregator.merge]] results, each node
 * holding the merged aggregate, the largest timestamp and the count of the active records below it.
 *
 * For order-insensitive aggregators only ([[MergingAggregator.orderInsensitive]]): a range's fold
 * merges its records' aggregates in the tree's grouping, not one by one in position order.
 *
 * Life cycle: built once with every record's aggregate and timestamp and whether it starts active;
 * `activate` turns a record on (once); `fold` reads. Not thread-safe; one per key and batch.
 */
final class FoldTree[A](
    aggs: scala.collection.IndexedSeq[A],
    timestamps: scala.collection.IndexedSeq[Long],
    activeAtStart: Int => Boolean,
    aggregator: MergingAggregator[_, A]
) {
  require(aggs.length == timestamps.length, "one timestamp per aggregate")
  private val n = aggs.length
  // node i has children 2i and 2i + 1; leaves at n + position; null: no active record below
  private val agg = new Array[Any](2 * n)
  private val maxTs = Array.fill(2 * n)(Long.MinValue)
  private val count = new Array[Int](2 * n)
  private val on = Array.tabulate(n)(activeAtStart)

  (0 until n).foreach(p => if (on(p)) setLeaf(p))
  (n - 1 to 1 by -1).foreach(pull)

  private def setLeaf(p: Int): Unit = {
    agg(n + p) = aggs(p)
    maxTs(n + p) = timestamps(p)
    count(n + p) = 1
  }

  private def combine(a: Any, b: Any): Any =
    if (a == null) b else if (b == null) a else aggregator.merge(a.asInstanceOf[A], b.asInstanceOf[A])

  private def pull(i: Int): Unit = {
    agg(i) = combine(agg(2 * i), agg(2 * i + 1))
    maxTs(i) = math.max(maxTs(2 * i), maxTs(2 * i + 1))
    count(i) = count(2 * i) + count(2 * i + 1)
  }

  /** Turns on the record at `p` (no effect when it is on already). */
  def activate(p: Int): Unit = if (!on(p)) {
    on(p) = true
    setLeaf(p)
    var i = (n + p) / 2
    while (i >= 1) { pull(i); i /= 2 }
  }

  /**
   * The active records at positions `from` until `until`: their merged aggregate (`null` when
   * there is none), largest timestamp (`Long.MinValue` when none) and count.
   */
  def fold(from: Int, until: Int): FoldTree.Folded[A] = {
    var parts = 0
    var ts = Long.MinValue
    var c = 0
    var l = from + n
    var r = until + n
    while (l < r) {
      if ((l & 1) == 1) { parts = take(l, parts); ts = math.max(ts, maxTs(l)); c += count(l); l += 1 }
      if ((r & 1) == 1) { r -= 1; parts = take(r, parts); ts = math.max(ts, maxTs(r)); c += count(r) }
      l /= 2
      r /= 2
    }
    val a = if (parts == 0) null.asInstanceOf[A] else aggregator.mergeAll(folded, parts)
    java.util.Arrays.fill(folded.asInstanceOf[Array[AnyRef]], 0, parts, null) // keeps no aggregate alive
    FoldTree.Folded(a, ts, c)
  }

  // A fold's nodes with an active record, merged at its end in one mergeAll (which need not copy
  // each intermediate result): at most two nodes per level of the tree.
  private val folded = new Array[Any](2 * (32 - Integer.numberOfLeadingZeros(2 * n)) + 2)

  private def take(node: Int, parts: Int): Int =
    if (agg(node) == null) parts else { folded(parts) = agg(node); parts + 1 }
}

object FoldTree {

  /** A fold's result: `agg` is `null` when `count` is 0. */
  final case class Folded[A](agg: A, maxTs: Long, count: Int)
}
