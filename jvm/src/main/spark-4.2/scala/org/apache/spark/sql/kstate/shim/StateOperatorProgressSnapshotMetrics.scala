package org.apache.spark.sql.kstate.shim

import org.apache.spark.sql.streaming.StateOperatorProgress

/**
 * Builds a [[StateOperatorProgress]] with kstate's custom metrics (its constructor is
 * Spark-internal). Spark 4.2 version.
 *
 * The Spark change: 4.3 added `snapshotCustomMetricNames` to `StateOperatorProgress` (a 13th
 * constructor argument); 4.2's constructor has the 12 arguments below and no snapshot names, so
 * there is nothing to carry over. The 4.3 version is in jvm/src/main/spark-4.3.
 */
object StateOperatorProgressSnapshotMetrics {
  def withCustomMetrics(
      p: StateOperatorProgress, custom: java.util.Map[String, java.lang.Long]): StateOperatorProgress =
    new StateOperatorProgress(
      p.operatorName, p.numRowsTotal, p.numRowsUpdated, p.allUpdatesTimeMs, p.numRowsRemoved,
      p.allRemovalsTimeMs, p.commitTimeMs, p.memoryUsedBytes, p.numRowsDroppedByWatermark,
      p.numShufflePartitions, p.numStateStoreInstances, custom)
}
