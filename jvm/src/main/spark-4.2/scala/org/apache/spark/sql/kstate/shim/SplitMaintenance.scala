package org.apache.spark.sql.kstate.shim

import org.apache.spark.sql.execution.streaming.state.StateStoreProvider

/**
 * How Spark's maintenance thread reaches a state store provider's maintenance. Spark 4.2 version.
 *
 * The Spark change: 4.3 split `StateStoreProvider.doMaintenance()` into `doSnapshotMaintenance()`
 * and `doCleanupMaintenance()`, called separately by its periodic maintenance task (see the 4.3
 * version in jvm/src/main/spark-4.3). 4.2 has neither method: its maintenance task calls
 * `doMaintenance()`, which the provider implements as both halves, so nothing is routed here.
 */
trait SplitMaintenance extends StateStoreProvider {
  /** Writes the snapshot that is due, if any. */
  protected def snapshotMaintenance(): Unit
  /** Deletes the files no retained version needs. */
  protected def cleanupMaintenance(): Unit
}
