package org.apache.spark.sql.kstate.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Attribute,
  BoundReference,
  Expression,
  GenericInternalRow,
  UnsafeProjection,
  UnsafeRow
}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.plans.TableJoinSide
import org.apache.spark.sql.kstate.processor.MetricSet
import org.apache.spark.sql.kstate.processor.join.{TableTableJoinKind, TableTableJoinMetrics, TableTableJoinProcessor}
import org.apache.spark.sql.kstate.processor.table.{InMemoryTableState, TableChange, TableSource, TableState}
import org.apache.spark.sql.kstate.operatorstate.StoreTableState
import org.apache.spark.sql.types._

/**
 * Physical primary-key table–table join ([[org.apache.spark.sql.kstate.plans.KStateTableJoin]]):
 * a [[TableTableJoinProcessor]] per state partition over a [[org.apache.spark.sql.kstate.plans.TwoInputs]]
 * envelope of both tables' change rows. Each side's table is materialized upstream (its change
 * rows carry the old value and whether the update is the key's latest); this operator keeps each
 * side's latest value per key in its own column family of one store (`kstate_tj_left`,
 * `kstate_tj_right`, unversioned mirrors; heap states for batch DataFrames) and joins each
 * change (`joinLeft` / `joinRight`). Output rows: key, left values, right values, result
 * timestamp (in the key's timestamp type, millisecond precision), old join value, latest = true.
 */
case class KStateTableJoinExec(
    how: String,
    left: TableJoinSide,
    right: TableJoinSide,
    key: Expression,
    timestamp: Expression,
    output: Seq[Attribute],
    context: KStateOperatorContext,
    child: SparkPlan
) extends KStateContextExec {

  override def shortName: String = "kstate_table_join"
  override def storeCapabilities: Set[StoreCapability] = Set(StoreCapability.ColumnFamilies)
  override def partitionBy: Seq[Expression] = Seq(key)

  override protected def stateKeySchema: StructType = new StructType().add("key", key.dataType)
  override protected def stateValueSchema: StructType =
    StructType(left.valueTypes.fields ++ right.valueTypes.fields)
  override protected def metricSet: MetricSet = TableTableJoinMetrics

  override protected def newTask(store: Option[StateStore]): KStateTask = {
    def mirror(side: TableJoinSide, family: String): TableState[UnsafeRow, UnsafeRow] = store match {
      case Some(s) => new StoreTableState(s, stateKeySchema, side.valueOrdinals.length, family)
      case None => InMemoryTableState.unversioned[UnsafeRow, UnsafeRow]()
    }
    new TableJoinTask(mirror(left, KStateTableJoinExec.LeftFamily), mirror(right, KStateTableJoinExec.RightFamily))
  }

  private final class TableJoinTask(
      leftState: TableState[UnsafeRow, UnsafeRow],
      rightState: TableState[UnsafeRow, UnsafeRow]
  ) extends TwoInputTask(child.output) {
    private val leftTypes = left.valueTypes.map(_.dataType)
    private val rightTypes = right.valueTypes.map(_.dataType)
    private val (nl, nr) = (leftTypes.length, rightTypes.length)
    private val joiner: (UnsafeRow, UnsafeRow) => InternalRow = (l, r) => {
      val joined = new GenericInternalRow(nl + nr)
      if (l != null) (0 until nl).foreach(i => joined.update(i, l.get(i, leftTypes(i))))
      if (r != null) (0 until nr).foreach(i => joined.update(nl + i, r.get(i, rightTypes(i))))
      joined
    }
    private val processor = new TableTableJoinProcessor[UnsafeRow, UnsafeRow, UnsafeRow, InternalRow](
      KStateTableJoinExec.kindOf(how),
      new TableSource(leftState),
      new TableSource(rightState),
      joiner
    )
    private val leftReader = new TableSideReader(left)
    private val rightReader = new TableSideReader(right)
    private val keyType = key.dataType
    private val toTimestamp = KStateTableJoinExec.fromMillis(timestamp.dataType)
    private val outRow = new GenericInternalRow(output.length)
    private val outProj = UnsafeProjection.create(output.zipWithIndex.map { case (a, i) =>
      BoundReference(i, a.dataType, a.nullable)
    })
    private var emitTo: InternalRow => Unit = _
    private val emitResult: TableChange[UnsafeRow, InternalRow] => Unit = c => {
      outRow.update(0, c.key.get(0, keyType))
      var i = 0
      while (i < nl + nr) {
        outRow.update(1 + i, if (c.newValue == null) null else c.newValue.get(i, null))
        i += 1
      }
      outRow.update(1 + nl + nr, toTimestamp(c.timestamp))
      outRow.update(2 + nl + nr, c.oldValue)
      outRow.setBoolean(3 + nl + nr, true)
      emitTo(outProj(outRow))
    }

    override protected def processLeft(row: InternalRow, ts: Long, emit: InternalRow => Unit): Unit = {
      emitTo = emit
      processor.joinLeft(leftReader.change(row, ts), emitResult)
    }

    override protected def processRight(row: InternalRow, ts: Long, emit: InternalRow => Unit): Unit = {
      emitTo = emit
      processor.joinRight(rightReader.change(row, ts), emitResult)
    }

    override def advanceStreamTime(t: Long): Unit = ()
    override def finish(): Unit = ()
    override def metrics: KStateTask.Metrics = KStateTask.Metrics.of(
      processor.counters,
      totalStateRows = -1L,
      updatedStateRows = processor.counters(TableTableJoinMetrics.JoinResults),
      removedStateRows = 0L
    )
  }

  override protected def withNewChildInternal(newChild: SparkPlan): KStateTableJoinExec = copy(child = newChild)
}

object KStateTableJoinExec {
  val LeftFamily = "kstate_tj_left"
  val RightFamily = "kstate_tj_right"

  def kindOf(how: String): TableTableJoinKind = how match {
    case "inner" => TableTableJoinKind.Inner
    case "left" => TableTableJoinKind.Left
    case "outer" => TableTableJoinKind.Outer
  }

  /** An event time in ms as a value of the timestamp column's type (`KStateStatefulExec.millisOf`'s inverse). */
  def fromMillis(dt: DataType): Long => Any = dt match {
    case TimestampType | TimestampNTZType => ms => ms * 1000L
    case LongType => ms => ms
    case IntegerType => ms => ms.toInt
    case ShortType => ms => ms.toShort
    case ByteType => ms => ms.toByte
  }
}
