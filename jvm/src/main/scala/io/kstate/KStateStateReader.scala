package io.kstate

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.kstate.reader.{OperatorSelector, StateReader}

/**
 * kstate's state reader: the state a kstate operator kept in a streaming query's checkpoint, as
 * a batch DataFrame, whatever `spark.sql.streaming.stateStore.providerClass` the query ran with.
 *
 * Spark's `spark.read.format("statestore")` opens every operator's state with the query-wide
 * provider recorded in the checkpoint, so it reads kstate operators' state only when the query
 * ran with kstate's provider query-wide. This reader opens each operator's state with the
 * provider that wrote it.
 *
 * Contract:
 *  - Rows: one per entry of the operator's default column family, on every state partition,
 *    with the schema of Spark's `statestore` source: `key STRUCT<...>, value STRUCT<...>,
 *    partition_id INT`; key and value have the schemas recorded in the operator's state schema
 *    file. kstate's other column families (stream time, counters, indexes) are not read.
 *  - Version: the state as micro-batch `batchId` committed it (state version `batchId + 1`);
 *    by default the latest committed batch of the checkpoint's `commits/` log.
 *  - Provider: the one recorded in the operator's configuration at its first micro-batch (from
 *    `spark.kstate.stateStore.providerClass`), else kstate's `io.kstate.KStateStoreProvider`.
 *  - Errors ([[KStateException]]) are raised by this call, not when the DataFrame is collected:
 *    `KSTATE_STATE_NOT_FOUND` when the checkpoint has no committed batch, `batchId` is not a
 *    committed batch, no kstate operator of that name or id has state there (the message lists
 *    the ones that do), or the operator has no store `storeName`; `KSTATE_INVALID_STATE_READ`
 *    for a negative batch id or an empty location, name or store name. State files missing or
 *    corrupt (e.g. older than the retained batches) fail when the DataFrame is computed, with
 *    the provider's errors (`KSTATE_STATE_FILE_MISSING`, ...).
 *  - Read-only: no state file is written; a running query may keep writing the checkpoint.
 *  - Lazy and repeatable: each action reads the files again.
 */
object KStateStateReader {

  /** The store every kstate operator keeps its state in. */
  val DefaultStoreName: String = org.apache.spark.sql.kstate.reader.StateReadTarget.DefaultStoreName

  /**
   * Reads the state of the kstate operator named `operatorName`: its `name=`, or `<kind>-<n>`
   * (e.g. `deduplicate_by_key-0`) for an unnamed operator.
   */
  def readState(
      spark: SparkSession,
      checkpointLocation: String,
      operatorName: String,
      batchId: Option[Long] = None,
      storeName: String = DefaultStoreName
  ): DataFrame =
    StateReader.read(
      spark,
      checkpointLocation,
      OperatorSelector.ByName(operatorName),
      batchId,
      storeName
    )

  /**
   * Reads the state of the kstate operator with Spark operator id `operatorId`, as listed by
   * `spark.read.format("state-metadata")`.
   */
  def readStateById(
      spark: SparkSession,
      checkpointLocation: String,
      operatorId: Long,
      batchId: Option[Long] = None,
      storeName: String = DefaultStoreName
  ): DataFrame =
    StateReader.read(
      spark,
      checkpointLocation,
      OperatorSelector.ById(operatorId),
      batchId,
      storeName
    )
}
