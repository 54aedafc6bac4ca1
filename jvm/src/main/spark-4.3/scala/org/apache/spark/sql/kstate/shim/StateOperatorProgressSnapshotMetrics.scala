package org.apache.spark.sql.kstate.shim

import org.apache.spark.sql.streaming.StateOperatorProgress

/**
 * Builds a [[StateOperatorProgress]] with kstate's custom metrics (its constructor is
 * Spark-internal). Spark 4.3 version.
 *
 * The Spark change: 4.3 added `snapshotCustomMetricNames` to `StateOperatorProgress` (a 13th
 * constructor argument: the names of the custom metrics that are snapshots, reported as such
 * rather than summed); 4.2's constructor has 12 arguments and no such field. kstate copies
 * every field of Spark's progress and replaces only the custom metrics, so on 4.3 it keeps
 * Spark's snapshot names. The 4.2 version is in jvm/src/main/spark-4.2.
 */
object StateOperatorProgressSnapshotMetrics {
  def withCustomMetrics(
      p: StateOperatorProgress,
      custom: java.util.Map[String, java.lang.Long]
  ): StateOperatorProgress =
    new StateOperatorProgress(
      p.operatorName,
      p.numRowsTotal,
      p.numRowsUpdated,
      p.allUpdatesTimeMs,
      p.numRowsRemoved,
      p.allRemovalsTimeMs,
      p.commitTimeMs,
      p.memoryUsedBytes,
      p.numRowsDroppedByWatermark,
      p.numShufflePartitions,
      p.numStateStoreInstances,
      custom,
      p.snapshotCustomMetricNames
    )
}
