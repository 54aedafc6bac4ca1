package org.apache.spark.sql.kstate.processor.tableagg

import io.kstate.oracle.{Ev, TableAggCase}
import io.kstate.oracle.KafkaTableAggregateOracle.AggOut
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Add,
  AttributeReference,
  EqualTo,
  If,
  Literal,
  Multiply,
  Remainder,
  Subtract,
  UnsafeProjection,
  UnsafeRow
}
import org.apache.spark.sql.kstate.execution.ExpressionTableAggregator
import org.apache.spark.sql.kstate.plans.TableAggregateSpec
import org.apache.spark.sql.kstate.processor.table.{InMemoryTableState, TableChange, TableState}
import org.apache.spark.sql.types.LongType

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
        () => TableAggCase.chainInit,
        TableAggCase.chainAdd,
        TableAggCase.chainSubtract
      )
  }

  def sourceState(historyRetentionMs: Option[Long]): TableState[String, L] =
    historyRetentionMs.fold(InMemoryTableState.unversioned[String, L]())(r =>
      InMemoryTableState.versioned[String, L](r, r)
    )

  def partitionOf(n: Int)(key: String): Int = Math.floorMod(key.hashCode, n)

  /** Both stages on `sourcePartitions` table partitions and `groupPartitions` group partitions. */
  def driver(
      c: TableAggCase,
      historyRetentionMs: Option[Long],
      sourcePartitions: Int = 1,
      groupPartitions: Int = 1,
      aggregatorOf: TableAggCase => TableAggregator[String, L, L] = aggregator
  ): Driver =
    new TableAggregationDriver[String, L, String, L, L](
      IndexedSeq.fill(sourcePartitions)(sourceState(historyRetentionMs)),
      partitionOf(sourcePartitions),
      IndexedSeq.fill(groupPartitions)(InMemoryTableState.unversioned[String, L]()),
      partitionOf(groupPartitions),
      selector,
      aggregatorOf(c)
    )

  /**
   * [[TableAggCase.Chain]] as `KGroupedTable.aggregate` runs it: Catalyst expressions over the
   * placeholders (`aggregate(lit(1L), (a, v) => a * 3 + v + 2, (a, v) => when((a - v) % 4 === 0,
   * null).otherwise(a - v))`; every group name has length 2) in a
   * [[TableAggregateSpec.aggregate]] evaluated by the exec's [[ExpressionTableAggregator]].
   */
  def expressionChain: TableAggregator[String, L, L] = {
    val gv = AttributeReference("gv", LongType)()
    val a = AttributeReference(TableAggregateSpec.AggregatePlaceholder, LongType)()
    val v = AttributeReference(TableAggregateSpec.ValuePlaceholder, LongType)()
    val adder = Add(Add(Multiply(a, Literal(3L)), v), Literal(2L))
    val subtractor =
      If(EqualTo(Remainder(Subtract(a, v), Literal(4L)), Literal(0L)), Literal(null, LongType), Subtract(a, v))
    val spec = TableAggregateSpec.aggregate(
      Seq(gv),
      Literal(TableAggCase.chainInit.longValue),
      "chain",
      adder,
      subtractor,
      a,
      v
    )
    val rows = new ExpressionTableAggregator(spec)
    val toRow = UnsafeProjection.create(Seq(gv), Seq(gv))
    def row(l: L): UnsafeRow = if (l == null) null else toRow(InternalRow(l.longValue)).copy()
    def long(r: UnsafeRow): L = if (r == null) null else r.getLong(0)
    new TableAggregator[String, L, L] {
      override def add(g: String, agg: L, value: L): L = long(rows.add(null, row(agg), row(value)))
      override def subtract(g: String, agg: L, value: L): L = long(rows.subtract(null, row(agg), row(value)))
    }
  }

  /** An input record as a table update (Ev: key null = null key, value None = tombstone). */
  def update(e: Ev, timestampIsNull: Boolean = false): TableUpdate[String, L] =
    TableUpdate(e.key, e.value.map(java.lang.Long.valueOf).orNull, e.ts, keyIsNull = e.key == null, timestampIsNull)

  def out(c: TableChange[String, L]): AggOut = AggOut(c.key, Option(c.newValue).map(_.longValue), c.timestamp)
}
