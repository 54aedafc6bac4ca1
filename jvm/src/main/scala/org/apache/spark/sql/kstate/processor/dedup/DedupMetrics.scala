package org.apache.spark.sql.kstate.processor.dedup

import org.apache.spark.sql.kstate.processor.{Metric, MetricSet}

/** What a [[DedupProcessor]] counts; the reported ones are the operator's custom metrics. */
object DedupMetrics extends MetricSet {
  val DuplicatesDropped: Metric = sum("duplicatesDropped", "duplicates dropped")
  val LateForwarded: Metric = sum("lateRecordsForwarded", "late records forwarded (no duplicate stored)")
  val NullKeysForwarded: Metric = sum("nullKeysForwarded", "records with a null key/id forwarded")
  val NullTimestampsForwarded: Metric = sum("nullTimestampsForwarded", "records with a null timestamp forwarded")
  val StoredEntries: Metric = sum("storedEntries", "stored deduplication entries")
  val Forwarded: Metric = tally("forwarded")

  /** Expired entries removed: by a purge, or replaced by a new entry for their identity. */
  val EntriesPurged: Metric = tally("entriesPurged")
  val EntriesStored: Metric = tally("entriesStored")
}
