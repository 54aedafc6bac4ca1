package org.apache.spark.sql.kstate.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Attribute,
  AttributeReference,
  Expression,
  GenericInternalRow,
  JoinedRow,
  UnsafeProjection,
  UnsafeRow
}
import org.apache.spark.sql.types.{DataType, LongType}

/**
 * The output rows of a windowed aggregation: (key, window start, window end, results..., result
 * timestamp), the results evaluated over the window's aggregate buffer. Bounds and timestamps
 * are epoch milliseconds, output as the window columns' type (BIGINT ms, or TIMESTAMP µs).
 * Each row is a fresh copy. Per task; not thread-safe.
 */
private[execution] final class WindowResultRows(
    keyType: DataType,
    output: Seq[Attribute],
    bufferAttributes: Seq[Attribute],
    resultExpressions: Seq[Expression]
) {
  private val helpers = Seq(
    "key" -> keyType,
    "start" -> output(1).dataType,
    "end" -> output(2).dataType,
    "ts" -> output.last.dataType
  )
    .map { case (n, t) => AttributeReference(s"_kstate_$n", t)() }
  private val toOutput = UnsafeProjection.create(
    Seq(helpers(0), helpers(1), helpers(2)) ++ resultExpressions :+ helpers(3),
    bufferAttributes ++ helpers
  )
  private val toOutputTime: Long => Long = output(1).dataType match {
    case LongType => identity
    case _ => ms => Math.multiplyExact(ms, 1000L)
  }
  private val joined = new JoinedRow()

  /** The row of the window of the one-column key row `key` with aggregate buffer `buffer`. */
  def apply(key: UnsafeRow, start: Long, end: Long, buffer: UnsafeRow, maxTs: Long): InternalRow = {
    val helper = new GenericInternalRow(Array[Any](
      key.get(0, keyType),
      toOutputTime(start),
      toOutputTime(end),
      toOutputTime(maxTs)
    ))
    toOutput(joined(buffer, helper)).copy()
  }
}
