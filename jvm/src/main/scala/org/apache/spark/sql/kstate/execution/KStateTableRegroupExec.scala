package org.apache.spark.sql.kstate.execution

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Attribute,
  Expression,
  GenericInternalRow,
  UnsafeProjection,
  UnsafeRow
}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.kstate.processor.Metric
import org.apache.spark.sql.kstate.processor.table.TableChange
import org.apache.spark.sql.kstate.processor.tableagg.{
  GroupChange,
  GroupSelector,
  GroupedValue,
  TableRegroupMetrics,
  TableRegroupProcessor
}
import org.apache.spark.util.CompletionIterator

/**
 * Physical stage 1 of a table aggregation ([[org.apache.spark.sql.kstate.plans.KStateTableRegroup]]):
 * a [[TableRegroupProcessor]] per partition over the table's change rows, in their order (a
 * narrow map: the rows stay in the table's partition, in its processing order). Each change's
 * new and old values are selected into (group, grouped value) here, so the processor's
 * [[GroupSelector]] hands on what was selected. Keeps no state; counts
 * `outOfOrderRecordsIgnored`, `noGroupValuesSkipped` and `groupChangesSent` as SQL metrics.
 */
case class KStateTableRegroupExec(
    group: Expression,
    values: Seq[Expression],
    oldGroup: Expression,
    oldValues: Seq[Expression],
    tableValues: Seq[Attribute],
    oldValue: Attribute,
    latest: Attribute,
    timestamp: Expression,
    versioned: Boolean,
    output: Seq[Attribute],
    child: SparkPlan
) extends RekeyingMapExec {
  import KStateTableRegroupExec._

  override protected def reported: Seq[Metric] = Reported

  override protected def doExecute(): RDD[InternalRow] = {
    val sqlMetrics = this.sqlMetrics
    val in = child.output
    val (g, v, og, ov, tv, t, versionedTable) = (group, values, oldGroup, oldValues, tableValues, timestamp, versioned)
    val oldOrdinal = in.indexWhere(_.exprId == oldValue.exprId)
    val latestOrdinal = in.indexWhere(_.exprId == latest.exprId)
    val groupType = group.dataType
    val outTypes = output.map(_.dataType).toArray
    child.execute().mapPartitionsInternal { rows =>
      val newSide = new Side(g, v, in)
      val oldSide = new Side(og, ov, in)
      val tableValue = UnsafeProjection.create(tv, in)
      val tsOf = KStateStatefulExec.eventTimeOf(t, in)
      val processor = new TableRegroupProcessor[InternalRow, Selected, UnsafeRow, UnsafeRow](
        SelectedGroup,
        versionedTable,
        TableRegroupMetrics.newCounters()
      )
      val outRow = new GenericInternalRow(4)
      val sent = new SentRows(outTypes, MaxSentPerChange) // handed on without copies
      val emit: GroupChange[UnsafeRow, UnsafeRow] => Unit = c => {
        outRow.update(0, c.group.get(0, groupType))
        outRow.update(1, c.newValue)
        outRow.update(2, c.oldValue)
        outRow.setLong(3, c.timestamp)
        sent.send(outRow)
      }
      val out = sent.over(rows) { row =>
        val newSel = if (ExpressionTableAggregator.allNull(tableValue(row))) null else newSide(row)
        val oldSel = if (row.isNullAt(oldOrdinal)) null else oldSide(row)
        processor.process(TableChange(row, newSel, oldSel, tsOf(row), row.getBoolean(latestOrdinal)), emit)
      }
      CompletionIterator[InternalRow, Iterator[InternalRow]](
        out,
        Reported.zip(sqlMetrics).foreach { case (m, metric) => metric += processor.counters(m) }
      )
    }
  }

  override protected def withNewChildInternal(newChild: SparkPlan): KStateTableRegroupExec = copy(child = newChild)
}

object KStateTableRegroupExec {

  /** The most group changes one table change sends ([[TableRegroupProcessor]]: a subtract and an add). */
  private val MaxSentPerChange = 2

  private val Reported = Seq(
    TableRegroupMetrics.OutOfOrderIgnored,
    TableRegroupMetrics.NoGroup,
    TableRegroupMetrics.GroupChanges
  )

  /** A table value as selected: its group (a one-field row) and grouped value, each null if none. */
  type Selected = GroupedValue[UnsafeRow, UnsafeRow]

  /**
   * Selects one side (new or old value) of a change row. The rows are its projections' own
   * buffers, not copies: valid until this side's next `apply`, which is long enough, because the
   * processor compares and emits them within the call that selected them, and `emit` projects
   * what it sends into rows of its own ([[SentRows]]). Each side has its projections, so the new
   * side's rows and the old side's never share a buffer.
   */
  private final class Side(group: Expression, values: Seq[Expression], in: Seq[Attribute]) {
    private val groupProj = UnsafeProjection.create(Seq(group), in)
    private val valueProj = UnsafeProjection.create(values, in)
    def apply(row: InternalRow): Selected = {
      val g = groupProj(row)
      val v = valueProj(row)
      GroupedValue(if (g.isNullAt(0)) null else g, if (ExpressionTableAggregator.allNull(v)) null else v)
    }
  }

  /** Hands on what the exec selected; groups are equal when their (normalized) rows are. */
  private object SelectedGroup extends GroupSelector[InternalRow, Selected, UnsafeRow, UnsafeRow] {
    override def select(key: InternalRow, value: Selected): Selected = value
    override def sameGroup(a: UnsafeRow, b: UnsafeRow): Boolean = a == b
  }

}
