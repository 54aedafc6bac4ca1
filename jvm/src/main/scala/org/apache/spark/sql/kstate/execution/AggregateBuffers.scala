package org.apache.spark.sql.kstate.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, JoinedRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.kstate.processor.window.MergingAggregator

/**
 * The aggregate buffers of a windowed aggregation as the processors' [[MergingAggregator]]: a new
 * buffer, one more input row, and two buffers merged (sessions merge, sliding windows are built
 * from their records' buffers; time windows never merge, so the merge projection is built only
 * when first used), each a fresh copy; `mergeAll` copies only its result. `orderInsensitive`: the
 * functions' ([[AggregateSpec]]).
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
  // two merge projections: `merge` uses the first (and copies); `mergeAll` uses both in turn, so
  // each reads the other's output row, never its own
  private lazy val mergeProjs = Array.fill(2)(
    UnsafeProjection.create(mergeExpressions, bufferAttributes ++ inputBufferAttributes)
  )
  private val joined = new JoinedRow()

  override def initial(): UnsafeRow = initialProj(InternalRow.empty).copy()
  override def add(buffer: UnsafeRow, row: InternalRow): UnsafeRow = updateProj(joined(buffer, row)).copy()
  override def merge(buffer: UnsafeRow, other: UnsafeRow): UnsafeRow = mergeProjs(0)(joined(buffer, other)).copy()

  /** One copy for the result instead of one per merge (sliding windows fold many buffers). */
  override def mergeAll(parts: Array[Any], n: Int): UnsafeRow = {
    checkMergeAll(parts, n)
    var acc = parts(0).asInstanceOf[UnsafeRow]
    if (n == 1) return acc
    var i = 1
    while (i < n) { acc = mergeProjs(i & 1)(joined(acc, parts(i).asInstanceOf[UnsafeRow])); i += 1 }
    acc.copy()
  }
}
