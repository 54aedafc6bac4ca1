package org.apache.spark.sql.execution.streaming.state

import java.util.UUID

import org.apache.spark.SparkEnv

/**
 * What Spark's state store coordinator knows of a store's snapshots, for kstate's tests. In
 * Spark's package because the coordinator's query for it is `private[state]`.
 */
object KStateSnapshotReports {

  /** The newest snapshot version reported for store `partition` of operator `operatorId` under `root`. */
  def latest(root: String, operatorId: Long, partition: Int, runId: UUID): Option[Long] =
    StateStoreCoordinatorRef.forExecutor(SparkEnv.get)
      .getLatestSnapshotVersionForTesting(StateStoreProviderId(StateStoreId(root, operatorId, partition), runId))
}
