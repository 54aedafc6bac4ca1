package org.apache.spark.sql.kstate.provider

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.types.{LongType, StructField, StructType}

/** Stores of long keys to long values, for the provider's model-based tests. */
object LongRows {
  val keySchema: StructType = StructType(Seq(StructField("k", LongType)))
  val valueSchema: StructType = StructType(Seq(StructField("v", LongType)))
  private val keyProj = UnsafeProjection.create(keySchema)
  private val valueProj = UnsafeProjection.create(valueSchema)

  def key(k: Long): UnsafeRow = keyProj(InternalRow(k)).copy()
  def value(v: Long): UnsafeRow = valueProj(InternalRow(v)).copy()
  def contents(s: StateStore): Map[Long, Long] = s.iterator().map(p => p.key.getLong(0) -> p.value.getLong(0)).toMap

  /** Random puts and removes over `keySpace` keys, applied to `s` and to `model`; returns the new model. */
  def randomChanges(
      s: StateStore,
      model: Map[Long, Long],
      rnd: scala.util.Random,
      changes: Int,
      keySpace: Int
  ): Map[Long, Long] =
    (0 until changes).foldLeft(model) { (m, _) =>
      val k = rnd.nextInt(keySpace).toLong
      if (rnd.nextInt(4) == 0) { s.remove(key(k)); m - k }
      else { val v = rnd.nextLong(); s.put(key(k), value(v)); m + (k -> v) }
    }
}
