package org.apache.spark.sql.kstate.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, GetStructField, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.kstate.plans.TableJoinSide
import org.apache.spark.sql.kstate.processor.table.TableChange

/**
 * Reads one side's rows of a table join (the side's struct of a two-input envelope, laid out as
 * `side` says): a table's change rows as [[TableChange]]s ([[change]]: the key as a one-field
 * row, the value row, null for a tombstone (all value columns null), the old value row,
 * `isLatest`), or, when the side reads its table's source ([[TableJoinSide.fromSource]]), the raw
 * updates ([[updates]], a [[TableUpdateReader]]). Rows returned are fresh. Not thread-safe; one per
 * task.
 */
final class TableSideReader(side: TableJoinSide) {
  private val n = side.valueOrdinals.length
  private lazy val keyProj = UnsafeProjection.create(Seq(field(side.keyOrdinal)))
  private lazy val valueProj = UnsafeProjection.create(side.valueOrdinals.map(field))
  private lazy val oldProj = UnsafeProjection.create(side.valueOrdinals.indices.map(i =>
    GetStructField(field(side.oldOrdinal), i)
  ))
  private def field(i: Int) = BoundReference(i, side.schema(i).dataType, side.schema(i).nullable)

  /** The change in `row`, at event time `ts` (ms). */
  def change(row: InternalRow, ts: Long): TableChange[UnsafeRow, UnsafeRow] = {
    val v = valueProj(row)
    val old = if (row.isNullAt(side.oldOrdinal)) null else oldProj(row).copy()
    val value = if (TableUpdateReader.tombstone(v, n)) null else v.copy()
    TableChange(keyProj(row).copy(), value, old, ts, row.getBoolean(side.latestOrdinal))
  }

  /** The side's raw updates, when it reads its table's source. */
  lazy val updates: TableUpdateReader = new TableUpdateReader(field(side.keyOrdinal), side.valueOrdinals.map(field))
}
