package org.apache.spark.sql.kstate.shim

import org.apache.spark.sql.execution.streaming.state.StateStoreProvider

/**
 * How Spark's maintenance thread reaches a state store provider's maintenance. Spark 4.3 version.
 *
 * The Spark change: 4.3 split `StateStoreProvider.doMaintenance()` into `doSnapshotMaintenance()`
 * and `doCleanupMaintenance()`, which its periodic maintenance task calls as two separate pieces of
 * work (both no-ops by default); `doMaintenance()` is called only when a provider is unloaded. 4.2
 * has neither method and calls `doMaintenance()` periodically. A provider that overrides only
 * `doMaintenance()` is, on 4.3, never snapshotted nor cleaned up while its query runs (found by the
 * upgrade fixtures, docs/upgrades.md: on 4.3 kstate wrote no snapshot and deleted no old file
 * however long a query ran). The provider implements the two halves; this trait routes 4.3's calls
 * to them. The 4.2 version, in jvm/src/main/spark-4.2, routes nothing: 4.2 calls `doMaintenance()`,
 * which does both.
 */
trait SplitMaintenance extends StateStoreProvider {

  /** Writes the snapshot that is due, if any. */
  protected def snapshotMaintenance(): Unit

  /** Deletes the files no retained version needs. */
  protected def cleanupMaintenance(): Unit

  override def doSnapshotMaintenance(): Unit = snapshotMaintenance()
  override def doCleanupMaintenance(): Unit = cleanupMaintenance()
}
