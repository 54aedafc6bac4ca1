package org.apache.spark.sql.kstate.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Attribute,
  Expression,
  GenericInternalRow,
  UnsafeProjection,
  UnsafeRow
}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.processor.MetricSet
import org.apache.spark.sql.kstate.processor.join.{
  ForeignKeyJoinMetrics,
  ForeignKeyResponse,
  ForeignKeyResponseProcessor
}
import org.apache.spark.sql.kstate.processor.table.{InMemoryTableState, TableChange, TableSource, TableState}
import org.apache.spark.sql.kstate.operatorstate.StoreTableState
import org.apache.spark.sql.types.StructType

/**
 * Physical stage 2 of a foreign-key join ([[org.apache.spark.sql.kstate.plans.KStateFkJoin]]):
 * per left-key partition and micro-batch, a [[ForeignKeyResponseProcessor]] over stage 1's
 * responses, with the result table in a [[StoreTableState]] (`kstate_fk_result`; heap for batch
 * DataFrames) for each result's old value. Output rows: left key, left values, right values (null
 * on a tombstone), result timestamp in the left table's timestamp type, old result, latest = true.
 */
case class KStateFkJoinExec(
    leftJoin: Boolean,
    key: Expression,
    leftValue: Attribute,
    rightValue: Attribute,
    version: Attribute,
    timestamp: Expression,
    output: Seq[Attribute],
    context: KStateOperatorContext,
    child: SparkPlan
) extends KStateContextExec {

  override def shortName: String = "kstate_fk_join"
  override def storeCapabilities: Set[StoreCapability] = Set(StoreCapability.ColumnFamilies)
  override def partitionBy: Seq[Expression] = Seq(key)

  private def leftType = leftValue.dataType.asInstanceOf[StructType]
  private def rightType = rightValue.dataType.asInstanceOf[StructType]
  override protected def stateKeySchema: StructType = new StructType().add("key", key.dataType)
  override protected def stateValueSchema: StructType = StructType(leftType.fields ++ rightType.fields)
  override protected def metricSet: MetricSet = ForeignKeyJoinMetrics

  override protected def newTask(store: Option[StateStore]): KStateTask = store match {
    case Some(s) =>
      val state = new StoreTableState(s, stateKeySchema, stateValueSchema.length, KStateFkJoinExec.ResultFamily)
      new ResultsTask(state, () => state.commitStreamTime())
    case None => new ResultsTask(InMemoryTableState.unversioned[UnsafeRow, UnsafeRow](), () => ())
  }

  private final class ResultsTask(state: TableState[UnsafeRow, UnsafeRow], commit: () => Unit) extends KStateTask {
    private val in = child.output
    private val (nl, nr) = (leftType.length, rightType.length)
    private val leftTypes = leftType.map(_.dataType)
    private val rightTypes = rightType.map(_.dataType)
    private val joinedRow = new GenericInternalRow(nl + nr)
    private val joinedProj = UnsafeProjection.create(stateValueSchema)
    private val joiner: (UnsafeRow, UnsafeRow) => UnsafeRow = (l, r) => {
      var i = 0
      while (i < nl) { joinedRow.update(i, if (l == null) null else l.get(i, leftTypes(i))); i += 1 }
      i = 0
      while (i < nr) { joinedRow.update(nl + i, if (r == null) null else r.get(i, rightTypes(i))); i += 1 }
      joinedProj(joinedRow).copy()
    }
    private val processor = new ForeignKeyResponseProcessor[UnsafeRow, UnsafeRow, UnsafeRow, UnsafeRow](
      leftJoin,
      joiner,
      new TableSource(state)
    )
    private val counters = processor.counters
    private val keyProj = UnsafeProjection.create(Seq(key), in)
    private val ordinal = (a: Attribute) => in.indexWhere(_.exprId == a.exprId)
    private val (leftOrdinal, rightOrdinal, versionOrdinal) =
      (ordinal(leftValue), ordinal(rightValue), ordinal(version))
    private val leftProj = UnsafeProjection.create(Seq(leftValue), in)
    private val rightProj = UnsafeProjection.create(Seq(rightValue), in)
    private val keyType = key.dataType
    private val toTimestamp = KStateStatefulExec.millisTo(output(1 + nl + nr).dataType)
    private val outRow = new GenericInternalRow(output.length)
    private val outProj = UnsafeProjection.create(output.map(_.dataType).toArray)
    private var emitTo: InternalRow => Unit = _
    private val emitResult: TableChange[UnsafeRow, UnsafeRow] => Unit = c => {
      outRow.update(0, c.key.get(0, keyType))
      var i = 0
      while (i < nl + nr) {
        outRow.update(1 + i, if (c.newValue == null) null else c.newValue.get(i, stateValueSchema(i).dataType))
        i += 1
      }
      outRow.update(1 + nl + nr, toTimestamp(c.timestamp))
      outRow.update(2 + nl + nr, c.oldValue)
      outRow.setBoolean(3 + nl + nr, true)
      emitTo(outProj(outRow))
    }

    private def struct(proj: UnsafeProjection, ordinal: Int, n: Int, row: InternalRow): UnsafeRow =
      if (row.isNullAt(ordinal)) null else proj(row).getStruct(0, n).copy()

    override def advanceStreamTime(t: Long): Unit = ()

    override def process(row: InternalRow, ts: Long, emit: InternalRow => Unit): Unit = {
      emitTo = emit
      processor.processResponse(
        ForeignKeyResponse(
          keyProj(row).copy(),
          struct(leftProj, leftOrdinal, nl, row),
          struct(rightProj, rightOrdinal, nr, row),
          row.getLong(versionOrdinal),
          ts
        ),
        emitResult
      )
    }

    override def finish(): Unit = commit()
    override def metrics: KStateTask.Metrics = KStateTask.Metrics.of(
      counters,
      totalStateRows = -1L,
      updatedStateRows = counters(ForeignKeyJoinMetrics.JoinResults),
      removedStateRows = 0L
    )
  }

  override protected def withNewChildInternal(newChild: SparkPlan): KStateFkJoinExec = copy(child = newChild)
}

object KStateFkJoinExec {
  val ResultFamily = "kstate_fk_result"
}
