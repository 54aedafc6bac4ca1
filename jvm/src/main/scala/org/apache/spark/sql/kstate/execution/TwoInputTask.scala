package org.apache.spark.sql.kstate.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.kstate.plans.TwoInputs

/**
 * A [[KStateTask]] of a two-input operator: its input is a [[TwoInputs]] envelope, already in
 * processing order (both sides merged), and it hands each record to the side's method with the
 * side's row (the struct of that side's columns, as the side's DataFrame had them).
 *
 * `input` is the exec's child output (the envelope's columns, then the position columns).
 * Rows passed on are valid until the next call; a task that keeps one copies it.
 */
abstract class TwoInputTask(input: Seq[Attribute]) extends KStateTask {
  private def ordinal(name: String): Int = {
    val i = input.indexWhere(_.name == name)
    require(i >= 0, s"$name is not in the input of a two-input task: ${input.map(_.name).mkString(", ")}")
    i
  }
  private val sideOrdinal = ordinal(TwoInputs.SideColumn)
  private val leftOrdinal = ordinal(TwoInputs.LeftColumn)
  private val rightOrdinal = ordinal(TwoInputs.RightColumn)
  private val leftFields = input(leftOrdinal).dataType.asInstanceOf[org.apache.spark.sql.types.StructType].length
  private val rightFields = input(rightOrdinal).dataType.asInstanceOf[org.apache.spark.sql.types.StructType].length

  /** One record of the left input, with its event time (`KStateStatefulExec.NullTime` = null). */
  protected def processLeft(row: InternalRow, ts: Long, emit: InternalRow => Unit): Unit

  /** One record of the right input. */
  protected def processRight(row: InternalRow, ts: Long, emit: InternalRow => Unit): Unit

  final override def process(row: InternalRow, ts: Long, emit: InternalRow => Unit): Unit =
    if (row.getByte(sideOrdinal) == TwoInputs.Left) processLeft(row.getStruct(leftOrdinal, leftFields), ts, emit)
    else processRight(row.getStruct(rightOrdinal, rightFields), ts, emit)
}
