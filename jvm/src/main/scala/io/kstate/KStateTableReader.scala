package io.kstate

import java.time.Instant

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.kstate.reader.TableReader

/**
 * Reads a versioned table from outside its query: the rows of the table materialized by
 * `toTable(..., versioned = ..., name = name)` in a streaming query's checkpoint, as they were at
 * a time (Kafka's versioned key queries, KIP-914/KIP-960), while the query runs or after it stopped.
 *
 * Contract:
 *  - Rows: one per key that has a value as of `asOf`: the version with the largest timestamp
 *    <= `asOf` (inclusive), unless that version is a tombstone; `asOf` None: each key's latest
 *    value. Columns: the table's key column, its value columns, its timestamp column (the
 *    version's timestamp, the time it is valid from), named and typed as in the query.
 *  - Past the history retention (`asOf` < the state partition's stream time − history retention)
 *    a key answers only with its latest version, if that version's timestamp <= `asOf` (Kafka's
 *    rule: a key's latest version never expires), as lookups in the query do.
 *  - `asOf` is an event time in epoch milliseconds (for a TIMESTAMP_NTZ table: of its wall clock
 *    read as UTC), or, with [[readTableAt]], a timestamp string.
 *  - State: the state as the latest micro-batch in the checkpoint's `commits/` committed it (a
 *    batch still running is never seen, nor half of one), read with kstate's store provider, one
 *    Spark task per state partition; nothing is written.
 *  - Errors ([[KStateException]]) are raised by this call: `KSTATE_CHECKPOINT_NOT_FOUND` (no
 *    such directory), `KSTATE_STATE_NOT_FOUND` (no committed batch yet),
 *    `KSTATE_TABLE_NOT_FOUND` (no table of that name; the message lists the tables there),
 *    `KSTATE_TABLE_NOT_VERSIONED`, `KSTATE_INVALID_STATE_READ` (empty arguments, a string that is
 *    not a timestamp).
 *  - Lazy and repeatable: the committed batch is chosen by this call; each action reads its state
 *    files again (a version older than the retained batches fails then).
 */
object KStateTableReader {

  /** The table as of `asOfMs` (epoch ms), or its latest values (None). */
  def readTable(
      spark: SparkSession,
      checkpointLocation: String,
      name: String,
      asOfMs: Option[Long] = None
  ): DataFrame =
    TableReader.read(spark, checkpointLocation, name, asOfMs)

  /** The table as of an instant. */
  def readTable(spark: SparkSession, checkpointLocation: String, name: String, asOf: Instant): DataFrame =
    TableReader.read(spark, checkpointLocation, name, Some(asOf.toEpochMilli))

  /**
   * The table as of a timestamp string (`2026-11-24 10:00:00`, `2026-11-24T10:00:00.250Z`, the
   * forms of `CAST(... AS TIMESTAMP)`), in its own zone if it has one, else the session time zone
   * (`spark.sql.session.timeZone`); for a TIMESTAMP_NTZ table, its wall clock.
   */
  def readTableAt(spark: SparkSession, checkpointLocation: String, name: String, asOf: String): DataFrame =
    TableReader.readAt(spark, checkpointLocation, name, asOf)
}
