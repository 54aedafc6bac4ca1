package org.apache.spark.sql.kstate.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, GetStructField, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.kstate.plans.TableJoinSide
import org.apache.spark.sql.kstate.processor.table.TableChange

/**
 * Reads a table's change rows (one side's struct of a two-input envelope, laid out as `side`
 * says) as [[TableChange]]s: the key as a one-field row, the value row (null for a tombstone:
 * all value columns null), the old value row, `isLatest`. Rows returned are fresh. Not
 * thread-safe; one per task.
 */
final class TableSideReader(side: TableJoinSide) {
  private val n = side.valueOrdinals.length
  private val keyProj = UnsafeProjection.create(Seq(field(side.keyOrdinal)))
  private val valueProj = UnsafeProjection.create(side.valueOrdinals.map(field))
  private val oldProj = UnsafeProjection.create(side.valueOrdinals.indices.map(i =>
    GetStructField(field(side.oldOrdinal), i)
  ))
  private def field(i: Int) = BoundReference(i, side.schema(i).dataType, side.schema(i).nullable)

  /** The change in `row`, at event time `ts` (ms). */
  def change(row: InternalRow, ts: Long): TableChange[UnsafeRow, UnsafeRow] = {
    val v = valueProj(row)
    var tomb = true
    var i = 0
    while (tomb && i < n) { tomb = v.isNullAt(i); i += 1 }
    val old = if (row.isNullAt(side.oldOrdinal)) null else oldProj(row).copy()
    TableChange(keyProj(row).copy(), if (tomb) null else v.copy(), old, ts, row.getBoolean(side.latestOrdinal))
  }
}
