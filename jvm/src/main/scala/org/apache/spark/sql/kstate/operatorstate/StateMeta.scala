package org.apache.spark.sql.kstate.operatorstate

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter
import org.apache.spark.sql.execution.streaming.state.{NoPrefixKeyStateEncoderSpec, StateStore}
import org.apache.spark.sql.types.{IntegerType, LongType, StructField, StructType}

/**
 * A kstate operator's per-partition scalars (stream time, entry counts) in the column family
 * `kstate_meta` of its state store: slot number -> long. Read at task start, written at finish,
 * so they commit atomically with the state they describe.
 */
final class StateMeta(store: StateStore) {
  import StateMeta._
  store.createColFamilyIfAbsent(Cf, KeySchema, ValueSchema, NoPrefixKeyStateEncoderSpec(KeySchema))

  private val keyWriter = new UnsafeRowWriter(1)
  private val valueWriter = new UnsafeRowWriter(1)

  private def key(slot: Int): UnsafeRow = {
    keyWriter.reset(); keyWriter.zeroOutNullBytes(); keyWriter.write(0, slot); keyWriter.getRow
  }

  def get(slot: Int, default: Long): Long =
    Option(store.get(key(slot), Cf)).map(_.getLong(0)).getOrElse(default)

  /** Stream time and the state's entry and byte counts, as the windowed aggregations keep them. */
  def putCounts(streamTime: Long, entries: Long, bytes: Long): Unit = {
    put(StreamTime, streamTime)
    put(Entries, entries)
    put(Bytes, bytes)
  }

  def put(slot: Int, value: Long): Unit = {
    valueWriter.reset(); valueWriter.zeroOutNullBytes(); valueWriter.write(0, value)
    store.put(key(slot), valueWriter.getRow, Cf)
  }
}

object StateMeta {
  val Cf = "kstate_meta"
  val StreamTime = 0
  val Entries = 1
  val LastPurgeBound = 2
  val Bytes = 3
  val LateDroppedTotal = 4
  private val KeySchema = StructType(Seq(StructField("slot", IntegerType, nullable = false)))
  private val ValueSchema = StructType(Seq(StructField("value", LongType, nullable = false)))
}

/**
 * A count kept across micro-batches in a [[StateMeta]] slot, committed with the state (none for
 * batch queries: the count starts at 0).
 */
final class RunningTotal(meta: Option[StateMeta], slot: Int) {
  private val before = meta.map(_.get(slot, 0L)).getOrElse(0L)

  /** The total including this micro-batch's `n`; persisted when the store commits. */
  def save(n: Long): Long = {
    meta.foreach(_.put(slot, before + n))
    before + n
  }
}
