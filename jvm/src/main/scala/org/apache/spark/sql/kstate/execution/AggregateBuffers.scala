package org.apache.spark.sql.kstate.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, JoinedRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.kstate.processor.window.MergingAggregator

/**
 * The aggregate buffers of a windowed aggregation as the processors' [[MergingAggregator]]: a new
 * buffer, one more input row, and two buffers merged (sessions merge, sliding windows are built
 * from their records' buffers; time windows never merge, so the merge projection is built only
 * when first used), each a fresh copy. `orderInsensitive`: the functions' ([[AggregateSpec]]).
 * Per task; not thread-safe.
 */
private[execution] final class AggregateBuffers(
    input: Seq[Attribute],
    bufferAttributes: Seq[Attribute],
    initialValues: Seq[Expression],
    updateExpressions: Seq[Expression],
    inputBufferAttributes: Seq[Attribute],
    mergeExpressions: Seq[Expression],
    override val orderInsensitive: Boolean = false
) extends MergingAggregator[InternalRow, UnsafeRow] {
  private val initialProj = UnsafeProjection.create(initialValues)
  private val updateProj = UnsafeProjection.create(updateExpressions, bufferAttributes ++ input)
  private lazy val mergeProj = UnsafeProjection.create(mergeExpressions, bufferAttributes ++ inputBufferAttributes)
  private val joined = new JoinedRow()

  override def initial(): UnsafeRow = initialProj(InternalRow.empty).copy()
  override def add(buffer: UnsafeRow, row: InternalRow): UnsafeRow = updateProj(joined(buffer, row)).copy()
  override def merge(buffer: UnsafeRow, other: UnsafeRow): UnsafeRow = mergeProj(joined(buffer, other)).copy()
}
