package org.apache.spark.sql.kstate.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, GetStructField, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.optimizer.NormalizeFloatingNumbers
import org.apache.spark.sql.kstate.plans.TableJoinSide
import org.apache.spark.sql.kstate.processor.table.TableChange

/**
 * Reads one side's rows of a table join (the side's struct of a two-input envelope, laid out as
 * `side` says): a table's change rows as [[TableChange]]s ([[change]]: the key as a one-field
 * row, the value row, null for a tombstone (all value columns null), the old value row,
 * `isLatest`), or, when the side reads its table's source ([[TableJoinSide.fromSource]]), the raw
 * updates ([[update]]). Rows returned are fresh. Not thread-safe; one per task.
 */
final class TableSideReader(side: TableJoinSide) {
  private val n = side.valueOrdinals.length
  // a raw update's key is normalized as the table source's is (-0.0 and 0.0 one key)
  private val keyProj = UnsafeProjection.create(Seq(
    if (side.fromSource) NormalizeFloatingNumbers.normalize(field(side.keyOrdinal)) else field(side.keyOrdinal)
  ))
  private val valueProj = UnsafeProjection.create(side.valueOrdinals.map(field))
  private lazy val oldProj = UnsafeProjection.create(side.valueOrdinals.indices.map(i =>
    GetStructField(field(side.oldOrdinal), i)
  ))
  private def field(i: Int) = BoundReference(i, side.schema(i).dataType, side.schema(i).nullable)

  /** The change in `row`, at event time `ts` (ms). */
  def change(row: InternalRow, ts: Long): TableChange[UnsafeRow, UnsafeRow] = {
    val v = valueProj(row)
    val old = if (row.isNullAt(side.oldOrdinal)) null else oldProj(row).copy()
    TableChange(keyProj(row).copy(), if (tombstone(v)) null else v.copy(), old, ts, row.getBoolean(side.latestOrdinal))
  }

  /**
   * The raw update in `row` at event time `ts` (ms, `KStateStatefulExec.NullTime` = null). Key and
   * value are null when the key or the timestamp is (the update is then dropped); the value is null
   * for a tombstone.
   */
  def update(row: InternalRow, ts: Long): TableSideReader.Update = {
    val k = keyProj(row)
    val keyIsNull = k.isNullAt(0)
    val tsIsNull = ts == KStateStatefulExec.NullTime
    if (keyIsNull || tsIsNull) TableSideReader.Update(null, keyIsNull, null, tsIsNull)
    else {
      val v = valueProj(row)
      TableSideReader.Update(k.copy(), keyIsNull = false, if (tombstone(v)) null else v.copy(), tsIsNull = false)
    }
  }

  private def tombstone(v: UnsafeRow): Boolean = {
    var tomb = true
    var i = 0
    while (tomb && i < n) { tomb = v.isNullAt(i); i += 1 }
    tomb
  }
}

object TableSideReader {

  /** A raw table update: its key row (null when the key or the timestamp is null) and value row (null: a tombstone). */
  final case class Update(key: UnsafeRow, keyIsNull: Boolean, value: UnsafeRow, tsIsNull: Boolean)
}
