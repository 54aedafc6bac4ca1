package org.apache.spark.sql.kstate.processor.tableagg

import scala.collection.mutable

import io.kstate.oracle.{Ev, TableAggCase}
import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

/**
 * [[TableAggregationDriver]] (both stages) against a naive record-by-record model of Kafka's
 * table aggregation written independently here: the source table as a map key -> (latest value
 * or tombstone, its timestamp) with the versioned store's grace and out-of-order test done by
 * hand, the regrouping inline, and the aggregate per group with Kafka's `KTableAggregate` /
 * `KTableReduce` code paths transcribed separately (their timestamp rules included). Random keys,
 * values, tombstones, out-of-order and late records, null keys and timestamps, random
 * micro-batches; versioned (grace = retention) and unversioned; 1 or 3 table partitions and 1 or
 * 3 group partitions. Every emitted record (group, new and old aggregate, timestamp) and the
 * out-of-order / past-grace counts must match.
 */
class TableAggregatePropertySuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  import TableAggregatePropertySuite._

  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 300)

  private val aggCase: Gen[TableAggCase] = Gen.oneOf(TableAggCase.all)
  private val nullTs: Gen[Set[Int]] = Gen.listOf(Gen.choose(0, 40)).map(_.toSet)

  /** The driver's output for `batches`; record i of the whole input has a null timestamp if in `nulls`. */
  private def driverRun(d: TableAggFixtures.Driver, batches: Seq[Seq[Ev]], nulls: Set[Int]): Seq[Seq[Res]] = {
    var i = -1
    batches.map(b =>
      d.runBatch(b.map { e => i += 1; TableAggFixtures.update(e, nulls(i)) })
        .map(c => Res(c.key, Option(c.newValue).map(_.longValue), Option(c.oldValue).map(_.longValue), c.timestamp))
    )
  }

  private def withoutNullTs(batches: Seq[Seq[Ev]], nulls: Set[Int]): Seq[Seq[Ev]] = {
    var i = -1
    batches.map(_.filter { _ => i += 1; !nulls(i) })
  }

  test("1 table partition, 1 group partition: every record as the naive model, in order") {
    forAll(aggCase, TableAggInputs.retention, TableAggInputs.batchesWithNegativeTimes(24), nullTs) {
      (c, r, batches, nulls) =>
        val d = TableAggFixtures.driver(c, r)
        val model = new NaiveTableAggregation(c, r)
        val expected = withoutNullTs(batches, nulls).map(_.flatMap(model.process))
        assert(driverRun(d, batches, nulls) === expected, s"$c $r $batches nulls $nulls")
        assert(d.regroupCounters(TableRegroupMetrics.OutOfOrderIgnored) === model.outOfOrder)
        assert(d.regroupCounters(TableRegroupMetrics.NotPut) === model.pastGrace)
        assert(d.regroupCounters(TableRegroupMetrics.NullTimestamps) === nulls.count(_ < batches.flatten.length) -
          batches.flatten.zipWithIndex.count { case (e, i) => e.key == null && nulls(i) })
    }
  }

  test(
    "3 table partitions, 3 group partitions: the model on the documented order (Kafka task order over table partitions)"
  ) {
    forAll(aggCase, TableAggInputs.retention, TableAggInputs.batchesWithNegativeTimes(24)) { (c, r, batches) =>
      val d = TableAggFixtures.driver(c, r, sourcePartitions = 3, groupPartitions = 3)
      val model = new NaiveTableAggregation(c, r, partitions = 3)
      assert(driverRun(d, batches, Set.empty) === batches.map(model.batchOnPartitions(_, 3)), s"$c $r $batches")
    }
  }

  test("3 partitions per stage, count and sum: each group's last aggregate per micro-batch is the input-order one") {
    forAll(
      Gen.oneOf(TableAggCase.Count, TableAggCase.Sum),
      TableAggInputs.retention,
      TableAggInputs.batchesWithNegativeTimes(24)
    ) { (c, r, batches) =>
      val d = TableAggFixtures.driver(c, r, sourcePartitions = 3, groupPartitions = 3)
      // input order across partitions; a versioned table's stream time is per partition (per task)
      val model = new NaiveTableAggregation(c, r, partitions = 3)
      def last(rs: Seq[Res]): Map[String, Option[Long]] = rs.groupBy(_.group).map { case (g, os) => g -> os.last.value }
      val got = driverRun(d, batches, Set.empty).map(last)
      val expected = batches.map(b => last(b.flatMap(model.process)))
      assert(got === expected, s"$c $r $batches")
    }
  }
}

object TableAggregatePropertySuite {
  final case class Res(group: String, value: Option[Long], old: Option[Long], ts: Long)

  /** A group change: add / subtract a value to / from a group, at the table change's time. */
  final case class Sent(group: String, add: Option[Long], subtract: Option[Long], ts: Long)

  /**
   * Kafka's table → groupBy → aggregation, one record at a time. `partitions` > 1: versioned
   * stream time is per table partition (one store per Kafka task).
   */
  final class NaiveTableAggregation(c: TableAggCase, retention: Option[Long], partitions: Int = 1) {
    private val table = mutable.Map.empty[String, (Option[Long], Long)] // key -> (value or tombstone, ts)
    private val streamTime = mutable.Map.empty[Int, Long] // table partition -> largest stored ts
    private val groups = mutable.Map.empty[String, (Long, Long)] // group -> (aggregate, ts)
    var outOfOrder = 0L
    var pastGrace = 0L

    def process(e: Ev): Seq[Res] = regroup(e).map(s => aggregate(s))

    /**
     * One micro-batch on `n` table partitions and `n` group partitions: each table partition's
     * records in input order (partition 0 first); each group partition (0 first) aggregates the
     * changes sent to it merged in Kafka task order: by the running maximum timestamp of the
     * changes one table partition sent it, then table partition, then the order sent.
     */
    def batchOnPartitions(batch: Seq[Ev], n: Int): Seq[Res] = {
      val part = TableAggFixtures.partitionOf(n) _
      val sentBy = (0 until n).map(p => batch.filter(e => e.key != null && part(e.key) == p).flatMap(regroup))
      (0 until n).flatMap { q =>
        val tagged = sentBy.zipWithIndex.flatMap { case (sent, p) =>
          var max = Long.MinValue
          sent.filter(s => part(s.group) == q).zipWithIndex.map { case (s, i) =>
            max = math.max(max, s.ts); ((max, p, i), s)
          }
        }
        tagged.sortBy(_._1).map(t => aggregate(t._2))
      }
    }

    /** Kafka's source table and regrouping: the group changes `e` sends. */
    def regroup(e: Ev): Seq[Sent] = {
      if (e.key == null) return Nil
      val part = TableAggFixtures.partitionOf(partitions)(e.key)
      val previous = table.get(e.key)
      val old = previous.flatMap(_._1)
      retention match {
        case None => table(e.key) = (e.value, e.ts)
        case Some(r) =>
          if (streamTime.get(part).exists(st => BigInt(e.ts) < BigInt(st) - r)) { pastGrace += 1; return Nil }
          streamTime(part) = streamTime.get(part).fold(e.ts)(math.max(_, e.ts))
          if (previous.exists(_._2 > e.ts)) { outOfOrder += 1; return Nil } // history only
          table(e.key) = (e.value, e.ts)
      }
      def pair(v: Long): Option[(String, Long)] =
        for { g <- Option(TableAggCase.group(v)); gv <- Option(TableAggCase.groupValue(v)) } yield (g, gv.longValue)
      val (oldPair, newPair) = (old.flatMap(pair), e.value.flatMap(pair))
      val sent: Seq[(String, Option[Long], Option[Long])] = (oldPair, newPair) match {
        case (Some((go, vo)), Some((gn, vn))) if go == gn => Seq((go, Some(vn), Some(vo)))
        case _ => oldPair.map { case (g, v) => (g, None, Some(v)) }.toSeq ++ newPair.map { case (g, v) =>
            (g, Some(v), None)
          }
      }
      sent.map { case (g, nv, ov) => Sent(g, nv, ov, e.ts) }
    }

    def aggregate(s: Sent): Res = aggregate(s.group, s.add, s.subtract, s.ts)

    private def aggregate(g: String, newV: Option[Long], oldV: Option[Long], recTs: Long): Res = {
      val prev = groups.get(g)
      val oldAgg = prev.map(_._1)
      val (agg, ts) = c match {
        case TableAggCase.Count | TableAggCase.Chain => kafkaAggregate(g, prev, newV, oldV, recTs)
        case TableAggCase.Sum | TableAggCase.DeletingReduce => kafkaReduce(prev, newV, oldV, recTs)
      }
      agg match {
        case Some(a) => groups(g) = (a, ts)
        case None => groups.remove(g)
      }
      Res(g, agg, oldAgg, ts)
    }

    private def init: Long = if (c == TableAggCase.Count) 0L else TableAggCase.chainInit
    private def adder(g: String, v: Long, a: Long): Option[Long] =
      if (c == TableAggCase.Count) Some(a + 1) else Option(TableAggCase.chainAdd(g, v, a)).map(_.longValue)
    private def subtractor(g: String, v: Long, a: Long): Option[Long] =
      if (c == TableAggCase.Count) Some(a - 1) else Option(TableAggCase.chainSubtract(g, v, a)).map(_.longValue)

    /** KTableAggregate.process, transcribed. */
    private def kafkaAggregate(
        g: String,
        prev: Option[(Long, Long)],
        newV: Option[Long],
        oldV: Option[Long],
        recTs: Long
    ): (Option[Long], Long) = {
      var ts = recTs
      val intermediate = (oldV, prev) match {
        case (Some(o), Some((a, aTs))) => ts = math.max(recTs, aTs); subtractor(g, o, a)
        case _ => prev.map(_._1)
      }
      newV match {
        case Some(n) =>
          val out = adder(g, n, intermediate.getOrElse(init))
          prev.foreach { case (_, aTs) => ts = math.max(recTs, aTs) }
          (out, ts)
        case None => (intermediate, ts)
      }
    }

    /** KTableReduce.process, transcribed. */
    private def kafkaReduce(
        prev: Option[(Long, Long)],
        newV: Option[Long],
        oldV: Option[Long],
        recTs: Long
    ): (Option[Long], Long) = {
      var ts = recTs
      val intermediate = (oldV, prev) match {
        case (Some(o), Some((a, aTs))) => ts = math.max(recTs, aTs); Option(c.reduceSubtract(a, o)).map(_.longValue)
        case _ => prev.map(_._1)
      }
      newV match {
        case Some(n) => intermediate match {
            case None => (Some(n), ts)
            case Some(a) => ts = math.max(recTs, prev.get._2); (Option(c.reduceAdd(a, n)).map(_.longValue), ts)
          }
        case None => (intermediate, ts)
      }
    }
  }
}
