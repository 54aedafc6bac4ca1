package org.apache.spark.sql.kstate.processor.join

import org.apache.spark.sql.kstate.processor.Metric

/** What a [[TableTableJoinProcessor]] counts; the reported ones are the operator's custom metrics. */
object TableTableJoinMetrics extends TableTableJoinMetricSet {

  /** Updates stored with no result: the other side had no value and the kind needs one. */
  val NoMatch: Metric = tally("noMatch")

  /** Gauges, set at the end of each task when the join materializes its tables itself (else 0). */
  val LeftTableVersions: Metric = sum(
    "leftTableVersions",
    "versions the left table holds at the end of the micro-batch when the join stores it (0 if unversioned)"
  )
  val RightTableVersions: Metric = sum(
    "rightTableVersions",
    "versions the right table holds at the end of the micro-batch when the join stores it (0 if unversioned)"
  )
}
