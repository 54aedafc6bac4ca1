package org.apache.spark.sql.kstate.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Alias,
  Attribute,
  BoundReference,
  CreateNamedStruct,
  Expression,
  GenericInternalRow,
  GetStructField,
  If,
  IsNull,
  Literal,
  UnsafeProjection,
  UnsafeRow
}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.plans.TableAggregateSpec
import org.apache.spark.sql.kstate.processor.MetricSet
import org.apache.spark.sql.kstate.processor.table.{InMemoryTableState, TableChange, TableState}
import org.apache.spark.sql.kstate.processor.tableagg.{GroupChange, TableAggregateMetrics, TableAggregateProcessor}
import org.apache.spark.sql.kstate.operatorstate.StoreTableState
import org.apache.spark.sql.types.{BooleanType, StructType}

/**
 * Physical stage 2 of a table aggregation ([[org.apache.spark.sql.kstate.plans.KStateTableAggregate]]):
 * per group partition, a [[TableAggregateProcessor]] over the group changes of stage 1
 * ([[KStateTableRegroupExec]]), with an [[ExpressionTableAggregator]] for the spec and each
 * group's aggregate in a [[StoreTableState]] (heap for batch DataFrames). Every result is
 * emitted (one row per group change, as Kafka without caching): the group key, the aggregate's
 * result columns (null on a tombstone; `agg`'s are evaluated on its state columns), the result timestamp in the table's timestamp type, the
 * previous aggregate as a struct, and `latest` (true).
 */
case class KStateTableAggregateExec(
    spec: TableAggregateSpec,
    group: Expression,
    add: Attribute,
    subtract: Attribute,
    timestamp: Expression,
    output: Seq[Attribute],
    context: KStateOperatorContext,
    child: SparkPlan
) extends KStateContextExec {

  override def shortName: String = "kstate_table_aggregate"
  override def storeCapabilities: Set[StoreCapability] = Set(StoreCapability.ColumnFamilies)
  override def partitionBy: Seq[Expression] = Seq(group)

  override protected def stateKeySchema: StructType = new StructType().add("group", group.dataType)
  override protected def stateValueSchema: StructType = spec.aggregateType
  override protected def metricSet: MetricSet = TableAggregateMetrics

  override protected def newTask(store: Option[StateStore]): KStateTask = store match {
    case Some(s) =>
      val state = new StoreTableState(s, stateKeySchema, spec.aggregate.length)
      new AggregateTask(state, () => state.commitStreamTime())
    case None => new AggregateTask(InMemoryTableState.unversioned[UnsafeRow, UnsafeRow](), () => ())
  }

  private final class AggregateTask(state: TableState[UnsafeRow, UnsafeRow], finishState: () => Unit)
      extends KStateTask {
    val counters = TableAggregateMetrics.newCounters()
    private val processor = new TableAggregateProcessor(new ExpressionTableAggregator(spec), state, counters)
    private val in = child.output
    private val groupProj = UnsafeProjection.create(Seq(group), in)
    private val addOrdinal = in.indexWhere(_.exprId == add.exprId)
    private val subtractOrdinal = in.indexWhere(_.exprId == subtract.exprId)
    private val nValues = spec.value.length
    private val groupType = group.dataType
    private val timestampType = output(spec.output.length + 1).dataType
    private val toTimestamp = KStateStatefulExec.millisTo(timestampType)
    // (group, aggregate struct, timestamp, old aggregate struct, latest) -> the output columns
    private val result = new GenericInternalRow(5)
    private val outProj = {
      val aggType = spec.aggregateType
      val newAgg = BoundReference(1, aggType, nullable = true)
      val oldAgg = BoundReference(3, aggType, nullable = true)
      UnsafeProjection.create(
        Seq(BoundReference(0, groupType, nullable = false)) ++
          KStateTableAggregateExec.resultColumns(spec, newAgg) ++
          Seq(
            BoundReference(2, timestampType, nullable = false),
            KStateTableAggregateExec.resultStruct(spec, oldAgg),
            BoundReference(4, BooleanType, nullable = false)
          )
      )
    }
    private var emit: InternalRow => Unit = _
    private val emitChange: TableChange[UnsafeRow, UnsafeRow] => Unit = c => {
      result.update(0, c.key.get(0, groupType))
      result.update(1, c.newValue)
      result.update(2, toTimestamp(c.timestamp))
      result.update(3, c.oldValue)
      result.setBoolean(4, c.isLatest)
      emit(outProj(result))
    }

    override def advanceStreamTime(t: Long): Unit = ()

    override def process(row: InternalRow, ts: Long, emit: InternalRow => Unit): Unit = {
      this.emit = emit
      val g = groupProj(row).copy()
      val added =
        if (row.isNullAt(addOrdinal)) null else row.getStruct(addOrdinal, nValues).asInstanceOf[UnsafeRow].copy()
      val subtracted =
        if (row.isNullAt(subtractOrdinal)) null
        else row.getStruct(subtractOrdinal, nValues).asInstanceOf[UnsafeRow].copy()
      processor.process(GroupChange(g, added, subtracted, ts), emitChange)
    }

    override def finish(): Unit = finishState()

    override def metrics: KStateTask.Metrics = KStateTask.Metrics.of(
      counters,
      totalStateRows = -1L,
      updatedStateRows = counters(TableAggregateMetrics.Updates),
      removedStateRows = counters(TableAggregateMetrics.Deleted)
    )
  }

  override protected def withNewChildInternal(newChild: SparkPlan): KStateTableAggregateExec = copy(child = newChild)
}

object KStateTableAggregateExec {

  /**
   * The result's value columns ([[TableAggregateSpec.output]]) of the stored aggregate `agg` (a
   * struct of the spec's aggregate columns): each null when `agg` is (a deleted group).
   */
  def resultColumns(spec: TableAggregateSpec, agg: Expression): Seq[Expression] = {
    val fields = spec.aggregate.indices.map(i => GetStructField(agg, i, Some(spec.aggregate(i).name)))
    if (spec.result.isEmpty) fields
    else {
      val byId = spec.aggregate.map(_.exprId).zip(fields).toMap
      spec.result.map { r =>
        val e = r match { case Alias(child, _) => child; case other => other }
        val bound = e.transform { case a: Attribute if byId.contains(a.exprId) => byId(a.exprId) }
        If(IsNull(agg), Literal(null, r.dataType), bound)
      }
    }
  }

  /** [[resultColumns]] as one struct of the output columns, null when `agg` is. */
  def resultStruct(spec: TableAggregateSpec, agg: Expression): Expression =
    if (spec.result.isEmpty) agg
    else If(
      IsNull(agg),
      Literal(null, spec.outputType),
      CreateNamedStruct(spec.output.zip(resultColumns(spec, agg)).flatMap { case (o, e) => Seq(Literal(o.name), e) })
    )
}
