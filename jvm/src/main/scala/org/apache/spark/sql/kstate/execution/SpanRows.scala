package org.apache.spark.sql.kstate.execution

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Attribute,
  AttributeReference,
  Expression,
  JoinedRow,
  Literal,
  SpecificInternalRow,
  UnsafeProjection,
  UnsafeRow
}
import org.apache.spark.sql.kstate.processor.window.SpanOutput
import org.apache.spark.sql.types.{BooleanType, DataType, LongType}

/**
 * The output rows of a session or sliding aggregation, as its processor's [[SpanOutput]]:
 * `key, window_start, window_end, results (over the buffer), result timestamp` and, with
 * `tombstones`, a last BOOLEAN `tombstone` column (a tombstone row has null results). Times are
 * ms, converted to micros for TIMESTAMP columns. Rows are copies, kept in `rows` in emission
 * order. Per task; not thread-safe.
 */
private[execution] final class SpanRows(
    keyType: DataType,
    output: Seq[Attribute],
    bufferAttributes: Seq[Attribute],
    resultExpressions: Seq[Expression],
    tombstones: Boolean
) extends SpanOutput[UnsafeRow, UnsafeRow] {
  val rows: ArrayBuffer[InternalRow] = ArrayBuffer.empty
  private val tsType = output(3 + resultExpressions.length).dataType
  private val helpers = Seq(
    "key" -> keyType,
    "start" -> output(1).dataType,
    "end" -> output(2).dataType,
    "ts" -> tsType,
    "tombstone" -> BooleanType
  ).map { case (n, t) => AttributeReference(s"_kstate_$n", t)() }
  private val flag = if (tombstones) Seq(helpers(4)) else Nil
  private val toResult = UnsafeProjection.create(
    helpers.take(3) ++ resultExpressions ++ (helpers(3) +: flag),
    bufferAttributes ++ helpers
  )
  private val toTombstone = UnsafeProjection.create(
    helpers.take(3) ++ resultExpressions.map(e => Literal(null, e.dataType)) ++ (helpers(3) +: flag),
    helpers
  )
  private val toOutputTime: Long => Long = output(1).dataType match {
    case LongType => identity
    case _ => ms => Math.multiplyExact(ms, 1000L)
  }
  // the helpers' input: the key row, then one reused row of (start, end, ts, tombstone), set
  // without boxing; the projections read both through joined rows, and each result is a copy
  private val times = new SpecificInternalRow(helpers.drop(1).map(_.dataType))
  private val keyAndTimes = new JoinedRow()
  private val joined = new JoinedRow()

  private def helperRow(key: UnsafeRow, start: Long, end: Long, maxTs: Long, tombstone: Boolean): InternalRow = {
    // the projections read the key as the one field before the times
    if (key.numFields != 1) throw new IllegalStateException(s"a window's key row has ${key.numFields} fields, not 1")
    times.setLong(0, toOutputTime(start))
    times.setLong(1, toOutputTime(end))
    times.setLong(2, toOutputTime(maxTs))
    times.setBoolean(3, tombstone)
    keyAndTimes(key, times)
  }

  override def result(key: UnsafeRow, start: Long, end: Long, agg: UnsafeRow, maxTs: Long): Unit =
    rows += toResult(joined(agg, helperRow(key, start, end, maxTs, tombstone = false))).copy()

  override def tombstone(key: UnsafeRow, start: Long, end: Long, maxTs: Long): Unit = {
    require(tombstones, "tombstone of an aggregation without a tombstone column")
    rows += toTombstone(helperRow(key, start, end, maxTs, tombstone = true)).copy()
  }
}
