package org.apache.spark.sql.kstate.processor.table

import org.apache.spark.sql.kstate.processor.{Metric, MetricSet}

/** What a table's source counts (`to_table`); the reported ones are the operator's custom metrics. */
object TableSourceMetrics extends MetricSet {
  val Updates: Metric = sum("tableUpdates", "table updates stored (values and tombstones)")
  val Tombstones: Metric = sum("tableTombstones", "tombstones among the updates stored (all value columns null)")
  val OutOfOrder: Metric = sum("outOfOrderUpdates",
    "versioned tables: updates stored into history, older than their key's latest version")
  val NotPut: Metric = sum("updatesNotPut",
    "versioned tables: updates dropped, older than the table's stream time - grace")
  val NullKeys: Metric = sum("nullKeysDropped", "updates dropped: null key")
  val NullTimestamps: Metric = sum("nullTimestampsDropped", "updates dropped: null timestamp")
  val VersionsCleaned: Metric = sum("versionsCleanedUp", "versioned tables: versions removed past the history retention")
}
