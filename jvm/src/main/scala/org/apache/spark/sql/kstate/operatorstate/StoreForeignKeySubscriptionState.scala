package org.apache.spark.sql.kstate.operatorstate

import org.apache.spark.sql.kstate.provider.KStateStore
import org.apache.spark.sql.kstate.engine.FamilyCodec

import org.apache.spark.sql.catalyst.expressions.{BoundReference, GenericInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter
import org.apache.spark.sql.execution.streaming.state.{PrefixKeyScanStateEncoderSpec, StateStore}
import org.apache.spark.sql.kstate.processor.join.ForeignKeySubscriptionState
import org.apache.spark.sql.kstate.processor.join.ForeignKeySubscriptionState.Subscribed
import org.apache.spark.sql.types.{BinaryType, DataType, LongType, StructField, StructType}

/**
 * The foreign-key join's subscriptions in the column family `kstate_fk_subscriptions` of a state
 * store with column families and prefix scans (kstate's or Spark's RocksDB provider): key
 * (foreign key, left key), value (version, timestamp, left value row bytes); `subscribers` is a
 * prefix scan on the foreign key (the store's key order). Foreign keys and left keys are
 * one-field UnsafeRows of `foreignKeyType` / `keyType`; values UnsafeRows of `valueFields`
 * fields. The pair count lives in the store's [[StateMeta]] (`Entries`), written by [[commit]]
 * at the end of the task. Rows returned are fresh. Not thread-safe; one per task.
 */
final class StoreForeignKeySubscriptionState(
    store: StateStore,
    foreignKeyType: DataType,
    keyType: DataType,
    valueFields: Int
) extends ForeignKeySubscriptionState[UnsafeRow, UnsafeRow, UnsafeRow] {
  import StoreForeignKeySubscriptionState._
  private val keySchema = StructType(Seq(StructField("foreignKey", foreignKeyType), StructField("key", keyType)))
  store.createColFamilyIfAbsent(Cf, keySchema, ValueSchema, PrefixKeyScanStateEncoderSpec(keySchema, 1))
  private val meta = new StateMeta(store)
  private var pairs = meta.get(StateMeta.Entries, 0L)
  private val pair = new GenericInternalRow(2)
  private val pairProj = UnsafeProjection.create(keySchema)
  private val leftKeyProj = UnsafeProjection.create(Seq(BoundReference(1, keyType, nullable = true)))
  private val writer = new UnsafeRowWriter(3)

  private def pairRow(foreignKey: UnsafeRow, key: UnsafeRow): UnsafeRow = {
    pair.update(0, foreignKey.get(0, foreignKeyType))
    pair.update(1, key.get(0, keyType))
    pairProj(pair)
  }

  override def put(foreignKey: UnsafeRow, key: UnsafeRow, s: Subscribed[UnsafeRow]): Unit = {
    val k = pairRow(foreignKey, key).copy()
    if (store.get(k, Cf) == null) pairs += 1
    writer.reset(); writer.zeroOutNullBytes()
    writer.write(0, s.version)
    writer.write(1, s.timestamp)
    writer.write(2, s.leftValue.getBytes)
    store.put(k, writer.getRow, Cf)
  }

  override def remove(foreignKey: UnsafeRow, key: UnsafeRow): Unit = {
    val k = pairRow(foreignKey, key)
    if (store.get(k, Cf) != null) {
      pairs -= 1
      store.remove(k, Cf)
    }
  }

  override def subscribers(foreignKey: UnsafeRow): Iterator[(UnsafeRow, Subscribed[UnsafeRow])] = {
    val found = Vector.newBuilder[(UnsafeRow, Subscribed[UnsafeRow])]
    val it = store.prefixScan(foreignKey, Cf)
    try it.foreach { p =>
        val bytes = p.value.getBinary(2)
        val value = new UnsafeRow(valueFields)
        value.pointTo(bytes, bytes.length)
        found += leftKeyProj(p.key).copy() -> Subscribed(value, p.value.getLong(0), p.value.getLong(1))
      }
    finally it.close()
    found.result().iterator
  }

  override def size: Long = pairs

  /** Persists the pair count with the state (call once, at the end of the task). */
  def commit(): Unit = meta.put(StateMeta.Entries, pairs)
}

object StoreForeignKeySubscriptionState {

  /**
   * Rewrites every subscription's left value row in `store` with `f` (a change of the left
   * values' schema, in the task that converts them); versions and timestamps stay.
   */
  private[kstate] def mapLeftValues(store: KStateStore, f: Array[Byte] => Array[Byte]): Unit =
    for (subs <- store.existingFamily(Cf)) {
      val it = subs.scan(Array.emptyByteArray, None)
      val row = new UnsafeRow(3)
      val writer = new UnsafeRowWriter(3)
      try it.foreach { case (k, v) =>
          row.pointTo(v, v.length)
          writer.reset(); writer.zeroOutNullBytes()
          writer.write(0, row.getLong(0))
          writer.write(1, row.getLong(1))
          writer.write(2, f(row.getBinary(2)))
          subs.put(k, FamilyCodec.rowBytes(writer.getRow, 0)) // a copy: the writer reuses its buffer
        }
      finally it.close()
    }

  val Cf = "kstate_fk_subscriptions"
  private val ValueSchema = StructType(Seq(
    StructField("version", LongType, nullable = false),
    StructField("timestamp", LongType, nullable = false),
    StructField("value", BinaryType, nullable = false)
  ))
}
