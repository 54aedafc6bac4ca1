package org.apache.spark.sql.kstate.execution

import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.{DataType, IntegerType, LongType}

/** [[TaskOrder]] over rows (partition int, offset long, ts long, payload int); no Spark session. */
class TaskOrderSuite extends AnyFunSuite {

  /** (partition, offset, ts; None = null, payload) */
  private type In = (Int, Long, Option[Long], Int)

  private val types: Array[DataType] = Array(IntegerType, LongType, LongType, IntegerType)

  /**
   * Lazily projects `in` through ONE UnsafeProjection, so every row handed to TaskOrder is the
   * same reused buffer: TaskOrder must copy.
   */
  private def rows(in: Seq[In]): Iterator[InternalRow] = {
    val proj = UnsafeProjection.create(types)
    in.iterator.map { case (p, o, t, v) =>
      proj(InternalRow(p, o, t.map(Long.box).orNull, v)): InternalRow
    }
  }

  private def tsOf(r: InternalRow): Long = if (r.isNullAt(2)) Long.MinValue else r.getLong(2)

  private def order(in: Seq[In], merge: Boolean): Seq[(Int, Long, Int)] = {
    val cursor = TaskOrder(rows(in), 0, 1, tsOf, mergeByTimestamp = merge)
    val out = Seq.newBuilder[(Int, Long, Int)]
    while (cursor.hasNext) {
      cursor.advance()
      val r = cursor.row
      assert(cursor.ts === tsOf(r), "the cursor's event time is the row's")
      out += ((r.getInt(0), r.getLong(1), r.getInt(3)))
    }
    out.result()
  }

  private def pos(out: Seq[(Int, Long, Int)]): Seq[(Int, Long)] = out.map(x => (x._1, x._2))

  test("empty input yields nothing") {
    assert(order(Nil, merge = true).isEmpty)
    assert(order(Nil, merge = false).isEmpty)
  }

  test("single partition keeps offset order even if rows arrive shuffled (timestamps ignored)") {
    // timestamps decrease with offset: a timestamp sort would reverse them
    val in = (0 until 50).map(i => (3, i.toLong * 2, Some(1000L - i): Option[Long], i))
    for (seed <- 1 to 5; merge <- Seq(true, false)) {
      val out = order(new Random(seed).shuffle(in), merge)
      assert(out === in.map(x => (x._1, x._2, x._4)), s"seed $seed merge $merge")
    }
  }

  test("rows are copied: payloads survive a reused input buffer") {
    val in = Seq((0, 1L, Some(5L): Option[Long], 11), (1, 0L, Some(1L), 22), (0, 0L, Some(9L), 33))
    val out = order(in, merge = true)
    assert(out.map(_._3).sorted === Seq(11, 22, 33))
  }

  test("mergeByTimestamp: smallest head timestamp first, ties to the lower partition index") {
    // p0: o0@5, o1@1, o2@9   p1: o0@3, o1@7   p2: o0@5, o1@5
    // heads (5,3,5) -> p1o0; (5,7,5) -> p0o0 (tie with p2: lower index); (1,7,5) -> p0o1;
    // (9,7,5) -> p2o0; (9,7,5) -> p2o1; (9,7) -> p1o1; -> p0o2.
    val in: Seq[In] = Seq(
      (0, 0L, Some(5L), 0), (0, 1L, Some(1L), 1), (0, 2L, Some(9L), 2),
      (1, 0L, Some(3L), 10), (1, 1L, Some(7L), 11),
      (2, 0L, Some(5L), 20), (2, 1L, Some(5L), 21))
    val expected = Seq((1, 0L), (0, 0L), (0, 1L), (2, 0L), (2, 1L), (1, 1L), (0, 2L))
    assert(pos(order(in, merge = true)) === expected)
    // independent of arrival order (neither of partitions nor of offsets within one)
    for (seed <- 1 to 10) {
      assert(pos(order(new Random(seed).shuffle(in), merge = true)) === expected, s"seed $seed")
    }
    assert(pos(order(in.reverse, merge = true)) === expected)
  }

  test("mergeByTimestamp: a partition's own records never overtake each other (offset order first)") {
    // p0's o1@1 is earlier than p1's o0@2 but sits behind p0's o0@10
    val in: Seq[In] = Seq((0, 0L, Some(10L), 0), (0, 1L, Some(1L), 1), (1, 0L, Some(2L), 2))
    assert(pos(order(in, merge = true)) === Seq((1, 0L), (0, 0L), (0, 1L)))
  }

  test("mergeByTimestamp: null timestamps (Long.MinValue) count as smallest at a head") {
    // p0: o0@null, o1@2   p1: o0@1, o1@null
    // heads (null,1) -> p0o0; (2,1) -> p1o0; (2,null) -> p1o1; -> p0o1
    val in: Seq[In] = Seq((1, 1L, None, 11), (0, 1L, Some(2L), 1), (1, 0L, Some(1L), 10), (0, 0L, None, 0))
    assert(pos(order(in, merge = true)) === Seq((0, 0L), (1, 0L), (1, 1L), (0, 1L)))
  }

  test("mergeByTimestamp: null timestamps at both heads tie to the lower partition index") {
    val in: Seq[In] = Seq((2, 0L, None, 0), (1, 0L, None, 1), (1, 1L, Some(0L), 2), (2, 1L, Some(0L), 3))
    assert(pos(order(in, merge = true)) === Seq((1, 0L), (2, 0L), (1, 1L), (2, 1L)))
  }

  test("mergeByTimestamp = false: partition index, then offset (timestamps ignored)") {
    val in: Seq[In] = Seq(
      (2, 5L, Some(1L), 0), (0, 7L, Some(100L), 1), (1, 3L, None, 2), (0, 2L, Some(200L), 3),
      (2, 1L, Some(0L), 4), (1, 9L, Some(-5L), 5), (0, 4L, None, 6))
    val expected = Seq((0, 2L), (0, 4L), (0, 7L), (1, 3L), (1, 9L), (2, 1L), (2, 5L))
    assert(pos(order(in, merge = false)) === expected)
    for (seed <- 1 to 10) {
      assert(pos(order(new Random(seed).shuffle(in), merge = false)) === expected, s"seed $seed")
    }
  }

  test("mergeByTimestamp: random inputs obey the merge rule step by step") {
    val rnd = new Random(42)
    for (_ <- 1 to 200) {
      val n = rnd.nextInt(30)
      val in: Seq[In] = (0 until n).map { i =>
        val t = if (rnd.nextInt(6) == 0) None else Some(rnd.nextInt(10).toLong)
        (rnd.nextInt(4), i.toLong, t, i)
      }
      // reference: repeatedly take the head with the smallest (ts, partition)
      val queues = scala.collection.mutable.Map(in.groupBy(_._1).toSeq.map { case (p, rs) =>
        p -> rs.sortBy(_._2).toList }: _*)
      val expected = scala.collection.mutable.ArrayBuffer.empty[(Int, Long)]
      while (queues.nonEmpty) {
        val (p, q) = queues.minBy { case (p, q) => (q.head._3.getOrElse(Long.MinValue), p) }
        expected += ((p, q.head._2))
        if (q.tail.isEmpty) queues.remove(p) else queues(p) = q.tail
      }
      assert(pos(order(rnd.shuffle(in), merge = true)) === expected.toSeq)
    }
  }
}
