package org.apache.spark.sql.kstate.execution

import io.kstate.KStateErrors
import io.kstate.tables.VersionedTable

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, GenericInternalRow, JoinedRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.processor.MetricSet
import org.apache.spark.sql.kstate.processor.table.{InMemoryTableState, TableMetrics, TableSource, TableSourceProcessor, TableState}
import org.apache.spark.sql.kstate.state.{KStateStore, StoreTableState, StoreVersionedTableState}
import org.apache.spark.sql.types.StructType

/**
 * Physical table source ([[org.apache.spark.sql.kstate.plans.KStateTableSource]]): a
 * [[TableSource]] per state partition over the table's materialization (latest by processing
 * order in [[StoreTableState]], or versioned in [[StoreVersionedTableState]]; heap states for
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
    child: SparkPlan) extends KStateContextExec {

  override def shortName: String = "kstate_table"
  override def storeCapabilities: Set[StoreCapability] =
    Set[StoreCapability](StoreCapability.ColumnFamilies) ++ versioned.map(_ => StoreCapability.VersionedStore)
  override def partitionBy: Seq[Expression] = Seq(key)

  override protected def stateKeySchema: StructType = new StructType().add("key", key.dataType)
  override protected def stateValueSchema: StructType = org.apache.spark.sql.kstate.plans.TableChangeColumns.valueType(values)
  override protected def metricSet: MetricSet = TableMetrics

  override protected def newTask(store: Option[StateStore]): KStateTask = {
    val (state, finishState): (TableState[UnsafeRow, UnsafeRow], () => Long) = (store, versioned) match {
      case (Some(k: KStateStore), Some(v)) =>
        val s = new StoreVersionedTableState(k, "table", v.historyRetentionMs, v.graceMs, values.length)
        (s, () => s.cleanup().toLong)
      case (Some(other), Some(_)) =>
        throw KStateErrors.providerLacksCapabilities(operatorName, other.getClass.getName,
          Seq(StoreCapability.VersionedStore.description))
      case (Some(s), None) =>
        val t = new StoreTableState(s, stateKeySchema, values.length)
        (t, () => { t.commitStreamTime(); 0L })
      case (None, Some(v)) => (InMemoryTableState.versioned[UnsafeRow, UnsafeRow](v.historyRetentionMs, v.graceMs), () => 0L)
      case (None, None) => (InMemoryTableState.unversioned[UnsafeRow, UnsafeRow](), () => 0L)
    }
    new TableSourceTask(state, finishState)
  }

  private final class TableSourceTask(state: TableState[UnsafeRow, UnsafeRow], finishState: () => Long)
    extends KStateTask {
    private val processor = new TableSourceProcessor(new TableSource(state))
    private val in = child.output
    private val keyProj = UnsafeProjection.create(Seq(key), in)
    private val valueProj = UnsafeProjection.create(values, in)
    private val extras = output.takeRight(2)
    private val outProj = UnsafeProjection.create(output, in ++ extras)
    private val extraRow = new GenericInternalRow(2)
    private val joined = new JoinedRow()
    private val nValues = values.length
    private var cleanedUp = 0L

    override def advanceStreamTime(t: Long): Unit = ()

    override def process(row: InternalRow, ts: Long, emit: InternalRow => Unit): Unit = {
      val tsNull = ts == KStateStatefulExec.NullTime
      val k = keyProj(row)
      val keyNull = k.isNullAt(0)
      val valid = !keyNull && !tsNull
      var tomb = true
      val v = if (valid) valueProj(row) else null
      var i = 0
      while (valid && tomb && i < nValues) { tomb = v.isNullAt(i); i += 1 }
      val change = processor.process(if (valid) k.copy() else null, keyNull,
        if (valid && !tomb) v.copy() else null, ts, tsNull)
      if (change != null) {
        extraRow.update(0, change.oldValue)
        extraRow.setBoolean(1, change.isLatest)
        emit(outProj(joined(row, extraRow)))
      }
    }

    override def finish(): Unit = cleanedUp = finishState()

    override def metrics: KStateTask.Metrics = KStateTask.Metrics.of(processor.counters,
      totalStateRows = -1L,
      updatedStateRows = processor.counters(TableMetrics.VersionsStored),
      removedStateRows = cleanedUp)
  }

  override protected def withNewChildInternal(newChild: SparkPlan): KStateTableSourceExec = copy(child = newChild)
}
