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
 * envelope of both tables, in one of two layouts (both sides alike):
 *  - change rows: each side's table is materialized upstream (its change rows carry the old value
 *    and whether the update is the key's latest); this operator keeps each side's latest value
 *    per key in its own column family of one store (`kstate_tj_left`, `kstate_tj_right`,
 *    unversioned mirrors; heap states for batch DataFrames) and joins each change
 *    (`joinLeft` / `joinRight`);
 *  - raw updates ([[TableJoinSide.fromSource]], planned by
 *    [[org.apache.spark.sql.kstate.planning.TableJoinSources]]): this operator materializes each
 *    table itself, as its source would (an unversioned table in `kstate_tj_left` /
 *    `kstate_tj_right`, the same layout as the mirrors; a versioned one in the versioned store
 *    `tj_left` / `tj_right`), and joins each update (`processLeft` / `processRight`: null keys,
 *    null timestamps and late updates dropped and counted by the processor).
 * Output rows: key, left values, right values, result timestamp (in the key's timestamp type,
 * millisecond precision), old join value, latest = true.
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
  override def storeCapabilities: Set[StoreCapability] =
    Set[StoreCapability](StoreCapability.ColumnFamilies) ++
      Seq(left, right).find(s => s.fromSource && s.versioning.isDefined).map(_ => StoreCapability.VersionedStore)
  override def partitionBy: Seq[Expression] = Seq(key)

  override protected def stateKeySchema: StructType = new StructType().add("key", key.dataType)
  override protected def stateValueSchema: StructType =
    StructType(left.valueTypes.fields ++ right.valueTypes.fields)
  override protected def metricSet: MetricSet = TableTableJoinMetrics

  override protected def newTask(store: Option[StateStore]): KStateTask = {
    require(left.fromSource == right.fromSource, "both sides of a table join are read alike")
    def table(side: TableJoinSide, family: String, versionedName: String): TableStateChoice.Chosen =
      if (side.fromSource) {
        TableStateChoice.choose(
          operatorName,
          store,
          side.versioning,
          versionedName,
          stateKeySchema,
          side.valueOrdinals.length,
          Some(family)
        )
      } else {
        val mirror = store match {
          case Some(s) => new StoreTableState(s, stateKeySchema, side.valueOrdinals.length, family)
          case None => InMemoryTableState.unversioned[UnsafeRow, UnsafeRow]()
        }
        new TableStateChoice.Chosen(mirror, () => 0L)
      }
    new TableJoinTask(
      table(left, KStateTableJoinExec.LeftFamily, KStateTableJoinExec.LeftVersionedName),
      table(right, KStateTableJoinExec.RightFamily, KStateTableJoinExec.RightVersionedName)
    )
  }

  private final class TableJoinTask(leftTable: TableStateChoice.Chosen, rightTable: TableStateChoice.Chosen)
      extends TwoInputTask(child.output) {
    private val leftState = leftTable.state
    private val rightState = rightTable.state
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
    private var cleanedUp = 0L
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
      if (left.fromSource) {
        val u = leftReader.updates
        u.read(row, ts)
        processor.processLeft(u.key, u.keyIsNull, u.value, ts, u.tsIsNull, emitResult)
      } else processor.joinLeft(leftReader.change(row, ts), emitResult)
    }

    override protected def processRight(row: InternalRow, ts: Long, emit: InternalRow => Unit): Unit = {
      emitTo = emit
      if (right.fromSource) {
        val u = rightReader.updates
        u.read(row, ts)
        processor.processRight(u.key, u.keyIsNull, u.value, ts, u.tsIsNull, emitResult)
      } else processor.joinRight(rightReader.change(row, ts), emitResult)
    }

    override def advanceStreamTime(t: Long): Unit = ()
    override def finish(): Unit = {
      cleanedUp = leftTable.finish() + rightTable.finish()
      processor.counters.set(TableTableJoinMetrics.LeftTableVersions, leftState.numVersions)
      processor.counters.set(TableTableJoinMetrics.RightTableVersions, rightState.numVersions)
    }
    override def metrics: KStateTask.Metrics = KStateTask.Metrics.of(
      processor.counters,
      totalStateRows = -1L,
      updatedStateRows = processor.counters(TableTableJoinMetrics.JoinResults),
      removedStateRows = cleanedUp
    )
  }

  override protected def withNewChildInternal(newChild: SparkPlan): KStateTableJoinExec = copy(child = newChild)
}

object KStateTableJoinExec {
  val LeftFamily = "kstate_tj_left"
  val RightFamily = "kstate_tj_right"

  /** The versioned stores of versioned tables the join materializes itself (`kstate_vs_tj_left_*`, ...). */
  val LeftVersionedName = "tj_left"
  val RightVersionedName = "tj_right"

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
