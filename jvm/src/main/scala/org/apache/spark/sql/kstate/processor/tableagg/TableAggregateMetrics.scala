package org.apache.spark.sql.kstate.processor.tableagg

import org.apache.spark.sql.kstate.processor.{Metric, MetricSet}

/** What stage 2 of a table aggregation ([[TableAggregateProcessor]]) counts. */
object TableAggregateMetrics extends MetricSet {
  val Updates: Metric = sum("groupUpdatesEmitted", "group aggregates emitted (tombstones included)")
  val Deleted: Metric = sum("groupsDeleted", "group aggregates deleted (a tombstone emitted)")
  val SubtractsSkipped: Metric = sum(
    "subtractsWithoutAggregate",
    "values not subtracted: their group had no aggregate (it was deleted)"
  )
  val NotPut: Metric = sum(
    "aggregatesNotStored",
    "aggregates not stored nor emitted: a versioned result store rejected them (past its grace)"
  )
}
