package org.apache.spark.sql.kstate.processor.tableagg

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.kstate.processor.table.{TableChange, TableSource, TableState}

/**
 * Both stages of a table aggregation in one process, micro-batch by micro-batch, as Spark runs
 * them: stage 1 (the table's [[TableSource]] + [[TableRegroupProcessor]]) in the table's
 * partitions, stage 2 ([[TableAggregateProcessor]]) in the groups' partitions, connected by a
 * shuffle by group. For tests, the batch path, and as the specification of the order the execs
 * keep.
 *
 * Per micro-batch ([[runBatch]]):
 *  1. each table update goes, in input order, to its stage-1 partition (`keyPartition`); a null
 *     key or a null timestamp is dropped there and counted (`nullKeysDropped`,
 *     `nullTimestampsDropped`: Kafka's table source drops null keys, kstate drops null
 *     timestamps likewise since a table version needs a time); an update the versioned table
 *     does not store (older than stream time − grace) is dropped (`recordsPastGraceDropped`);
 *  2. stage 1's group changes of this micro-batch all reach stage 2 in this micro-batch;
 *  3. ORDER: each group partition (`groupPartition`) processes the group changes sent to it
 *     in Kafka task order over the stage-1 partitions: each stage-1 partition's changes (to
 *     this group partition) in the order it sent them, merged by smallest head timestamp, ties
 *     by lower stage-1 partition; equivalently sorted by (running maximum of the timestamps of
 *     that partition's changes to this group partition up to and including the change,
 *     stage-1 partition, sequence). This is what the execs do: stage 2's input positions are
 *     recorded map-side (stage-1 partition, row index) and stage 2 always orders a micro-batch
 *     in task order (`execution.InputOrder.KafkaTask`), because Spark's shuffle reads a
 *     reducer's blocks in the order they are fetched, which is not deterministic; with the
 *     positions a replayed micro-batch gives the same results. Event-time order is never used
 *     there: it would put a key's subtract after a later add.
 *  4. The result is stage 2's emissions, group partition 0 first, each in processing order.
 *
 * Relation to Kafka: a repartition topic partition interleaves the writes of the upstream tasks
 * in an arbitrary order (roughly by time, as the upstream tasks advance together) and keeps
 * only each task's own order, which rule 3 keeps too, so
 * kstate's order is one of Kafka's possible orders. With one stage-1 partition (Kafka: one input
 * partition) it is Kafka's order exactly, and every emitted record is identical (the
 * differential suite). With several, each group's last aggregate of a micro-batch is the same
 * as for any other order when the aggregator is commutative (count, sum); a non-commutative
 * reduce depends on the order in Kafka as it does here, and the intermediate results of a
 * micro-batch differ by interleaving in both.
 *
 * `sourceStates` (one per stage-1 partition, all versioned or all not) and `aggregateStates`
 * (one per stage-2 partition) persist across micro-batches; the processors are created per
 * micro-batch, as the execs do. Counters add up over partitions and micro-batches. Not
 * thread-safe.
 */
final class TableAggregationDriver[K, V, G, GV, A](
    sourceStates: IndexedSeq[TableState[K, V]],
    keyPartition: K => Int,
    aggregateStates: IndexedSeq[TableState[G, A]],
    groupPartition: G => Int,
    selector: GroupSelector[K, V, G, GV],
    aggregator: TableAggregator[G, GV, A]
) {
  require(sourceStates.nonEmpty && aggregateStates.nonEmpty, "need at least one partition per stage")
  require(
    sourceStates.forall(_.versioned == sourceStates.head.versioned),
    "all partitions of a table are versioned or none"
  )

  val regroupCounters = TableRegroupMetrics.newCounters()
  val aggregateCounters = TableAggregateMetrics.newCounters()
  private val versioned = sourceStates.head.versioned
  private val sources = sourceStates.map(new TableSource(_))

  /** Runs one micro-batch of table updates (in input order) through both stages. */
  def runBatch(updates: Seq[TableUpdate[K, V]]): Seq[TableChange[G, A]] = {
    val sent = IndexedSeq.fill(sources.length)(ArrayBuffer.empty[GroupChange[G, GV]])
    val regroup = IndexedSeq.fill(sources.length)(new TableRegroupProcessor(selector, versioned, regroupCounters))
    updates.foreach { u =>
      if (u.keyIsNull) regroupCounters.add(TableRegroupMetrics.NullKeys)
      else if (u.timestampIsNull) regroupCounters.add(TableRegroupMetrics.NullTimestamps)
      else {
        val p = partition(keyPartition(u.key), sources.length)
        val change = sources(p).update(u.key, u.value, u.timestamp)
        if (change == null) regroupCounters.add(TableRegroupMetrics.NotPut)
        else regroup(p).process(change, sent(p) += _)
      }
    }
    val out = ArrayBuffer.empty[TableChange[G, A]]
    aggregateStates.indices.foreach { q =>
      val agg = new TableAggregateProcessor(aggregator, aggregateStates(q), aggregateCounters)
      val toQ = sent.map(_.filter(c => partition(groupPartition(c.group), aggregateStates.length) == q).toSeq)
      TableAggregationDriver.taskOrder(toQ).foreach(agg.process(_, out += _))
    }
    out.toSeq
  }

  private def partition(p: Int, n: Int): Int = {
    require(p >= 0 && p < n, s"partition $p outside 0 until $n")
    p
  }
}

object TableAggregationDriver {

  /**
   * Rule 3: the changes each stage-1 partition (index) sent to one group partition, in Kafka task
   * order: sorted by (running maximum timestamp within its partition, partition, sequence).
   */
  def taskOrder[C <: GroupChange[_, _]](byPartition: IndexedSeq[Seq[C]]): Seq[C] =
    byPartition.zipWithIndex.flatMap { case (changes, p) =>
      val runningMax = changes.map(_.timestamp).scanLeft(Long.MinValue)(math.max).tail
      changes.zip(runningMax).zipWithIndex.map { case ((c, max), i) => ((max, p, i), c) }
    }.sortBy(_._1).map(_._2)
}
