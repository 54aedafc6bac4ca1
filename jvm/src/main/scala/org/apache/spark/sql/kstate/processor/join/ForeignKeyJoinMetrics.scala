package org.apache.spark.sql.kstate.processor.join

import org.apache.spark.sql.kstate.processor.{Metric, MetricSet}

/** What the foreign-key join's processors count (both stages: one operator's metrics). */
object ForeignKeyJoinMetrics extends MetricSet {
  val JoinResults: Metric = sum("joinResults", "join results emitted (tombstones included)")
  val Responses: Metric = sum("responses", "responses sent from the right table's stage to the left key's stage")
  val StaleResponses: Metric =
    sum("staleResponsesDropped", "responses dropped: a newer left value of their key was already resolved")
  val OutOfOrderIgnored: Metric =
    sum("outOfOrderRecordsIgnored", "out-of-order updates of a versioned side: stored, no join result (KIP-914)")
  val LateDropped: Metric =
    sum("lateRecordsDropped", "updates a versioned side did not store (older than its stream time - grace)")
  val NullForeignKeys: Metric =
    sum("nullForeignKeys", "left updates whose foreign key is null (inner join: no subscription)")
  val NullKeys: Metric = sum("nullKeysDropped", "updates dropped: null key")
  val NullTimestamps: Metric = sum("nullTimestampsDropped", "updates dropped: null timestamp")
  val Subscriptions: Metric = sum("subscriptions", "stored subscriptions at the end of the micro-batch")
}
