package org.apache.spark.sql.kstate.operatorstate

import scala.collection.mutable

import org.apache.spark.sql.catalyst.expressions.{BoundReference, JoinedRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter
import org.apache.spark.sql.execution.streaming.state.{RangeKeyScanStateEncoderSpec, StateStore}
import org.apache.spark.sql.types.{BooleanType, LongType, StructField, StructType}

/**
 * A time index over a state store's keys, in the column family `kstate_expiry`:
 * (time, key...) -> present, range-encoded on time so iteration runs in time order. Purging
 * scans only the expired prefix instead of every key (KIP-655's index).
 */
final class ExpiryIndex(store: StateStore, keySchema: StructType) {
  import ExpiryIndex._
  private val schema = StructType(StructField("time", LongType, nullable = false) +: keySchema.fields)
  store.createColFamilyIfAbsent(Cf, schema, PresentSchema, RangeKeyScanStateEncoderSpec(schema, Seq(0)))

  private val timeWriter = new UnsafeRowWriter(1)
  private val joined = new JoinedRow()
  private val toIndexKey = UnsafeProjection.create(schema)
  private val keyOfIndex = UnsafeProjection.create(keySchema.fields.indices.map(i =>
    BoundReference(i + 1, keySchema.fields(i).dataType, nullable = true)
  ))
  private val present: UnsafeRow = {
    val w = new UnsafeRowWriter(1); w.reset(); w.zeroOutNullBytes(); w.write(0, true); w.getRow
  }

  private def indexKey(time: Long, key: UnsafeRow): UnsafeRow = {
    timeWriter.reset(); timeWriter.zeroOutNullBytes(); timeWriter.write(0, time)
    toIndexKey(joined(timeWriter.getRow, key))
  }

  def add(time: Long, key: UnsafeRow): Unit = store.put(indexKey(time, key), present, Cf)

  def remove(time: Long, key: UnsafeRow): Unit = store.remove(indexKey(time, key), Cf)

  /**
   * Removes every index entry with time `< bound` and calls `f(time, key)` for each, in time
   * order; `key` is only valid during the call.
   */
  def drainBefore(bound: Long)(f: (Long, UnsafeRow) => Unit): Unit = {
    val expired = mutable.ArrayBuffer.empty[UnsafeRow]
    val it = store.iterator(Cf)
    try {
      var done = false
      while (!done && it.hasNext) {
        val k = it.next().key
        if (k.getLong(0) < bound) expired += k.copy() else done = true
      }
    } finally it.close()
    expired.foreach { k =>
      f(k.getLong(0), keyOfIndex(k))
      store.remove(k, Cf)
    }
  }
}

object ExpiryIndex {
  val Cf = "kstate_expiry"
  private val PresentSchema = StructType(Seq(StructField("present", BooleanType)))
}
