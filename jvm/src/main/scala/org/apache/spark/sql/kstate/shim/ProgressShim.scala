package org.apache.spark.sql.kstate.shim

import org.apache.spark.sql.streaming.StateOperatorProgress

/** Builds [[StateOperatorProgress]] (its constructor is Spark-internal and version-specific). */
object ProgressShim {
  def withCustomMetrics(
      p: StateOperatorProgress, custom: java.util.Map[String, java.lang.Long]): StateOperatorProgress =
    new StateOperatorProgress(
      p.operatorName, p.numRowsTotal, p.numRowsUpdated, p.allUpdatesTimeMs, p.numRowsRemoved,
      p.allRemovalsTimeMs, p.commitTimeMs, p.memoryUsedBytes, p.numRowsDroppedByWatermark,
      p.numShufflePartitions, p.numStateStoreInstances, custom, p.snapshotCustomMetricNames)
}
