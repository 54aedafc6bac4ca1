package org.apache.spark.sql.kstate.execution

import scala.util.Random

import io.kstate.testing.KStateSparkSuite

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection
import org.apache.spark.sql.types.{DataType, IntegerType, LongType}

/**
 * [[InputOrder]] over rows (partition int, offset long, ts long, payload int), run inside a Spark
 * task (Spark's external sorter needs its memory manager and block manager).
 */
class InputOrderSuite extends KStateSparkSuite {
  import InputOrderSuite._

  /** Positions (and payloads) in the order the cursor yields, and the bytes it spilled. */
  private def ordered(in: Seq[In], order: InputOrder.Resolved, spillBytes: Long = Long.MaxValue)
      : (Seq[(Int, Long, Int)], Long) = {
    spark.sparkContext.parallelize(Seq(0), 1).mapPartitions(_ => Iterator(runOrder(in, order, spillBytes)))
      .collect().head
  }

  private def order(in: Seq[In], order: InputOrder.Resolved): Seq[(Int, Long, Int)] = ordered(in, order)._1
  private def pos(out: Seq[(Int, Long, Int)]): Seq[(Int, Long)] = out.map(x => (x._1, x._2))

  test("empty input yields nothing") {
    for (o <- Orders) assert(order(Nil, o).isEmpty)
  }

  test("single partition in task order and listed order: offset order, even if rows arrive shuffled") {
    // timestamps decrease with offset: a timestamp sort would reverse them
    val in = (0 until 50).map(i => (3, i.toLong * 2, Some(1000L - i): Option[Long], i))
    for (seed <- 1 to 5; o <- Seq(InputOrder.KafkaTask, InputOrder.Listed)) {
      val out = order(new Random(seed).shuffle(in), o)
      assert(out === in.map(x => (x._1, x._2, x._4)), s"seed $seed order $o")
    }
  }

  test("rows are copied: payloads survive a reused input buffer") {
    val in = Seq((0, 1L, Some(5L): Option[Long], 11), (1, 0L, Some(1L), 22), (0, 0L, Some(9L), 33))
    for (o <- Orders) assert(order(in, o).map(_._3).sorted === Seq(11, 22, 33))
  }

  test("task order: smallest head timestamp first, ties to the lower partition index") {
    // p0: o0@5, o1@1, o2@9   p1: o0@3, o1@7   p2: o0@5, o1@5
    // heads (5,3,5) -> p1o0; (5,7,5) -> p0o0 (tie with p2: lower index); (1,7,5) -> p0o1;
    // (9,7,5) -> p2o0; (9,7,5) -> p2o1; (9,7) -> p1o1; -> p0o2.
    val in: Seq[In] = Seq(
      (0, 0L, Some(5L), 0),
      (0, 1L, Some(1L), 1),
      (0, 2L, Some(9L), 2),
      (1, 0L, Some(3L), 10),
      (1, 1L, Some(7L), 11),
      (2, 0L, Some(5L), 20),
      (2, 1L, Some(5L), 21)
    )
    val expected = Seq((1, 0L), (0, 0L), (0, 1L), (2, 0L), (2, 1L), (1, 1L), (0, 2L))
    assert(pos(order(in, InputOrder.KafkaTask)) === expected)
    // independent of arrival order (neither of partitions nor of offsets within one)
    for (seed <- 1 to 10) {
      assert(pos(order(new Random(seed).shuffle(in), InputOrder.KafkaTask)) === expected, s"seed $seed")
    }
    assert(pos(order(in.reverse, InputOrder.KafkaTask)) === expected)
  }

  test("task order: a partition's own records never overtake each other (offset order first)") {
    // p0's o1@1 is earlier than p1's o0@2 but sits behind p0's o0@10
    val in: Seq[In] = Seq((0, 0L, Some(10L), 0), (0, 1L, Some(1L), 1), (1, 0L, Some(2L), 2))
    assert(pos(order(in, InputOrder.KafkaTask)) === Seq((1, 0L), (0, 0L), (0, 1L)))
  }

  test("task order: null timestamps (Long.MinValue) count as smallest at a head") {
    // p0: o0@null, o1@2   p1: o0@1, o1@null
    // heads (null,1) -> p0o0; (2,1) -> p1o0; (2,null) -> p1o1; -> p0o1
    val in: Seq[In] = Seq((1, 1L, None, 11), (0, 1L, Some(2L), 1), (1, 0L, Some(1L), 10), (0, 0L, None, 0))
    assert(pos(order(in, InputOrder.KafkaTask)) === Seq((0, 0L), (1, 0L), (1, 1L), (0, 1L)))
  }

  test("task order: null timestamps at both heads tie to the lower partition index") {
    val in: Seq[In] = Seq((2, 0L, None, 0), (1, 0L, None, 1), (1, 1L, Some(0L), 2), (2, 1L, Some(0L), 3))
    assert(pos(order(in, InputOrder.KafkaTask)) === Seq((1, 0L), (2, 0L), (1, 1L), (2, 1L)))
  }

  test("listed order: partition index, then offset (timestamps ignored)") {
    val in: Seq[In] = Seq(
      (2, 5L, Some(1L), 0),
      (0, 7L, Some(100L), 1),
      (1, 3L, None, 2),
      (0, 2L, Some(200L), 3),
      (2, 1L, Some(0L), 4),
      (1, 9L, Some(-5L), 5),
      (0, 4L, None, 6)
    )
    val expected = Seq((0, 2L), (0, 4L), (0, 7L), (1, 3L), (1, 9L), (2, 1L), (2, 5L))
    assert(pos(order(in, InputOrder.Listed)) === expected)
    for (seed <- 1 to 10) {
      assert(pos(order(new Random(seed).shuffle(in), InputOrder.Listed)) === expected, s"seed $seed")
    }
  }

  test("event-time order: timestamp (null first), then partition, then offset") {
    val in: Seq[In] = Seq(
      (1, 0L, Some(5L), 0),
      (0, 0L, Some(5L), 1),
      (0, 1L, Some(2L), 2),
      (2, 0L, None, 3),
      (1, 1L, Some(5L), 4),
      (0, 2L, Some(-1L), 5),
      (2, 1L, Some(9L), 6)
    )
    val expected = Seq((2, 0L), (0, 2L), (0, 1L), (0, 0L), (1, 0L), (1, 1L), (2, 1L))
    for (seed <- 1 to 10) {
      assert(pos(order(new Random(seed).shuffle(in), InputOrder.EventTime)) === expected, s"seed $seed")
    }
  }

  test("random inputs: task order is the step-by-step merge, event-time and listed orders are sorts") {
    val rnd = new Random(42)
    val cases = (1 to 150).map { _ =>
      val n = rnd.nextInt(30)
      (0 until n).map { i =>
        val t = if (rnd.nextInt(6) == 0) None else Some(rnd.nextInt(10).toLong)
        (rnd.nextInt(4), i.toLong, t, i): In
      }
    }
    // one task for all cases (a job per case would be slow)
    val inputs = cases.map(c => (c, rnd.shuffle(c), rnd.nextBoolean()))
    val results = spark.sparkContext.parallelize(Seq(0), 1).mapPartitions { _ =>
      Iterator(inputs.map { case (_, arrival, inOffsetOrder) =>
        val feed = if (inOffsetOrder) arrival.sortBy(r => (r._1, r._2)) else arrival
        Orders.map(o => o -> runOrder(feed, o, Long.MaxValue)._1.map(x => (x._1, x._2))).toMap
      })
    }.collect().head
    cases.zip(results).foreach { case (in, got) =>
      assert(got(InputOrder.KafkaTask) === greedyMerge(in))
      assert(got(InputOrder.EventTime) === in.sortBy(r => (r._3.getOrElse(Long.MinValue), r._1, r._2)).map(r =>
        (r._1, r._2)
      ))
      assert(got(InputOrder.Listed) === in.sortBy(r => (r._1, r._2)).map(r => (r._1, r._2)))
    }
  }

  test("a batch 20x the spill threshold spills to disk and yields the same order") {
    val rnd = new Random(7)
    // ~40 bytes a row: 20k rows are ~800 KB, 20x the 40 KB threshold
    val in: Seq[In] = (0 until 20000).map(i => (rnd.nextInt(3), i.toLong, Some(rnd.nextInt(5000).toLong), i))
    val arrival = in.sortBy(r => (r._1, r._2))
    for (o <- Orders) {
      val (inMemory, noSpill) = ordered(arrival, o)
      val (spilled, spillBytes) = ordered(arrival, o, spillBytes = 40L << 10)
      assert(noSpill === 0L, s"$o spilled without a threshold")
      assert(spillBytes > 0L, s"$o did not spill")
      assert(spilled === inMemory, s"$o: spilled order differs")
    }
    assert(pos(ordered(arrival, InputOrder.KafkaTask, 40L << 10)._1) === greedyMerge(in))
  }
}

object InputOrderSuite {

  /** (partition, offset, ts; None = null, payload) */
  type In = (Int, Long, Option[Long], Int)

  val Orders: Seq[InputOrder.Resolved] = Seq(InputOrder.KafkaTask, InputOrder.EventTime, InputOrder.Listed)

  private val types: Array[DataType] = Array(IntegerType, LongType, LongType, IntegerType)

  private def tsOf(r: InternalRow): Long = if (r.isNullAt(2)) Long.MinValue else r.getLong(2)

  /**
   * Runs [[InputOrder]] over `in` (in this order of arrival) inside a task. Every row handed in
   * is the same reused buffer of ONE UnsafeProjection: InputOrder must copy.
   */
  def runOrder(in: Seq[In], order: InputOrder.Resolved, spillBytes: Long): (Seq[(Int, Long, Int)], Long) = {
    val proj = UnsafeProjection.create(types)
    val rows = in.iterator.map { case (p, o, t, v) => proj(InternalRow(p, o, t.map(Long.box).orNull, v)): InternalRow }
    val cursor = InputOrder(rows, 4, 0, 1, tsOf, order, spillBytes)
    val out = Seq.newBuilder[(Int, Long, Int)]
    while (cursor.hasNext) {
      cursor.advance()
      val r = cursor.row
      require(cursor.ts == tsOf(r), "the cursor's event time is the row's")
      out += ((r.getInt(0), r.getLong(1), r.getInt(3)))
    }
    (out.result(), cursor.spilledBytes)
  }

  /** Kafka's rule, step by step: repeatedly take the head with the smallest (ts, partition). */
  def greedyMerge(in: Seq[In]): Seq[(Int, Long)] = {
    val queues = scala.collection.mutable.Map(in.groupBy(_._1).toSeq.map { case (p, rs) =>
      p -> rs.sortBy(_._2).toList
    }: _*)
    val expected = scala.collection.mutable.ArrayBuffer.empty[(Int, Long)]
    while (queues.nonEmpty) {
      val (p, q) = queues.minBy { case (p, q) => (q.head._3.getOrElse(Long.MinValue), p) }
      expected += ((p, q.head._2))
      if (q.tail.isEmpty) queues.remove(p) else queues(p) = q.tail
    }
    expected.toSeq
  }
}
