package org.apache.spark.sql.kstate.processor.join

import org.apache.spark.sql.kstate.processor.{Metric, MetricSet}

/** What a [[StreamTableJoinProcessor]] counts; the reported ones are the operator's custom metrics. */
object StreamTableJoinMetrics extends MetricSet {
  val JoinResults: Metric = sum("joinResults", "join results emitted (left join: with or without a table match)")
  val UnmatchedResults: Metric = sum("unmatchedResults", "left join results emitted with a null table value")
  val Lookups: Metric = sum("tableLookups", "table lookups (one per stream record joined)")
  val LookupsPastRetention: Metric = sum(
    "lookupsPastHistoryRetention",
    "as-of lookups older than the table's stream time - history retention (only the key's latest version can match)"
  )
  val Buffered: Metric = sum("streamRecordsBuffered", "stream records held back by the join's grace period")
  val Released: Metric = sum(
    "bufferedRecordsJoined",
    "buffered stream records joined once stream time reached their timestamp + grace"
  )
  val LateJoinedAtOnce: Metric = sum(
    "lateRecordsJoinedAtOnce",
    "stream records older than stream time - grace, joined at once instead of buffered"
  )
  val NoMatchDropped: Metric = sum("noMatchDropped", "stream records dropped by an inner join: no table value")
  val NullKeysDropped: Metric = sum("nullKeysDropped", "stream records dropped by an inner join: null key")
  val NullTimestampsDropped: Metric =
    sum("nullTimestampsDropped", "stream records dropped by an inner join: null timestamp")
  val NullKeysForwarded: Metric = sum("nullKeysForwarded", "stream records with a null key, left-joined with null")
  val NullTimestampsForwarded: Metric =
    sum("nullTimestampsForwarded", "stream records with a null timestamp, left-joined with null")
  val TableUpdates: Metric = sum("tableUpdates", "table updates stored")
  val TableUpdatesIntoHistory: Metric =
    sum("tableUpdatesIntoHistory", "versioned table updates older than the key's latest version (stored as history)")
  val TableUpdatesExpired: Metric = sum(
    "tableUpdatesExpired",
    "versioned table updates dropped: older than the table's stream time - its grace period"
  )
  val TableNullKeysDropped: Metric = sum("tableNullKeysDropped", "table updates dropped: null key")
  val TableNullTimestampsDropped: Metric = sum("tableNullTimestampsDropped", "table updates dropped: null timestamp")
  val TableVersionsCleaned: Metric = sum(
    "tableVersionsCleaned",
    "versioned table entries deleted past the history retention (counted by the exec, not the processor)"
  )
  val BufferRecords: Metric = sum("bufferRecords", "stream records in the grace buffer at the end of the micro-batch")
  val BufferRecordsMax: Metric = max(
    "bufferRecordsMax",
    "most stream records in a partition's grace buffer during the micro-batch (the largest over partitions)"
  )

  /** A gauge: set by the exec at the end of each task, summed over state partitions. */
  val TableVersions: Metric = sum(
    "tableVersions",
    "versions the join's copy of a versioned table holds at the end of the micro-batch, tombstones included (0 if unversioned)"
  )
}
