package org.apache.spark.sql.kstate.operatorstate

import org.apache.spark.sql.kstate.provider.KStateStore

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.kstate.processor.table.TableState
import org.apache.spark.sql.kstate.processor.table.TableState.Versioned
import org.apache.spark.sql.kstate.operatorstate.{VersionedKeyValueStore, VersionedRecord}

/**
 * A versioned [[TableState]] on kstate's [[VersionedKeyValueStore]] (column families
 * `kstate_vs_<name>_*` of a [[KStateStore]]): keys and values are UnsafeRows stored as their bytes
 * (`valueFields` fields per value row). The store's rules are the contract's; its stream time is
 * persisted by the store when it commits. [[cleanup]] drops the history past retention (call
 * once per task, at its end). Rows returned are fresh. Not thread-safe; one per task.
 */
final class StoreVersionedTableState(
    store: KStateStore,
    name: String,
    historyRetentionMs: Long,
    graceMs: Long,
    valueFields: Int
) extends TableState[UnsafeRow, UnsafeRow] {
  private val vs = new VersionedKeyValueStore(store, name, historyRetentionMs, graceMs)

  override def versioned: Boolean = true
  override def streamTime: Long = vs.observedStreamTime
  override def numVersions: Long = vs.numVersions

  override def put(key: UnsafeRow, value: UnsafeRow, ts: Long): Long =
    vs.put(key.getBytes, if (value == null) null else value.getBytes, ts)

  override def get(key: UnsafeRow): Versioned[UnsafeRow] = of(vs.get(key.getBytes))
  override def getAsOf(key: UnsafeRow, asOf: Long): Versioned[UnsafeRow] = of(vs.get(key.getBytes, asOf))

  /** Deletes versions past the history retention; returns how many entries it removed. */
  def cleanup(): Int = vs.cleanup()

  private def of(r: VersionedRecord): Versioned[UnsafeRow] =
    if (r == null) null
    else {
      val row = new UnsafeRow(valueFields)
      row.pointTo(r.value, r.value.length)
      Versioned(row, r.timestamp)
    }
}
