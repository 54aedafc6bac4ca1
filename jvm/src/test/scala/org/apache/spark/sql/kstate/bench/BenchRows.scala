package org.apache.spark.sql.kstate.bench

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types._

/**
 * The rows of the store benchmarks: a long key, a value of a long and 40 bytes of padding.
 * `key` and `value` reuse one row each (the stores copy what they are given).
 */
object BenchRows {
  val keySchema: StructType = StructType(Seq(StructField("k", LongType)))
  val valueSchema: StructType = StructType(Seq(StructField("v", LongType), StructField("pad", StringType)))
  private val keyProj = UnsafeProjection.create(keySchema)
  private val valueProj = UnsafeProjection.create(valueSchema)
  private val pad = org.apache.spark.unsafe.types.UTF8String.fromString("x" * 40)

  def key(i: Long): UnsafeRow = keyProj(InternalRow(i))
  def value(i: Long): UnsafeRow = valueProj(InternalRow(i, pad))
}
