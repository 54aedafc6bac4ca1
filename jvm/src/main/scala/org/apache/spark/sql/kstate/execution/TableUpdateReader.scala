package org.apache.spark.sql.kstate.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Expression, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.optimizer.NormalizeFloatingNumbers

/**
 * Reads a table's raw update from an input row, the same way for every exec that materializes a
 * table (the table source, and the joins that do their table sources' work): the key as a
 * one-field row, its floating point values normalised as the partitioning does (-0.0 and 0.0 one
 * key); the value row, null for a tombstone (all value columns null).
 *
 * `key` and `values` are bound to the input row. After [[read]], `key` and `value` are fresh
 * copies (a state may keep them), or null when the update has a null key or a null timestamp
 * (every table processor drops it then, counting which); `keyIsNull` and `tsIsNull` say which.
 * The fields are overwritten by the next `read`. Not thread-safe; one per task.
 */
final class TableUpdateReader(keyExpr: Expression, valueExprs: Seq[Expression]) {
  private val keyProj = UnsafeProjection.create(Seq(NormalizeFloatingNumbers.normalize(keyExpr)))
  private val valueProj = UnsafeProjection.create(valueExprs)
  private val n = valueExprs.length

  var key: UnsafeRow = _
  var keyIsNull: Boolean = false
  var value: UnsafeRow = _
  var tsIsNull: Boolean = false

  /** Reads the update in `row` at event time `ts` (ms, `KStateStatefulExec.NullTime` = null). */
  def read(row: InternalRow, ts: Long): Unit = {
    val k = keyProj(row)
    keyIsNull = k.isNullAt(0)
    tsIsNull = ts == KStateStatefulExec.NullTime
    if (keyIsNull || tsIsNull) { key = null; value = null }
    else {
      key = k.copy()
      val v = valueProj(row)
      value = if (TableUpdateReader.tombstone(v, n)) null else v.copy()
    }
  }
}

object TableUpdateReader {

  /** Whether the first `n` fields of `v` are all null (a table's delete). */
  def tombstone(v: InternalRow, n: Int): Boolean = {
    var i = 0
    while (i < n) { if (!v.isNullAt(i)) return false; i += 1 }
    true
  }
}
