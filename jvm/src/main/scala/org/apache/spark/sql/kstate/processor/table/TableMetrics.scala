package org.apache.spark.sql.kstate.processor.table

import org.apache.spark.sql.kstate.processor.{Metric, MetricSet}

/**
 * What a table's source ([[TableSourceProcessor]]), filter ([[TableFilterProcessor]]) and
 * map-values ([[TableMapValuesProcessor]]) count; the reported ones are the operator's custom
 * metrics. One set for the three, so that a table operator fusing them reports one list.
 */
object TableMetrics extends MetricSet {
  val Updates: Metric = sum("tableUpdates", "table updates applied to the table's state")
  val UpdatesNotPut: Metric = sum(
    "tableUpdatesNotPut",
    "table updates dropped: older than stream time - grace (versioned tables)"
  )
  val Tombstones: Metric = sum("tableTombstones", "table updates with a null value (deletes) applied")
  val VersionsStored: Metric = sum("tableVersionsStored", "versions stored by table updates")
  val OutOfOrderUpdates: Metric = sum(
    "tableOutOfOrderUpdates",
    "table updates stored as history: older than their key's latest version (versioned tables)"
  )
  val NullKeysDropped: Metric = sum("tableNullKeysDropped", "table updates with a null key dropped")
  val NullTimestampsDropped: Metric = sum("tableNullTimestampsDropped", "table updates with a null timestamp dropped")
  val DuplicateTombstonesDropped: Metric = sum(
    "tableDuplicateTombstonesDropped",
    "filter results dropped: a tombstone after a tombstone (unversioned tables)"
  )

  /** A gauge: set by the exec at the end of each task, summed over state partitions. */
  val Versions: Metric = sum(
    "tableVersions",
    "versions the versioned table holds at the end of the micro-batch, tombstones included (0 if unversioned)"
  )
}
