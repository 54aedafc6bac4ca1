package org.apache.spark.sql.kstate.execution

import org.apache.spark.sql.catalyst.expressions.{
  BoundReference,
  JoinedRow,
  SpecificInternalRow,
  UnsafeProjection,
  UnsafeRow
}
import org.apache.spark.sql.kstate.processor.window.SlidingStateKeys
import org.apache.spark.sql.types.{DataType, IntegerType, StructField, StructType}

/**
 * A sliding aggregation's state keys: `(key, kind)`, kind [[SlidingRowKeys.WindowsKind]] holding
 * the key's windows and [[SlidingRowKeys.RecordsKind]] its records' own buffers. Per task.
 */
private[execution] final class SlidingRowKeys(keyType: DataType) extends SlidingStateKeys[UnsafeRow, UnsafeRow] {
  import SlidingRowKeys._
  private val toStateKey = UnsafeProjection.create(schema(keyType))
  private val toKey = UnsafeProjection.create(Seq(BoundReference(0, keyType, nullable = true)))

  // the state key's input: the one-column key row, then the kind
  private val kindRow = new SpecificInternalRow(Seq(IntegerType))
  private val keyAndKind = new JoinedRow()

  private def stateKey(k: UnsafeRow, kind: Int): UnsafeRow = {
    if (k.numFields != 1) throw new IllegalStateException(s"a window's key row has ${k.numFields} fields, not 1")
    kindRow.setInt(0, kind)
    toStateKey(keyAndKind(k, kindRow)).copy()
  }

  override def windows(key: UnsafeRow): UnsafeRow = stateKey(key, WindowsKind)
  override def records(key: UnsafeRow): UnsafeRow = stateKey(key, RecordsKind)
  override def isWindows(stateKey: UnsafeRow): Boolean = stateKey.getInt(1) == WindowsKind
  override def keyOf(stateKey: UnsafeRow): UnsafeRow = toKey(stateKey).copy()
}

private[execution] object SlidingRowKeys {
  val WindowsKind = 0
  val RecordsKind = 1

  /** The state key schema. */
  def schema(keyType: DataType): StructType = StructType(Seq(
    StructField("key", keyType, nullable = true),
    StructField("kind", IntegerType, nullable = false)
  ))
}
