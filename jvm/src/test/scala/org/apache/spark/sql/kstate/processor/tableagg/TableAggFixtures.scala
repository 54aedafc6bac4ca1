package org.apache.spark.sql.kstate.processor.tableagg

import io.kstate.oracle.{Ev, TableAggCase}
import io.kstate.oracle.KafkaTableAggregateOracle.AggOut
import org.apache.spark.sql.kstate.processor.table.{InMemoryTableState, TableChange, TableState}

/** kstate's side of the table aggregations compared with Kafka and the naive model. */
object TableAggFixtures {
  type L = java.lang.Long
  type Driver = TableAggregationDriver[String, L, String, L, L]

  /** [[TableAggCase.group]] / [[TableAggCase.groupValue]] as a [[GroupSelector]]. */
  val selector: GroupSelector[String, L, String, L] = new GroupSelector[String, L, String, L] {
    override def select(key: String, value: L): GroupedValue[String, L] =
      GroupedValue(TableAggCase.group(value), TableAggCase.groupValue(value))
    override def sameGroup(a: String, b: String): Boolean = a == b
  }

  def aggregator(c: TableAggCase): TableAggregator[String, L, L] = c match {
    case TableAggCase.Count => TableAggregator.count[String, L]
    case TableAggCase.Sum => TableAggregator.sum[String]
    case TableAggCase.DeletingReduce => TableAggregator.reduce[String, L](c.reduceAdd, c.reduceSubtract)
    case TableAggCase.Chain => TableAggregator.aggregate[String, L, L](
      () => TableAggCase.chainInit, TableAggCase.chainAdd, TableAggCase.chainSubtract)
  }

  def sourceState(historyRetentionMs: Option[Long]): TableState[String, L] =
    historyRetentionMs.fold(InMemoryTableState.unversioned[String, L]())(r => InMemoryTableState.versioned[String, L](r, r))

  def partitionOf(n: Int)(key: String): Int = Math.floorMod(key.hashCode, n)

  /** Both stages on `sourcePartitions` table partitions and `groupPartitions` group partitions. */
  def driver(c: TableAggCase, historyRetentionMs: Option[Long], sourcePartitions: Int = 1, groupPartitions: Int = 1): Driver =
    new TableAggregationDriver[String, L, String, L, L](
      IndexedSeq.fill(sourcePartitions)(sourceState(historyRetentionMs)), partitionOf(sourcePartitions),
      IndexedSeq.fill(groupPartitions)(InMemoryTableState.unversioned[String, L]()), partitionOf(groupPartitions),
      selector, aggregator(c))

  /** An input record as a table update (Ev: key null = null key, value None = tombstone). */
  def update(e: Ev, timestampIsNull: Boolean = false): TableUpdate[String, L] =
    TableUpdate(e.key, e.value.map(java.lang.Long.valueOf).orNull, e.ts, keyIsNull = e.key == null, timestampIsNull)

  def out(c: TableChange[String, L]): AggOut = AggOut(c.key, Option(c.newValue).map(_.longValue), c.timestamp)
}
