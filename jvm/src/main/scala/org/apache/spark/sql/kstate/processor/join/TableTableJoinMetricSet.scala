package org.apache.spark.sql.kstate.processor.join

import org.apache.spark.sql.kstate.processor.{Metric, MetricSet}

/**
 * The metrics every table–table join counts, primary-key ([[TableTableJoinMetrics]]) and
 * foreign-key ([[ForeignKeyJoinMetrics]]) alike, declared once.
 */
abstract class TableTableJoinMetricSet extends MetricSet {
  val JoinResults: Metric = sum("joinResults", "join results emitted (tombstones included)")
  val OutOfOrderIgnored: Metric =
    sum("outOfOrderRecordsIgnored", "out-of-order updates of a versioned side: stored, no join result (KIP-914)")
  val LateDropped: Metric =
    sum("lateRecordsDropped", "updates a versioned side did not store (older than its stream time - grace)")
  val NullKeys: Metric = sum("nullKeysDropped", "updates dropped: null key")
  val NullTimestamps: Metric = sum("nullTimestampsDropped", "updates dropped: null timestamp")
}
