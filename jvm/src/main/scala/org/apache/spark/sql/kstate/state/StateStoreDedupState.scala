package org.apache.spark.sql.kstate.state

import io.kstate.dedup.DedupState

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.types.{LongType, StructField, StructType}

/**
 * [[DedupState]] on a Spark [[StateStore]] with column families: default = identity -> (ts);
 * an [[ExpiryIndex]] on ts for purging; [[StateMeta]] for stream time and the entry count.
 */
final class StateStoreDedupState(store: StateStore, identitySchema: StructType)
  extends DedupState[UnsafeRow] {

  private val meta = new StateMeta(store)
  private val index = new ExpiryIndex(store, identitySchema)
  private val tsWriter = new UnsafeRowWriter(1)
  private var entries: Long = meta.get(StateMeta.Entries, 0L)
  private var streamTimeVar: Long = meta.get(StateMeta.StreamTime, DedupState.NoStreamTime)

  private def tsRow(ts: Long): UnsafeRow = {
    tsWriter.reset(); tsWriter.zeroOutNullBytes(); tsWriter.write(0, ts); tsWriter.getRow
  }

  override def streamTime: Long = streamTimeVar
  override def streamTime_=(t: Long): Unit = {
    streamTimeVar = t
    meta.put(StateMeta.StreamTime, t)
    meta.put(StateMeta.Entries, entries)
  }

  override def get(identity: UnsafeRow): Long = {
    val v = store.get(identity)
    if (v == null) DedupState.NoEntry else v.getLong(0)
  }

  override def put(identity: UnsafeRow, ts: Long): Unit = {
    if (get(identity) == DedupState.NoEntry) entries += 1
    store.put(identity, tsRow(ts))
    index.add(ts, identity)
  }

  override def purgeOlderThan(bound: Long): Long = {
    var removed = 0L
    index.drainBefore(bound) { (ts, identity) =>
      if (get(identity) == ts) {
        store.remove(identity)
        removed += 1
      }
    }
    entries -= removed
    removed
  }

  override def numEntries: Long = entries
}

object StateStoreDedupState {
  val ValueSchema: StructType = StructType(Seq(StructField("ts", LongType, nullable = false)))
}
