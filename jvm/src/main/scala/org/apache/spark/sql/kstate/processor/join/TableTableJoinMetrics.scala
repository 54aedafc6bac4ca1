package org.apache.spark.sql.kstate.processor.join

import org.apache.spark.sql.kstate.processor.Metric

/** What a [[TableTableJoinProcessor]] counts; the reported ones are the operator's custom metrics. */
object TableTableJoinMetrics extends TableTableJoinMetricSet {

  /** Updates stored with no result: the other side had no value and the kind needs one. */
  val NoMatch: Metric = tally("noMatch")
}
