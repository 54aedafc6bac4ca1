package org.apache.spark.sql.kstate.operatorstate

import scala.collection.mutable

import org.apache.spark.sql.kstate.processor.StreamTime
import org.apache.spark.sql.kstate.provider.KStateStore
import org.apache.spark.sql.kstate.processor.dedup.DedupState

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.types.{LongType, StructField, StructType}

/**
 * [[DedupState]] on a Spark [[StateStore]]: the default column family maps identity -> (ts);
 * [[StateMeta]] keeps stream time, the entry count and the last purge bound.
 *
 * Purging is an amortised sweep: a scan of the entries, run only once the purge bound has moved
 * `sweepStepMs` past the previous sweep's bound. Every entry lives at least one interval, so with
 * the step set to the interval each entry is read about once per interval of stream time and an
 * expired entry lingers at most one step. This costs one sequential read per entry and interval,
 * where a time index costs an index write, an index delete and a lookup per entry: cheaper for
 * deduplication's one-entry-per-identity state. Expired entries behave as absent meanwhile.
 * On kstate's own store the sweep is `KStateStore.removeWhere`, which reads the stored bytes
 * and removes by them, without decoding, copying and encoding every key again; on another
 * provider it iterates and removes through Spark's API.
 */
final class StoreDedupState(store: StateStore, identitySchema: StructType, sweepStepMs: Long)
    extends DedupState[UnsafeRow] {

  private val meta = new StateMeta(store)
  private val tsWriter = new UnsafeRowWriter(1)
  private var entries: Long = meta.get(StateMeta.Entries, 0L)
  private var streamTimeVar: Long = meta.get(StateMeta.StreamTime, StreamTime.Unknown)
  private var lastSweep: Long = meta.get(StateMeta.LastPurgeBound, Long.MinValue)

  private def tsRow(ts: Long): UnsafeRow = {
    tsWriter.reset(); tsWriter.zeroOutNullBytes(); tsWriter.write(0, ts); tsWriter.getRow
  }

  override def streamTime: Long = streamTimeVar
  override def streamTime_=(t: Long): Unit = {
    streamTimeVar = t
    meta.put(StateMeta.StreamTime, t)
    meta.put(StateMeta.Entries, entries)
    meta.put(StateMeta.LastPurgeBound, lastSweep)
  }

  override def get(identity: UnsafeRow): Long = {
    val v = store.get(identity)
    if (v == null) DedupState.NoEntry else v.getLong(0)
  }

  override def put(identity: UnsafeRow, ts: Long, replaces: Boolean): Unit = {
    if (!replaces) entries += 1
    store.put(identity, tsRow(ts))
  }

  private def sweepDue(bound: Long): Boolean =
    lastSweep == Long.MinValue || bound < lastSweep ||
      bound >= (if (lastSweep > Long.MaxValue - sweepStepMs) Long.MaxValue else lastSweep + sweepStepMs)

  override def purgeOlderThan(bound: Long): Long = {
    if (bound == Long.MinValue || !sweepDue(bound)) return 0L
    lastSweep = bound
    val purged = store match {
      case own: KStateStore => own.removeWhere(StateStore.DEFAULT_COL_FAMILY_NAME)(_.getLong(0) < bound)
      case other => sweep(other, bound)
    }
    entries -= purged
    purged
  }

  /** The sweep on any provider: collect the expired keys, then remove them. */
  private def sweep(store: StateStore, bound: Long): Long = {
    val expired = mutable.ArrayBuffer.empty[UnsafeRow]
    val it = store.iterator()
    try {
      while (it.hasNext) {
        val pair = it.next()
        if (pair.value.getLong(0) < bound) expired += pair.key.copy()
      }
    } finally it.close()
    expired.foreach(k => store.remove(k))
    expired.length.toLong
  }

  override def numEntries: Long = entries
}

object StoreDedupState {
  val ValueSchema: StructType = StructType(Seq(StructField("ts", LongType, nullable = false)))
}
