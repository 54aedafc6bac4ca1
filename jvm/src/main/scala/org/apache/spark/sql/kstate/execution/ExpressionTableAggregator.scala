package org.apache.spark.sql.kstate.execution

import org.apache.spark.sql.catalyst.expressions.{JoinedRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.kstate.plans.TableAggregateSpec
import org.apache.spark.sql.kstate.processor.tableagg.TableAggregator

/**
 * A [[TableAggregator]] over UnsafeRows that evaluates a [[TableAggregateSpec]]: the aggregate is
 * a row of the spec's aggregate columns, a value a row of its value columns. An aggregate whose
 * columns are all null is a deleted one (null). Results are fresh rows the caller owns. Not
 * thread-safe; one per task.
 */
final class ExpressionTableAggregator(spec: TableAggregateSpec)
    extends TableAggregator[UnsafeRow, UnsafeRow, UnsafeRow] {
  private val input = spec.aggregate ++ spec.value
  private val addProj = UnsafeProjection.create(spec.add, input)
  private val subtractProj = UnsafeProjection.create(spec.subtract, input)
  private val initial: Option[UnsafeRow] = spec.initial.map(e => UnsafeProjection.create(e).apply(null).copy())
  private val joined = new JoinedRow()

  override def add(group: UnsafeRow, agg: UnsafeRow, value: UnsafeRow): UnsafeRow =
    if (agg != null) fold(addProj, agg, value)
    else initial match {
      case Some(init) => fold(addProj, init, value)
      case None => value.copy() // reduce: a group's first value is its aggregate
    }

  override def subtract(group: UnsafeRow, agg: UnsafeRow, value: UnsafeRow): UnsafeRow = fold(subtractProj, agg, value)

  private def fold(proj: UnsafeProjection, agg: UnsafeRow, value: UnsafeRow): UnsafeRow = {
    val out = proj(joined(agg, value))
    if (ExpressionTableAggregator.allNull(out)) null else out.copy()
  }
}

object ExpressionTableAggregator {

  /** Whether every field of `row` is null (a tombstone, a deleted aggregate, a value of no group). */
  def allNull(row: UnsafeRow): Boolean = {
    var i = 0
    while (i < row.numFields) { if (!row.isNullAt(i)) return false; i += 1 }
    true
  }
}
