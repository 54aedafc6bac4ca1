package org.apache.spark.sql.kstate.execution

import io.kstate.tables.VersionedTable

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Attribute,
  BindReferences,
  Expression,
  GenericInternalRow,
  JoinedRow,
  UnsafeProjection,
  UnsafeRow
}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.processor.MetricSet
import org.apache.spark.sql.kstate.processor.table.{TableMetrics, TableSource, TableSourceProcessor, TableState}
import org.apache.spark.sql.types.StructType

/**
 * Physical table source ([[org.apache.spark.sql.kstate.plans.KStateTableSource]]): a
 * [[TableSource]] per state partition over the table's materialization ([[TableStateChoice]]:
 * latest by processing order, or versioned in the families `kstate_vs_table_*`; heap states for
 * batch DataFrames). Each stored update is emitted as its input row followed by the key's old
 * value (a struct of the value columns, null when absent) and whether the update is the key's
 * latest. Null keys and null timestamps are dropped and counted; so are the updates a versioned
 * table does not store (older than its stream time − grace).
 */
case class KStateTableSourceExec(
    key: Expression,
    timestamp: Expression,
    values: Seq[Attribute],
    versioned: Option[VersionedTable],
    output: Seq[Attribute],
    context: KStateOperatorContext,
    child: SparkPlan
) extends KStateContextExec {

  override def shortName: String = "kstate_table"
  override def storeCapabilities: Set[StoreCapability] =
    Set[StoreCapability](StoreCapability.ColumnFamilies) ++ versioned.map(_ => StoreCapability.VersionedStore)
  override def partitionBy: Seq[Expression] = Seq(key)

  override protected def stateKeySchema: StructType = new StructType().add("key", key.dataType)
  override protected def stateValueSchema: StructType =
    org.apache.spark.sql.kstate.plans.TableChangeColumns.valueType(values)
  override protected def metricSet: MetricSet = TableMetrics

  override protected def newTask(store: Option[StateStore]): KStateTask = {
    val chosen = TableStateChoice.choose(
      operatorName,
      store,
      versioned,
      KStateTableSourceExec.VersionedStoreName,
      stateKeySchema,
      values.length
    )
    new TableSourceTask(chosen.state, chosen.finish)
  }

  private final class TableSourceTask(state: TableState[UnsafeRow, UnsafeRow], finishState: () => Long)
      extends KStateTask {
    private val processor = new TableSourceProcessor(new TableSource(state))
    private val in = child.output
    private val updates =
      new TableUpdateReader(
        BindReferences.bindReference(key, in),
        values.map(v => BindReferences.bindReference(v: Expression, in))
      )
    private val extras = output.takeRight(2)
    private val outProj = UnsafeProjection.create(output, in ++ extras)
    private val extraRow = new GenericInternalRow(2)
    private val joined = new JoinedRow()
    private var cleanedUp = 0L

    override def advanceStreamTime(t: Long): Unit = ()

    override def process(row: InternalRow, ts: Long, emit: InternalRow => Unit): Unit = {
      updates.read(row, ts)
      val change = processor.process(updates.key, updates.keyIsNull, updates.value, ts, updates.tsIsNull)
      if (change != null) {
        extraRow.update(0, change.oldValue)
        extraRow.setBoolean(1, change.isLatest)
        emit(outProj(joined(row, extraRow)))
      }
    }

    override def finish(): Unit = {
      cleanedUp = finishState()
      processor.counters.set(TableMetrics.Versions, state.numVersions)
    }

    override def metrics: KStateTask.Metrics = KStateTask.Metrics.of(
      processor.counters,
      totalStateRows = -1L,
      updatedStateRows = processor.counters(TableMetrics.VersionsStored),
      removedStateRows = cleanedUp
    )
  }

  override protected def withNewChildInternal(newChild: SparkPlan): KStateTableSourceExec = copy(child = newChild)
}

object KStateTableSourceExec {

  /** The name of the versioned store a versioned table keeps its versions in (`kstate_vs_table_*`; `kstate.read_table` reads it). */
  val VersionedStoreName = "table"
}
