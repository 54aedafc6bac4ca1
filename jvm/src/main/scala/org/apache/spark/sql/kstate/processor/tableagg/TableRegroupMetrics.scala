package org.apache.spark.sql.kstate.processor.tableagg

import org.apache.spark.sql.kstate.processor.{Metric, MetricSet}

/**
 * What stage 1 of a table aggregation counts: the table source it runs on (records dropped for a
 * null key or timestamp, or not stored by a versioned table) and [[TableRegroupProcessor]].
 */
object TableRegroupMetrics extends MetricSet {
  val NullKeys: Metric = sum("nullKeysDropped", "table records dropped: null key")
  val NullTimestamps: Metric = sum("nullTimestampsDropped", "table records dropped: null timestamp")
  val NotPut: Metric = sum(
    "recordsPastGraceDropped",
    "table records dropped: older than stream time - grace (versioned table did not store them)"
  )
  val OutOfOrderIgnored: Metric = sum(
    "outOfOrderRecordsIgnored",
    "out-of-order table records ignored (versioned table: not the latest version of their key)"
  )
  val NoGroup: Metric = sum(
    "noGroupValuesSkipped",
    "old or new table values skipped: their selected group key or value is null"
  )
  val GroupChanges: Metric = sum("groupChangesSent", "subtract/add records sent to the groups")
}
