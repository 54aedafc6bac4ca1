package org.apache.spark.sql.kstate.state

import scala.collection.mutable

import io.kstate.dedup.DedupState

import org.apache.spark.sql.catalyst.expressions.{BoundReference, JoinedRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter
import org.apache.spark.sql.execution.streaming.state.{NoPrefixKeyStateEncoderSpec, RangeKeyScanStateEncoderSpec, StateStore}
import org.apache.spark.sql.types.{BooleanType, IntegerType, LongType, StructField, StructType}

/**
 * [[DedupState]] on one Spark [[StateStore]] with three column families:
 *  - default:        identity -> (ts)                entries, point lookups
 *  - kstate_expiry:  (ts, identity) -> (present)     time index, range-scanned to purge
 *  - kstate_meta:    (slot) -> (value)               stream time and entry count
 * The expiry index turns a purge into a scan of expired entries only (KIP-655's index).
 */
final class StateStoreDedupState(store: StateStore, identitySchema: StructType)
  extends DedupState[UnsafeRow] {
  import StateStoreDedupState._

  private val expirySchema = StructType(StructField("ts", LongType, nullable = false) +:
    identitySchema.fields)

  store.createColFamilyIfAbsent(ExpiryCf, expirySchema, PresentSchema,
    RangeKeyScanStateEncoderSpec(expirySchema, Seq(0)))
  store.createColFamilyIfAbsent(MetaCf, MetaKeySchema, MetaValueSchema,
    NoPrefixKeyStateEncoderSpec(MetaKeySchema))

  private val longWriter = new UnsafeRowWriter(1)
  private def longRow(v: Long): UnsafeRow = {
    longWriter.reset(); longWriter.zeroOutNullBytes(); longWriter.write(0, v); longWriter.getRow
  }
  private val intWriter = new UnsafeRowWriter(1)
  private def slotRow(slot: Int): UnsafeRow = {
    intWriter.reset(); intWriter.zeroOutNullBytes(); intWriter.write(0, slot); intWriter.getRow
  }
  private val presentRow: UnsafeRow = {
    val w = new UnsafeRowWriter(1); w.reset(); w.zeroOutNullBytes(); w.write(0, true); w.getRow
  }
  private val joined = new JoinedRow()
  private val toExpiryKey = UnsafeProjection.create(expirySchema)
  private val identityOfExpiryKey = UnsafeProjection.create(
    identitySchema.fields.indices.map(i =>
      BoundReference(i + 1, identitySchema.fields(i).dataType, nullable = true)))

  private def readMeta(slot: Int, default: Long): Long =
    Option(store.get(slotRow(slot), MetaCf)).map(_.getLong(0)).getOrElse(default)

  private def writeMeta(slot: Int, v: Long): Unit =
    store.put(slotRow(slot), longRow(v).copy(), MetaCf)

  private var entries: Long = readMeta(EntriesSlot, 0L)
  private var streamTimeVar: Long = readMeta(StreamTimeSlot, DedupState.NoStreamTime)

  override def streamTime: Long = streamTimeVar
  override def streamTime_=(t: Long): Unit = {
    streamTimeVar = t
    writeMeta(StreamTimeSlot, t)
    writeMeta(EntriesSlot, entries)
  }

  override def get(identity: UnsafeRow): Long = {
    val v = store.get(identity)
    if (v == null) DedupState.NoEntry else v.getLong(0)
  }

  override def put(identity: UnsafeRow, ts: Long): Unit = {
    if (get(identity) == DedupState.NoEntry) entries += 1
    store.put(identity, longRow(ts))
    store.put(toExpiryKey(joined(longRow(ts), identity)), presentRow, ExpiryCf)
  }

  override def purgeOlderThan(bound: Long): Long = {
    val expired = mutable.ArrayBuffer.empty[UnsafeRow]
    val it = store.iterator(ExpiryCf)
    try {
      var done = false
      while (!done && it.hasNext) {
        val key = it.next().key
        if (key.getLong(0) < bound) expired += key.copy() else done = true
      }
    } finally it.close()
    var removed = 0L
    expired.foreach { key =>
      val identity = identityOfExpiryKey(key)
      if (get(identity) == key.getLong(0)) {
        store.remove(identity)
        removed += 1
      }
      store.remove(key, ExpiryCf)
    }
    entries -= removed
    removed
  }

  override def numEntries: Long = entries
}

object StateStoreDedupState {
  val ExpiryCf = "kstate_expiry"
  val MetaCf = "kstate_meta"
  private val StreamTimeSlot = 0
  private val EntriesSlot = 1
  val ValueSchema: StructType = StructType(Seq(StructField("ts", LongType, nullable = false)))
  private val PresentSchema = StructType(Seq(StructField("present", BooleanType)))
  private val MetaKeySchema = StructType(Seq(StructField("slot", IntegerType, nullable = false)))
  private val MetaValueSchema = StructType(Seq(StructField("value", LongType, nullable = false)))
}
