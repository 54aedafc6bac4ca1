package org.apache.spark.sql.kstate.errors

import org.apache.spark.sql.kstate.config.KStateConf
import io.kstate.ArgumentErrors
import io.kstate.KStateException
import io.kstate.BuildInfo

/**
 * The error hub of kstate's internals: every kstate error but the public value types' argument
 * errors ([[io.kstate.ArgumentErrors]]) is made here, nowhere else. Each method names one error
 * condition of `python/kstate/error_conditions.json` and fills its message template's parameters
 * (the JSON holds the text; a method only computes the values). `KStateErrorsSuite` calls every
 * method and checks that its condition exists and that the parameters it passes are exactly the
 * template's.
 */
object KStateErrors {
  private def err(condition: String, parameters: (String, Any)*): KStateException =
    errWithCause(condition, null, parameters: _*)

  private def errWithCause(condition: String, cause: Throwable, parameters: (String, Any)*): KStateException =
    new KStateException(condition, parameters.map { case (k, v) => k -> String.valueOf(v) }.toMap, cause)

  // The public value types' argument errors are io.kstate.ArgumentErrors' (the public API imports
  // no internals); these forward to them for the internals that check the same arguments.

  private def listOrNone(items: Iterable[String]): String = if (items.isEmpty) "none" else items.mkString(", ")

  private def providerSetting: String = KStateConf.StateStoreProvider.key
  private def defaultProvider: String = KStateConf.StateStoreProvider.default

  // ---- arguments --------------------------------------------------------------------------------

  def invalidInterval(what: String, value: String, why: String): KStateException =
    ArgumentErrors.invalidInterval(what, value, why)

  def invalidWindow(why: String): KStateException =
    ArgumentErrors.invalidWindow(why)

  def unsupportedWindowsForDistinct(windows: String): KStateException =
    err("KSTATE_UNSUPPORTED_WINDOWS", "windows" -> windows)

  def invalidBufferConfig(why: String): KStateException =
    ArgumentErrors.invalidBufferConfig(why)

  def invalidName(name: String): KStateException =
    err(
      "KSTATE_INVALID_OPERATOR_NAME",
      "name" -> s"'$name'",
      "reason" -> "use 1 to 100 letters, digits, '_', '-' or '.'"
    )

  def invalidProcessingOrder(what: String, value: String): KStateException =
    ArgumentErrors.invalidProcessingOrder(what, value)

  def invalidVersionedStoreConfig(store: String, retentionMs: Long, graceMs: Long): KStateException =
    ArgumentErrors.invalidVersionedStoreConfig(store, retentionMs, graceMs)

  def invalidTableJoinType(how: String, allowed: Seq[String]): KStateException =
    err("KSTATE_INVALID_JOIN_TYPE.TABLE_TABLE", "how" -> how, "allowed" -> allowed.mkString(", "))

  def invalidJoinType(how: String): KStateException =
    err("KSTATE_INVALID_JOIN_TYPE.STREAM_TABLE", "how" -> how)

  def invalidForeignKeyJoinType(how: String): KStateException =
    err("KSTATE_INVALID_JOIN_TYPE.FOREIGN_KEY", "how" -> how)

  def invalidStandbyReplicas(value: String): KStateException =
    err("KSTATE_INVALID_STANDBY_REPLICAS", "value" -> value)

  def invalidReplicaSetting(key: String, value: String): KStateException =
    err("KSTATE_INVALID_REPLICA_SETTING", "key" -> key, "value" -> value)

  def invalidStateStoreSetting(key: String, value: String, expected: String, example: String): KStateException =
    err(
      "KSTATE_INVALID_STATE_STORE_SETTING",
      "key" -> key,
      "value" -> value,
      "expected" -> expected,
      "example" -> example
    )

  // ---- columns and types ------------------------------------------------------------------------

  def missingColumn(role: String, detail: String): KStateException =
    err("KSTATE_MISSING_COLUMN", "role" -> role, "reason" -> detail)

  def wrongTimestampType(role: String, dataType: String): KStateException =
    err("KSTATE_INVALID_TIMESTAMP_TYPE", "role" -> role, "dataType" -> dataType)

  def unsupportedKeyType(role: String, dataType: String): KStateException =
    err("KSTATE_INVALID_KEY_TYPE.NOT_COMPARABLE", "role" -> role, "dataType" -> dataType)

  /** A key of Spark's NULL type (an untyped `lit(None)`): every record would share one key. */
  def nullTypeKey(role: String): KStateException =
    err("KSTATE_INVALID_KEY_TYPE.NULL_TYPE", "role" -> role, "dataType" -> "VOID")

  def nonDeterministic(role: String, expr: String): KStateException =
    err("KSTATE_NON_DETERMINISTIC_EXPRESSION.EXPRESSION", "role" -> role, "expression" -> expr)

  def nonDeterministicColumn(role: String, column: String, expr: String): KStateException =
    err(
      "KSTATE_NON_DETERMINISTIC_EXPRESSION.UPSTREAM_COLUMN",
      "role" -> role,
      "column" -> column,
      "expression" -> expr
    )

  def mismatchedInputs(role: String, leftType: String, rightType: String): KStateException =
    err("KSTATE_MISMATCHED_INPUTS", "role" -> role, "leftType" -> leftType, "rightType" -> rightType)

  def foreignKeyTypeMismatch(expr: String, foreignKeyType: String, rightKey: String, rightKeyType: String)
      : KStateException =
    err(
      "KSTATE_FOREIGN_KEY_TYPE_MISMATCH",
      "expression" -> expr,
      "foreignKeyType" -> foreignKeyType,
      "rightKey" -> rightKey,
      "rightKeyType" -> rightKeyType
    )

  // ---- names and columns --------------------------------------------------------------------------

  def duplicateOperatorName(name: String): KStateException =
    err("KSTATE_DUPLICATE_OPERATOR_NAME.IN_QUERY", "name" -> name)

  def duplicateOperatorNameInInput(name: String): KStateException =
    err("KSTATE_DUPLICATE_OPERATOR_NAME.IN_INPUT", "name" -> name)

  def duplicateOutputColumn(name: String, columns: Seq[String]): KStateException =
    err("KSTATE_DUPLICATE_COLUMN.WINDOWED_AGGREGATION", "column" -> name, "columns" -> columns.mkString(", "))

  def joinColumnClash(column: String, streamColumns: Seq[String], tableValues: Seq[String]): KStateException =
    err(
      "KSTATE_DUPLICATE_COLUMN.STREAM_TABLE_JOIN",
      "column" -> column,
      "streamColumns" -> streamColumns.mkString(", "),
      "tableValues" -> tableValues.mkString(", ")
    )

  def joinColumnClash(
      name: String,
      key: String,
      timestamp: String,
      leftValues: Seq[String],
      rightValues: Seq[String]
  ): KStateException =
    err(
      "KSTATE_JOIN_COLUMN_CLASH",
      "column" -> name,
      "key" -> key,
      "timestamp" -> timestamp,
      "leftValues" -> leftValues.mkString("[", ", ", "]"),
      "rightValues" -> rightValues.mkString("[", ", ", "]")
    )

  def invalidTableColumn(role: String, why: String): KStateException =
    err("KSTATE_INVALID_TABLE_COLUMN", "role" -> role, "reason" -> why)

  // ---- aggregates, suppress, joins ----------------------------------------------------------------

  def unsupportedAggregate(expr: String, why: String): KStateException =
    err("KSTATE_UNSUPPORTED_AGGREGATE", "expression" -> s"'$expr'", "reason" -> why)

  def invalidTableAggregate(what: String, why: String): KStateException =
    err("KSTATE_INVALID_TABLE_AGGREGATE", "what" -> what, "reason" -> why)

  def tableAggregateWithoutSubtractor(aggregate: String, column: String, why: String): KStateException =
    err("KSTATE_TABLE_AGGREGATE_WITHOUT_SUBTRACTOR", "aggregate" -> aggregate, "column" -> column, "reason" -> why)

  def unsupportedSuppress(why: String): KStateException =
    err("KSTATE_UNSUPPORTED_SUPPRESS", "reason" -> why)

  def suppressOnVersionedTable(table: String): KStateException =
    err("KSTATE_SUPPRESS_ON_VERSIONED_TABLE", "table" -> table)

  /**
   * A stream–table join (`tableJoin` false) or a table–table join (true) of a streaming and a
   * batch input; `leftStreaming`: which side is the streaming one.
   */
  def streamStaticJoin(tableJoin: Boolean, leftStreaming: Boolean): KStateException = {
    val (left, right) = if (tableJoin) ("left table", "right table") else ("stream", "table")
    val (streaming, static) = if (leftStreaming) (left, right) else (right, left)
    val fix =
      if (!tableJoin && leftStreaming)
        "To enrich a stream with the rows of a static (batch) DataFrame use Spark's stream-static " +
          "join: stream.join(static_df, on=key, how=\"left\") (the static side's current rows, no " +
          "time semantics); for as-of lookups read the table's updates as a stream " +
          "(spark.readStream) and build the table from it with to_table."
      else if (tableJoin)
        "Build both tables from streaming DataFrames (spark.readStream), or both from batch " +
          "DataFrames; to enrich a streaming table's updates with static rows use Spark's " +
          "stream-static join on its to_stream()."
      else "Build the stream from a streaming DataFrame too, or the table from a batch DataFrame " +
        "(a batch join is one micro-batch)."
    err("KSTATE_STREAM_STATIC_JOIN", "streamingSide" -> streaming, "staticSide" -> static, "fix" -> fix)
  }

  def joinGraceOnUnversionedTable(graceMs: Long): KStateException =
    err("KSTATE_JOIN_GRACE_ON_UNVERSIONED_TABLE", "graceMs" -> graceMs)

  def joinGraceExceedsRetention(graceMs: Long, historyRetentionMs: Long): KStateException =
    err("KSTATE_JOIN_GRACE_EXCEEDS_RETENTION", "graceMs" -> graceMs, "historyRetentionMs" -> historyRetentionMs)

  // ---- queries and providers ----------------------------------------------------------------------

  def unsupportedOutputMode(op: String, mode: String): KStateException =
    err("KSTATE_UNSUPPORTED_OUTPUT_MODE.RETRACTION", "operator" -> op, "mode" -> mode)

  def appendWithoutFinalResults(op: String): KStateException =
    err("KSTATE_UNSUPPORTED_OUTPUT_MODE.UPDATES_IN_APPEND", "operator" -> op)

  def providerWithoutColumnFamilies(provider: String): KStateException =
    err(
      "KSTATE_UNSUPPORTED_STATE_PROVIDER.NO_COLUMN_FAMILIES",
      "provider" -> provider,
      "setting" -> providerSetting,
      "default" -> defaultProvider
    )

  def providerLacksCapabilities(operator: String, provider: String, missing: Seq[String]): KStateException =
    err(
      "KSTATE_UNSUPPORTED_STATE_PROVIDER.MISSING_CAPABILITIES",
      "operator" -> operator,
      "provider" -> provider,
      "missing" -> missing.mkString(" and "),
      "setting" -> providerSetting,
      "default" -> defaultProvider
    )

  def unknownStateProvider(key: String, value: String, why: String): KStateException =
    err(
      "KSTATE_UNSUPPORTED_STATE_PROVIDER.UNUSABLE_CLASS",
      "setting" -> key,
      "provider" -> value,
      "reason" -> why,
      "default" -> defaultProvider
    )

  def suppressNeedsKStateProvider(operator: String, storeClass: String): KStateException =
    err(
      "KSTATE_UNSUPPORTED_STATE_PROVIDER.SUPPRESS",
      "operator" -> operator,
      "provider" -> storeClass,
      "setting" -> providerSetting,
      "default" -> defaultProvider
    )

  /** @param what what wanted standby replicas, e.g. "spark.kstate.standbyReplicas is 1" */
  def standbyReplicasNeedPlugin(what: String): KStateException =
    err("KSTATE_STANDBY_REPLICAS_NEED_PLUGIN", "what" -> what)

  def bufferFull(buffer: String, records: Long, bytes: Long, maxRecords: Long, maxBytes: Long): KStateException = {
    def limit(v: Long) = if (v == Long.MaxValue) "unbounded" else v.toString
    err(
      "KSTATE_BUFFER_FULL",
      "buffer" -> buffer,
      "records" -> records,
      "bytes" -> bytes,
      "maxRecords" -> limit(maxRecords),
      "maxBytes" -> limit(maxBytes)
    )
  }

  // ---- restarts and the checkpoint ----------------------------------------------------------------

  def configChanged(name: String, stored: String, current: String, path: String): KStateException =
    err("KSTATE_OPERATOR_CONFIG_CHANGED", "operator" -> name, "stored" -> stored, "current" -> current, "path" -> path)

  def configMissing(name: String, path: String, stateFile: String): KStateException =
    err("KSTATE_OPERATOR_CONFIG_MISSING", "operator" -> name, "path" -> path, "stateFile" -> stateFile)

  def incompatibleStateSchema(operator: String, recordedKey: String, column: String, change: String): KStateException =
    err(
      "KSTATE_INCOMPATIBLE_STATE_SCHEMA",
      "operator" -> operator,
      "record" -> recordedKey,
      "column" -> column,
      "change" -> change
    )

  /**
   * A file of the checkpoint says it was written in a format newer than this kstate reads
   * (docs/upgrades.md): `what` and `file` name it, `found` is its format, `reads` the formats
   * this kstate reads. Raised before anything of the file is used or anything is written.
   */
  def checkpointFromNewerKstate(what: String, file: String, found: String, reads: Seq[Int]): KStateException = {
    val readable = reads match {
      case Seq(one) => s"format version $one"
      case more => s"format versions ${more.init.mkString(", ")} and ${more.last}"
    }
    err(
      "KSTATE_CHECKPOINT_FROM_NEWER_KSTATE",
      "what" -> what,
      "file" -> file,
      "found" -> found,
      "kstateVersion" -> BuildInfo.version,
      "readable" -> readable
    )
  }

  def versionedStoreLayoutOutdated(name: String, found: Int, expected: Int): KStateException =
    err("KSTATE_VERSIONED_STORE_LAYOUT_OUTDATED", "store" -> name, "found" -> found, "expected" -> expected)

  private def stateFile(file: String, version: Long): Seq[(String, Any)] =
    Seq("file" -> file, "version" -> version, "batchId" -> (version - 1))

  def stateFileCorrupt(file: String, version: Long, why: String): KStateException =
    err("KSTATE_STATE_FILE_CORRUPT.DAMAGED", stateFile(file, version) :+ ("reason" -> why): _*)

  def stateFileOfAnotherStore(file: String, version: Long, expected: String, found: String): KStateException =
    err(
      "KSTATE_STATE_FILE_CORRUPT.OF_ANOTHER_STORE",
      stateFile(file, version) ++ Seq("expected" -> expected, "found" -> found): _*
    )

  def stateFileOfAnotherCheckpointId(file: String, version: Long, expected: Option[String], found: Option[String])
      : KStateException = {
    def id(i: Option[String]) = i.fold("no checkpoint id (checkpoint format 1)")(x => s"checkpoint id $x")
    err(
      "KSTATE_STATE_FILE_CORRUPT.OF_ANOTHER_ATTEMPT",
      stateFile(file, version) ++ Seq("expected" -> id(expected), "found" -> id(found)): _*
    )
  }

  def stateFileMissing(file: String, version: Long, target: Long): KStateException =
    err("KSTATE_STATE_FILE_MISSING", stateFile(file, version) :+ ("target" -> target): _*)

  def stateSpillFailed(store: String, version: Long, localDir: String, cause: Throwable): KStateException =
    errWithCause(
      "KSTATE_STATE_SPILL_FAILED",
      cause,
      "store" -> store,
      "batchId" -> version,
      "localDir" -> localDir,
      "reason" -> cause.getMessage,
      "setting" -> KStateConf.MaxWriteSetBytes.key
    )

  /**
   * A checkpoint of one state checkpoint format restarted with the other (Spark 4.2 only: Spark
   * 4.3 takes the format from the checkpoint's commit log). `written`: the format the store's
   * files have; `asked`: the session's.
   */
  def checkpointFormatChanged(store: String, version: Long, written: Int, asked: Int): KStateException =
    err(
      "KSTATE_UNSUPPORTED_CHECKPOINT_FORMAT",
      "store" -> store,
      "version" -> version,
      "written" -> written,
      "asked" -> asked
    )

  /**
   * Checkpoint format v2: the store is asked for `version` without the checkpoint id of the commit
   * that made it (the query's commit log entry holds none for it), while the store's files of that
   * version are named by ids.
   */
  def checkpointIdMissing(store: String, version: Long, idsFound: Seq[String]): KStateException =
    err(
      "KSTATE_CHECKPOINT_ID_MISSING",
      "store" -> store,
      "version" -> version,
      "batchId" -> (version - 1),
      "idsFound" -> listOrNone(idsFound.sorted)
    )

  /**
   * Checkpoint format v2: no state file of `version` holds checkpoint id `id` (the id the query's
   * commit log names), so the committed state of that version is not in the checkpoint.
   */
  def checkpointIdUnknown(store: String, version: Long, id: String, idsFound: Seq[String]): KStateException =
    err(
      "KSTATE_CHECKPOINT_ID_UNKNOWN",
      "store" -> store,
      "version" -> version,
      "id" -> id,
      "idsFound" -> listOrNone(idsFound.sorted)
    )

  def unknownColumnFamily(name: String, known: Iterable[String]): KStateException =
    err("KSTATE_UNKNOWN_COLUMN_FAMILY", "name" -> name, "registered" -> known.toSeq.sorted.mkString(", "))

  def invalidColumnFamilyName(name: String): KStateException =
    err(
      "KSTATE_INVALID_COLUMN_FAMILY",
      "name" -> name,
      "defaultName" -> org.apache.spark.sql.execution.streaming.state.StateStore.DEFAULT_COL_FAMILY_NAME
    )

  def unsupportedStoreOperation(op: String, why: String): KStateException =
    err("KSTATE_UNSUPPORTED_STORE_OPERATION", "operation" -> op, "reason" -> why)

  // ---- reading state ------------------------------------------------------------------------------

  def invalidStateRead(why: String): KStateException =
    err("KSTATE_INVALID_STATE_READ", "reason" -> why)

  def unknownStateOperator(operator: String, checkpoint: String, found: Seq[String]): KStateException =
    err(
      "KSTATE_STATE_NOT_FOUND.OPERATOR",
      "checkpoint" -> checkpoint,
      "operator" -> operator,
      "found" -> listOrNone(found)
    )

  def noCommittedBatch(checkpoint: String): KStateException =
    err("KSTATE_STATE_NOT_FOUND.NO_COMMITTED_BATCH", "checkpoint" -> checkpoint)

  def batchNotCommitted(batchId: Long, checkpoint: String, first: Long, latest: Long): KStateException = {
    val why = if (batchId > latest) "is not committed (yet)" else "is no longer in the commit log"
    err(
      "KSTATE_STATE_NOT_FOUND.BATCH_NOT_COMMITTED",
      "batchId" -> batchId,
      "reason" -> why,
      "checkpoint" -> checkpoint,
      "first" -> first,
      "latest" -> latest
    )
  }

  def stateSchemaMissing(operator: String, storeName: String, path: String): KStateException =
    err("KSTATE_STATE_NOT_FOUND.STORE", "operator" -> operator, "store" -> storeName, "path" -> path)

  def checkpointNotFound(checkpoint: String): KStateException =
    err("KSTATE_CHECKPOINT_NOT_FOUND", "checkpoint" -> checkpoint)

  def tableNotFound(name: String, checkpoint: String, tables: Seq[String]): KStateException =
    err("KSTATE_TABLE_NOT_FOUND", "table" -> name, "checkpoint" -> checkpoint, "tables" -> listOrNone(tables))

  def tableNotVersioned(name: String, checkpoint: String): KStateException =
    err("KSTATE_TABLE_NOT_VERSIONED", "table" -> name, "checkpoint" -> checkpoint)

  // ---- rescaling state (docs/operators.md, "Rescaling state") -------------------------------------

  def invalidRepartition(why: String): KStateException =
    err("KSTATE_INVALID_REPARTITION", "reason" -> why)

  def repartitionNotNeeded(checkpoint: String, batchId: Long, numPartitions: Int): KStateException =
    err(
      "KSTATE_REPARTITION_NOT_NEEDED",
      "checkpoint" -> checkpoint,
      "batchId" -> batchId,
      "numPartitions" -> numPartitions
    )

  def repartitionUncommittedBatch(checkpoint: String, batchId: Long, committed: Long): KStateException =
    err(
      "KSTATE_REPARTITION_UNCOMMITTED_BATCH",
      "checkpoint" -> checkpoint,
      "batchId" -> batchId,
      "committed" -> committed
    )

  def repartitionUnfinished(checkpoint: String, batchId: Long, started: Int, asked: Int): KStateException =
    err(
      "KSTATE_REPARTITION_UNFINISHED",
      "checkpoint" -> checkpoint,
      "batchId" -> batchId,
      "started" -> started,
      "asked" -> asked
    )

  def repartitionNeedsKState(checkpoint: String, operators: Seq[String]): KStateException =
    err("KSTATE_REPARTITION_NEEDS_KSTATE", "checkpoint" -> checkpoint, "operators" -> operators.mkString(", "))

  def repartitionProviderNeedsKState(checkpoint: String, provider: String, operators: Seq[String]): KStateException =
    err(
      "KSTATE_REPARTITION_PROVIDER_NEEDS_KSTATE",
      "checkpoint" -> checkpoint,
      "provider" -> provider,
      "operators" -> operators.mkString(", ")
    )

  def repartitionUnsupportedState(operator: String, why: String): KStateException =
    err("KSTATE_REPARTITION_UNSUPPORTED_STATE", "operator" -> operator, "reason" -> why)

  // ---- kstate.testing: the pipeline test driver (docs/testing.md) ---------------------------------

  /** @param input the driver's input the records were piped to; @param why what did not match */
  def testDriverInvalidRecord(input: String, why: String): KStateException =
    err("KSTATE_TEST_DRIVER_INVALID_RECORD", "input" -> input, "reason" -> why)

  /** @param known the driver's input names */
  def testDriverUnknownInput(input: String, known: String): KStateException =
    err("KSTATE_TEST_DRIVER_UNKNOWN_INPUT", "input" -> input, "inputs" -> known)

  def testDriverInvalidPipeline(why: String): KStateException =
    err("KSTATE_TEST_DRIVER_INVALID_PIPELINE", "reason" -> why)

  /** @param state "not started", "already started" or "closed" */
  def testDriverNotRunning(state: String): KStateException =
    err("KSTATE_TEST_DRIVER_NOT_RUNNING", "state" -> state)

  // ---- Spark Connect ------------------------------------------------------------------------------

  def connectInvalidCall(why: String): KStateException =
    err("KSTATE_CONNECT_INVALID_CALL", "side" -> "plugin", "reason" -> why)

  /**
   * A kstate Spark Connect message the server cannot read: bytes that are not the message's
   * wire format, a length past the message's end, or values nested deeper than the plugin reads.
   * Not a version question: a kstate client never sends one.
   */
  def connectMalformedMessage(why: String): KStateException =
    err("KSTATE_CONNECT_MALFORMED_MESSAGE", "reason" -> why)

  def connectUnknownOperation(what: String): KStateException =
    err("KSTATE_CONNECT_UNKNOWN_OPERATION", "operation" -> what)

  // ---- kstate's own bugs --------------------------------------------------------------------------

  def internal(msg: String): KStateException =
    err("KSTATE_INTERNAL_ERROR", "reason" -> msg)
}
