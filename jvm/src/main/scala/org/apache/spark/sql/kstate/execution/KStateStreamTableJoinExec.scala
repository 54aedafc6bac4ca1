package org.apache.spark.sql.kstate.execution

import scala.collection.mutable.ArrayBuffer

import io.kstate.ProcessingOrder
import org.apache.spark.sql.kstate.errors.KStateErrors
import io.kstate.tables.VersionedTable

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Attribute,
  BoundReference,
  Expression,
  GenericInternalRow,
  JoinedRow,
  UnsafeProjection,
  UnsafeRow
}
import org.apache.spark.sql.catalyst.optimizer.NormalizeFloatingNumbers
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.plans.{JoinedTableSource, KStateStreamTableJoin}
import org.apache.spark.sql.kstate.processor.MetricSet
import org.apache.spark.sql.kstate.processor.join.{
  InMemoryStreamTableJoinBuffer,
  StreamTableJoinBuffer,
  StreamTableJoinEmitter,
  StreamTableJoinMetrics,
  StreamTableJoinProcessor,
  StreamTableJoinSpec
}
import org.apache.spark.sql.kstate.processor.table.TableState
import org.apache.spark.sql.kstate.provider.KStateStore
import org.apache.spark.sql.kstate.operatorstate.{StoreStreamTableJoinBuffer, StoreTableState, StoreVersionedTableState}
import org.apache.spark.sql.types.{StructField, StructType}

/**
 * Physical stream–table join ([[KStateStreamTableJoin]]): a [[StreamTableJoinProcessor]] per
 * state partition, fed by a [[TwoInputTask]] (left = stream rows, right = the table's change
 * rows, both in one processing order). The table is materialized in the join's own store: latest
 * by processing order in [[StoreTableState]], or versioned in [[StoreVersionedTableState]]; the
 * grace buffer in [[StoreStreamTableJoinBuffer]]. The versioned store's grace period:
 *  - the table's own, when the join does its source's work ([[JoinedTableSource]]: the right
 *    side is the table's raw updates, and the store's put drops those older than the table's
 *    stream time − grace, as the source would have);
 *  - otherwise the history retention: the table's source (or its filter / mapping) already
 *    dropped the updates older than the table's grace, and the join must store every update it
 *    was passed, whatever order the two operators process them in.
 * Batch DataFrames use heap states; the whole input is one micro-batch, so a record still within
 * the grace period at its end is not emitted.
 *
 * Rows: the stream struct is the stream's columns then the join key; the table struct the table's
 * value columns then its key and timestamp. A result is the stream's columns followed by the table's values
 * (null: no match), projected to `output`.
 */
case class KStateStreamTableJoinExec(
    leftJoin: Boolean,
    graceMs: Option[Long],
    versioned: Option[VersionedTable],
    key: Expression,
    timestamp: Expression,
    output: Seq[Attribute],
    tableSource: Option[JoinedTableSource],
    context: KStateOperatorContext,
    child: SparkPlan
) extends KStateContextExec {

  override def shortName: String = "kstate_stream_table_join"
  override def storeCapabilities: Set[StoreCapability] =
    Set[StoreCapability](StoreCapability.ColumnFamilies) ++ versioned.map(_ => StoreCapability.VersionedStore) ++
      graceMs.map(_ => StoreCapability.TimeOrderedBuffer)
  override def partitionBy: Seq[Expression] = Seq(key)
  // buffered records are emitted later, when stream time passes them (a watermark may move it)
  override protected def emitsOnTime: Boolean = graceMs.isDefined
  override protected def delaysOutput: Boolean = graceMs.isDefined

  /**
   * `auto` on a batch DataFrame is event-time order, not the listed order other operators use: the
   * listed order of two inputs is every stream row (the left input's partitions) before every table
   * row, so no stream row would find a table value.
   */
  override private[kstate] def resolvedOrder(streaming: Boolean): InputOrder.Resolved =
    if (!streaming && processingOrder == ProcessingOrder.Auto) InputOrder.EventTime else super.resolvedOrder(streaming)

  /** The stream's columns (its struct: them, then the key). */
  private def streamFields: Int = KStateStreamTableJoin.streamStructFields(child.output) - 1

  /** The table's value columns (its struct: them, then the key and the timestamp). */
  private def valueCount: Int = KStateStreamTableJoin.tableStructFields(child.output) - 2

  override protected def stateKeySchema: StructType = new StructType().add("key", key.dataType)
  override protected def stateValueSchema: StructType =
    StructType(output.takeRight(valueCount).map(a => StructField(a.name, a.dataType, nullable = true)))
  override protected def metricSet: MetricSet = StreamTableJoinMetrics

  override protected def newTask(store: Option[StateStore]): KStateTask = {
    val spec = StreamTableJoinSpec(leftJoin, versioned.map(_.historyRetentionMs), graceMs)
    // the store's grace: see the class comment
    val stored = if (tableSource.isDefined) versioned else versioned.map(v => v.withGraceMillis(v.historyRetentionMs))
    val chosen = TableStateChoice.choose(
      operatorName,
      store,
      stored,
      KStateStreamTableJoinExec.VersionedStoreName,
      stateKeySchema,
      valueCount
    )
    val buffer: Option[StreamTableJoinBuffer[UnsafeRow, UnsafeRow]] = graceMs.map { _ =>
      store match {
        case Some(k: KStateStore) => new StoreStreamTableJoinBuffer(k, "join", 1, streamFields)
        case Some(other) => throw KStateErrors.providerLacksCapabilities(
            operatorName,
            other.getClass.getName,
            Seq(StoreCapability.TimeOrderedBuffer.description)
          )
        case None => new InMemoryStreamTableJoinBuffer[UnsafeRow, UnsafeRow]()(KStateStreamTableJoinExec.ByBytes)
      }
    }
    new JoinTask(new StreamTableJoinProcessor(spec, chosen.state, buffer), chosen.state, chosen.finish, buffer)
  }

  private final class JoinTask(
      processor: StreamTableJoinProcessor[UnsafeRow, UnsafeRow, UnsafeRow],
      table: TableState[UnsafeRow, UnsafeRow],
      finishTable: () => Long,
      buffer: Option[StreamTableJoinBuffer[UnsafeRow, UnsafeRow]]
  ) extends TwoInputTask(child.output) {
    private val nStream = streamFields
    private val nValues = valueCount
    // keys as the state keeps them: floating point values normalised, as the partitioning does
    private def keyProjection(ordinal: Int): UnsafeProjection = UnsafeProjection.create(
      Seq(NormalizeFloatingNumbers.normalize(BoundReference(ordinal, key.dataType, nullable = true)))
    )
    private val streamKey = keyProjection(nStream)
    private val tableUpdates = new TableUpdateReader(
      BoundReference(nValues, key.dataType, nullable = true),
      (0 until nValues).map(i => BoundReference(i, output(nStream + i).dataType, nullable = true))
    )
    private val streamRow = UnsafeProjection.create(
      (0 until nStream).map(i => BoundReference(i, output(i).dataType, output(i).nullable))
    )
    private val result = UnsafeProjection.create(output.map(_.dataType).toArray)
    private val joined = new JoinedRow()
    private val noMatch = new GenericInternalRow(nValues)
    // several results of one call (released records) must not share the projection's buffer
    private val copyResults = buffer.isDefined
    private val out = ArrayBuffer.empty[InternalRow]

    private var target: InternalRow => Unit = _
    private val emitter: StreamTableJoinEmitter[UnsafeRow, UnsafeRow] = (s: UnsafeRow, t: UnsafeRow, _: Long) => {
      val r = result(joined(s, if (t == null) noMatch else t))
      target(if (copyResults) r.copy() else r)
    }

    override def advanceStreamTime(t: Long): Unit = processor.advanceStreamTime(t)

    override protected def processLeft(row: InternalRow, ts: Long, emit: InternalRow => Unit): Unit = {
      target = emit
      val k = streamKey(row)
      val keyNull = k.isNullAt(0)
      val tsNull = ts == KStateStatefulExec.NullTime
      // buffered rows are kept: copies (the projections reuse their buffers)
      val s = if (copyResults) streamRow(row).copy() else streamRow(row)
      processor.processStream(if (keyNull) null else k.copy(), keyNull, s, ts, tsNull, emitter)
    }

    override protected def processRight(row: InternalRow, ts: Long, emit: InternalRow => Unit): Unit = {
      tableUpdates.read(row, ts)
      processor.processTable(tableUpdates.key, tableUpdates.keyIsNull, tableUpdates.value, ts, tableUpdates.tsIsNull)
    }

    override def finish(): Unit = {
      target = r => out += r
      processor.finish(emitter)
      processor.counters.add(StreamTableJoinMetrics.TableVersionsCleaned, finishTable())
      processor.counters.set(StreamTableJoinMetrics.TableVersions, table.numVersions)
    }

    override def finishOutput: Iterator[InternalRow] = out.iterator

    override def metrics: KStateTask.Metrics = KStateTask.Metrics.of(
      processor.counters,
      totalStateRows = buffer.fold(0L)(_.numRecords),
      updatedStateRows = processor.counters(StreamTableJoinMetrics.TableUpdates) +
        processor.counters(StreamTableJoinMetrics.Buffered),
      removedStateRows = processor.counters(StreamTableJoinMetrics.Released) +
        processor.counters(StreamTableJoinMetrics.TableVersionsCleaned)
    )
  }

  override protected def withNewChildInternal(newChild: SparkPlan): KStateStreamTableJoinExec = copy(child = newChild)
}

object KStateStreamTableJoinExec {

  /** The versioned store the join keeps its table's versions in (`kstate_vs_stj_table_*`; `kstate.read_table` reads it for a [[JoinedTableSource]]). */
  val VersionedStoreName = "stj_table"

  /** Heap buffer order among equal timestamps (batch DataFrames): key bytes, unsigned. */
  val ByBytes: Ordering[UnsafeRow] = new Ordering[UnsafeRow] {
    override def compare(a: UnsafeRow, b: UnsafeRow): Int = java.util.Arrays.compareUnsigned(a.getBytes, b.getBytes)
  }
}
