package org.apache.spark.sql.kstate.processor.join

import org.apache.spark.sql.kstate.processor.Metric

/** What the foreign-key join's processors count (both stages: one operator's metrics). */
object ForeignKeyJoinMetrics extends TableTableJoinMetricSet {
  val Responses: Metric = sum("responses", "responses sent from the right table's stage to the left key's stage")
  val StaleResponses: Metric =
    sum("staleResponsesDropped", "responses dropped: a newer left value of their key was already resolved")
  val NullForeignKeys: Metric =
    sum("nullForeignKeys", "left updates whose foreign key is null (inner join: no subscription)")
  val Subscriptions: Metric = sum("subscriptions", "stored subscriptions at the end of the micro-batch")
}
