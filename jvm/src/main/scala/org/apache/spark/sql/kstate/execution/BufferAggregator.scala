package org.apache.spark.sql.kstate.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, JoinedRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.kstate.processor.window.Aggregator

/**
 * [[Aggregator]] over Spark's aggregate buffers: input rows (`input`) fold into buffer rows
 * (`bufferAttributes`) by the aggregate functions' initial values and update expressions. Each
 * call returns a fresh copy. Per task; not thread-safe.
 */
private[execution] final class BufferAggregator(
    input: Seq[Attribute],
    bufferAttributes: Seq[Attribute],
    initialValues: Seq[Expression],
    updateExpressions: Seq[Expression]) extends Aggregator[InternalRow, UnsafeRow] {
  private val initialProj = UnsafeProjection.create(initialValues)
  private val updateProj = UnsafeProjection.create(updateExpressions, bufferAttributes ++ input)
  private val joined = new JoinedRow()

  override def initial(): UnsafeRow = initialProj(InternalRow.empty).copy()
  override def add(agg: UnsafeRow, record: InternalRow): UnsafeRow = updateProj(joined(agg, record)).copy()
}
