package io.kstate

/**
 * The one error type kstate raises for anything the user can fix: bad arguments, unsupported
 * plans, configuration changed on restart, a full buffer. Every error has a stable `errorClass`
 * (`KSTATE_...`) that Python maps to `kstate.KStateError.error_class`, and a message that says
 * what was wrong and how to fix it.
 */
final class KStateException(val errorClass: String, message: String, cause: Throwable = null)
  extends IllegalArgumentException(s"[$errorClass] $message", cause)

/** The error hub: every named kstate error is constructed here, nowhere else. */
object KStateErrors {
  private def err(cls: String, msg: String): KStateException = new KStateException(cls, msg)

  def invalidInterval(what: String, value: String, why: String): KStateException =
    err("KSTATE_INVALID_DURATION",
      s"$what '$value' is not a valid duration: $why. Use a non-negative duration such as " +
        "'10 seconds', '500ms', 'PT1M', a java.time.Duration, or a number of milliseconds.")

  def missingColumn(role: String, detail: String): KStateException =
    err("KSTATE_MISSING_COLUMN",
      s"The $role column cannot be resolved: $detail. Pass the name of an existing column or a " +
        "Column expression over the DataFrame's columns.")

  def wrongTimestampType(role: String, dataType: String): KStateException =
    err("KSTATE_INVALID_TIMESTAMP_TYPE",
      s"The $role column has type $dataType; kstate needs TIMESTAMP, TIMESTAMP_NTZ or an " +
        "integral number of epoch milliseconds (BIGINT/INT). Cast the column, e.g. " +
        "F.col('ts').cast('timestamp').")

  def unsupportedKeyType(role: String, dataType: String): KStateException =
    err("KSTATE_INVALID_KEY_TYPE",
      s"The $role expression has type $dataType, which cannot be compared for equality " +
        "(MAP or VARIANT values, or structs containing them). Derive a comparable key, e.g. " +
        "F.to_json(col) or the fields you deduplicate on.")

  def nonDeterministic(role: String, expr: String): KStateException =
    err("KSTATE_NON_DETERMINISTIC_EXPRESSION",
      s"The $role expression '$expr' is non-deterministic; a replayed micro-batch would see a " +
        "different value and deduplicate differently. Use a deterministic expression " +
        "(e.g. a column of the record instead of rand() or uuid()).")

  def nonDeterministicColumn(role: String, column: String, expr: String): KStateException =
    err("KSTATE_NON_DETERMINISTIC_EXPRESSION",
      s"The $role expression reads column '$column', which an earlier step of this DataFrame " +
        s"computes with the non-deterministic '$expr'; a replayed micro-batch would see a " +
        "different value and give different results. Derive the column deterministically " +
        "(e.g. from a field of the record instead of rand() or uuid()), or materialise it " +
        "before the stream (e.g. set it in the source).")

  def invalidWindow(why: String): KStateException =
    err("KSTATE_INVALID_WINDOW", s"Invalid window specification: $why.")

  def unsupportedWindowsForDistinct(windows: String): KStateException =
    err("KSTATE_UNSUPPORTED_WINDOWS",
      s"distinct() needs tumbling TimeWindows or SessionWindows, got $windows: hopping and sliding " +
        "windows overlap, so one record would be emitted once per window (KIP-655). Use tumbling " +
        "windows (drop advance_by()) or session windows.")

  def invalidName(name: String): KStateException =
    err("KSTATE_INVALID_OPERATOR_NAME",
      s"Operator name '$name' is invalid: use 1 to 100 letters, digits, '_', '-' or '.'.")

  def duplicateOperatorName(name: String): KStateException =
    err("KSTATE_DUPLICATE_OPERATOR_NAME",
      s"Two kstate operators in one query resolve to the name '$name'. Give each stateful " +
        "kstate operator a distinct name= so each keeps its own state.")

  def duplicateOperatorNameInInput(name: String): KStateException =
    err("KSTATE_DUPLICATE_OPERATOR_NAME",
      s"This DataFrame already contains a kstate operator named '$name'. Give each stateful " +
        "kstate operator a distinct name= so each keeps its own state.")

  def configChanged(name: String, stored: String, current: String, path: String): KStateException =
    err("KSTATE_OPERATOR_CONFIG_CHANGED",
      s"kstate operator '$name' was restarted from a checkpoint written with a different " +
        s"configuration.\n  checkpoint: $stored\n  this query: $current\n  (recorded in $path)\n" +
        "Restore the original configuration to continue from this checkpoint, or start the " +
        "query from a new checkpoint location to begin with fresh state.")

  def configMissing(name: String, path: String, stateFile: String): KStateException =
    err("KSTATE_OPERATOR_CONFIG_MISSING",
      s"kstate operator '$name' has state in this checkpoint (e.g. $stateFile) but " +
        s"its configuration record $path is missing, so kstate cannot check that this query " +
        "runs with the configuration the state was written with (a changed interval, window " +
        "or state store provider would silently run on the old state). Restore the file from " +
        "a backup of the checkpoint, or start the query from a new checkpoint location to " +
        "begin with fresh state.")

  def unsupportedOutputMode(op: String, mode: String): KStateException =
    err("KSTATE_UNSUPPORTED_OUTPUT_MODE",
      s"kstate operator '$op' emits each input record at most once and never retracts; it " +
        s"cannot run in $mode output mode. Use outputMode('append') or outputMode('update').")

  def appendWithoutFinalResults(op: String): KStateException =
    err("KSTATE_UNSUPPORTED_OUTPUT_MODE",
      s"kstate operator '$op' is a windowed aggregation that emits an updated row for a window " +
        "each micro-batch that changes it; in append output mode every update would be a new " +
        "row (a window updated in 3 micro-batches would appear 3 times). Use " +
        "outputMode('update'), or suppress it with " +
        "Suppressed.until_window_closes(...) for exactly one final row per window in append mode.")

  def providerWithoutColumnFamilies(provider: String): KStateException =
    err("KSTATE_UNSUPPORTED_STATE_PROVIDER",
      s"State store provider $provider cannot back kstate operators: they need column " +
        s"families and range scans. Set ${KStateConf.StateStoreProvider.key} to " +
        s"${KStateConf.StateStoreProvider.default}.")

  def providerLacksCapabilities(operator: String, provider: String, missing: Seq[String]): KStateException =
    err("KSTATE_UNSUPPORTED_STATE_PROVIDER",
      s"kstate operator '$operator' needs ${missing.mkString(" and ")} from its state store, which " +
        s"${KStateConf.StateStoreProvider.key}=$provider does not provide (Spark's RocksDB provider " +
        "has column families only, its HDFS provider nothing kstate needs). Set " +
        s"${KStateConf.StateStoreProvider.key} to ${KStateConf.StateStoreProvider.default} (the " +
        "default), which has every capability.")

  def unknownStateProvider(key: String, value: String, why: String): KStateException =
    err("KSTATE_UNSUPPORTED_STATE_PROVIDER",
      s"$key=$value cannot back kstate operators: $why. Set it to a state store provider class " +
        s"on the classpath: ${KStateConf.StateStoreProvider.default} (the default) or Spark's " +
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider, or add the jar " +
        "that holds the class.")

  def stateFileCorrupt(file: String, version: Long, why: String): KStateException =
    err("KSTATE_STATE_FILE_CORRUPT",
      s"State file $file (state version $version, written by micro-batch ${version - 1}) is " +
        s"corrupt: $why. kstate refuses to restore from it rather than return wrong state. " +
        "Restore the file from a backup of the checkpoint, or restart the query from a new " +
        "checkpoint location to begin with fresh state.")

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
    err("KSTATE_CHECKPOINT_FROM_NEWER_KSTATE",
      s"$what $file was written by a newer kstate: it has format version $found, and this kstate " +
        s"(${BuildInfo.version}) reads $readable. kstate does not read a format newer " +
        "than its own, and has neither used nor changed this file. Run this query with the kstate " +
        "release that wrote the checkpoint or a later one; to run this release instead, start the " +
        "query from a new checkpoint location (fresh state). See docs/upgrades.md.")
  }

  def stateFileOfAnotherStore(file: String, version: Long, expected: String, found: String)
      : KStateException =
    err("KSTATE_STATE_FILE_CORRUPT",
      s"State file $file (state version $version, written by micro-batch ${version - 1}) " +
        s"belongs to another state store: expected $expected, found $found. It is a valid " +
        "file copied or moved here from another store's directory; restoring it would give " +
        "this store another store's state, so kstate refuses it. Put back the file this store " +
        "wrote (restore the checkpoint's state directory from a backup), or restart the query " +
        "from a new checkpoint location to begin with fresh state.")

  def stateFileMissing(file: String, version: Long, target: Long): KStateException =
    err("KSTATE_STATE_FILE_MISSING",
      s"State file $file (state version $version, written by micro-batch ${version - 1}) is " +
        s"missing, so state version $target cannot be restored. Either micro-batch " +
        s"${version - 1} never committed state here, or the file was deleted. Restore the " +
        "checkpoint directory completely, or restart the query from a new checkpoint location.")

  /**
   * A checkpoint of one state checkpoint format restarted with the other (Spark 4.2 only: Spark
   * 4.3 takes the format from the checkpoint's commit log). `written`: the format the store's
   * files have; `asked`: the session's.
   */
  def checkpointFormatChanged(store: String, version: Long, written: Int, asked: Int): KStateException =
    err("KSTATE_UNSUPPORTED_CHECKPOINT_FORMAT",
      s"The state of $store was written with state checkpoint format $written " +
        s"(spark.sql.streaming.stateStore.checkpointFormatVersion=$written), and the query now runs " +
        s"with format $asked (state version $version). kstate does not switch an existing checkpoint " +
        s"from one format to the other. Set spark.sql.streaming.stateStore.checkpointFormatVersion=$written " +
        "for this checkpoint (Spark 4.3 does this itself), or start the query from a new checkpoint location.")

  /**
   * Checkpoint format v2: the store is asked for `version` without the checkpoint id of the commit
   * that made it (the query's commit log entry holds none for it), while the store's files of that
   * version are named by ids.
   */
  def checkpointIdMissing(store: String, version: Long, idsFound: Seq[String]): KStateException =
    err("KSTATE_CHECKPOINT_ID_MISSING",
      s"State version $version of $store was asked for without a checkpoint id, and the checkpoint " +
        s"is of state checkpoint format 2, whose state files are named by the id of the commit that wrote " +
        s"them (found for version $version: ${if (idsFound.isEmpty) "none" else idsFound.sorted.mkString(", ")}). " +
        s"The commit log entry of micro-batch ${version - 1} (commits/${version - 1}) holds no stateUniqueIds for " +
        "this store: it was replaced or edited. kstate does not guess which attempt's state was committed. " +
        "Restore the checkpoint's commits directory from a backup, or start the query from a new checkpoint location.")

  /**
   * Checkpoint format v2: no state file of `version` holds checkpoint id `id` (the id the query's
   * commit log names), so the committed state of that version is not in the checkpoint.
   */
  def checkpointIdUnknown(store: String, version: Long, id: String, idsFound: Seq[String]): KStateException =
    err("KSTATE_CHECKPOINT_ID_UNKNOWN",
      s"State version $version of $store with checkpoint id $id (named by the query's commit log) has " +
        s"no state file: the ids found for version $version are " +
        s"${if (idsFound.isEmpty) "none" else idsFound.sorted.mkString(", ")}. Files of other ids are other " +
        "attempts of the micro-batch that were not committed, and kstate never restores them in place of the " +
        "committed one. The state directory and the commit log are not of the same moment (one was restored " +
        "from a backup, or files were deleted). Restore both from the same backup, or start the query from a " +
        "new checkpoint location.")

  def stateFileOfAnotherCheckpointId(file: String, version: Long, expected: Option[String], found: Option[String])
      : KStateException = {
    def id(i: Option[String]) = i.fold("no checkpoint id (checkpoint format 1)")(x => s"checkpoint id $x")
    err("KSTATE_STATE_FILE_CORRUPT",
      s"State file $file (state version $version, written by micro-batch ${version - 1}) holds " +
        s"${id(found)}, where its name says ${id(expected)}. It is a valid file of another attempt of the " +
        "micro-batch renamed or copied under this name; restoring it would give this store the state of an " +
        "attempt that was not committed, so kstate refuses it. Put back the file this attempt wrote (restore " +
        "the checkpoint's state directory from a backup), or restart the query from a new checkpoint location.")
  }

  def loadEmptyUnsupported(version: Long): KStateException =
    err("KSTATE_LOAD_EMPTY_UNSUPPORTED",
      s"Spark asked kstate's state store provider for an empty store at version $version (getStore's " +
        "loadEmpty, for rewriting a version's state from scratch). kstate's provider does not support it: " +
        "it would hold that version's committed state instead. Run this operation with one of Spark's " +
        "state store providers (spark.sql.streaming.stateStore.providerClass).")

  def unknownColumnFamily(name: String, known: Iterable[String]): KStateException =
    err("KSTATE_UNKNOWN_COLUMN_FAMILY",
      s"Column family '$name' is not registered in this state store (registered: " +
        s"${known.toSeq.sorted.mkString(", ")}). Call createColFamilyIfAbsent first.")

  def unsupportedStoreOperation(op: String, why: String): KStateException =
    err("KSTATE_UNSUPPORTED_STORE_OPERATION", s"$op is not supported here: $why.")

  def invalidVersionedStoreConfig(name: String, retentionMs: Long, graceMs: Long): KStateException =
    err("KSTATE_INVALID_VERSIONED_STORE",
      s"Versioned store '$name': history retention ${retentionMs}ms and grace period ${graceMs}ms " +
        "must be non-negative, and the grace period may not exceed the history retention (a " +
        "record accepted within the grace period must stay queryable). Lower the grace period " +
        "or raise the history retention.")

  def versionedStoreLayoutOutdated(name: String, found: Int, expected: Int): KStateException =
    err("KSTATE_VERSIONED_STORE_LAYOUT_OUTDATED",
      s"Versioned store '$name' was written by an older kstate layout (layout $found; this kstate " +
        s"reads layout $expected, whose latest entries list the key's newest history versions) and " +
        "cannot be read without misreading its versions. Start the query from a new checkpoint " +
        "(a new checkpointLocation), or read the old one with the kstate version that wrote it.")

  def invalidColumnFamilyName(name: String): KStateException =
    err("KSTATE_INVALID_COLUMN_FAMILY",
      s"Column family name '$name' is reserved or empty: use a non-empty name other than " +
        s"'${org.apache.spark.sql.execution.streaming.state.StateStore.DEFAULT_COL_FAMILY_NAME}' " +
        "that does not start with '$' (reserved for internal families).")

  def stateSpillFailed(store: String, version: Long, localDir: String, cause: Throwable)
      : KStateException =
    new KStateException("KSTATE_STATE_SPILL_FAILED",
      s"State store $store could not spill micro-batch ${version}'s uncommitted changes to its " +
        s"local disk ($localDir): ${cause.getMessage}. The micro-batch fails and is not " +
        "committed; the checkpoint still holds the previous version, so the query restarts " +
        "from there. Free disk space under spark.local.dir, point it at a larger disk, or raise " +
        s"${KStateConf.MaxWriteSetBytes.key} to keep more on the heap.", cause)

  def bufferFull(buffer: String, records: Long, bytes: Long, maxRecords: Long, maxBytes: Long)
      : KStateException = {
    def limit(v: Long) = if (v == Long.MaxValue) "unbounded" else v.toString
    err("KSTATE_BUFFER_FULL",
      s"Buffer '$buffer' is full: it holds $records records and $bytes bytes, over its limits " +
        s"max_records=${limit(maxRecords)}, max_bytes=${limit(maxBytes)}, and is configured to " +
        "shut down when full. This micro-batch was not committed, so nothing is lost: restart " +
        "from the same checkpoint with a larger buffer (BufferConfig.with_max_records / " +
        "with_max_bytes), or choose emit_early_when_full() or spill_to_disk_when_full().")
  }

  def unknownStateOperator(operator: String, checkpoint: String, found: Seq[String])
      : KStateException =
    err("KSTATE_STATE_NOT_FOUND",
      s"Checkpoint $checkpoint holds no state of a kstate operator $operator. kstate operators " +
        s"with state there: ${if (found.isEmpty) "none" else found.mkString(", ")}. Pass one of " +
        "these names (name= of the operator, or <kind>-<n> for an unnamed one) or operator ids. " +
        "The state of Spark's own operators is read with spark.read.format(\"statestore\").")

  def noCommittedBatch(checkpoint: String): KStateException =
    err("KSTATE_STATE_NOT_FOUND",
      s"Checkpoint $checkpoint has no committed micro-batch (its commits/ directory is missing " +
        "or empty), so it holds no state to read. Check the checkpoint location, or read after " +
        "the query has committed its first micro-batch.")

  def batchNotCommitted(batchId: Long, checkpoint: String, first: Long, latest: Long)
      : KStateException = {
    val why = if (batchId > latest) "is not committed (yet)" else "is no longer in the commit log"
    err("KSTATE_STATE_NOT_FOUND",
      s"Micro-batch $batchId $why in checkpoint $checkpoint; its committed batches there are " +
        s"$first to $latest. Pass one of them as the batch id, or none to read the latest.")
  }

  def stateSchemaMissing(operator: String, storeName: String, path: String): KStateException =
    err("KSTATE_STATE_NOT_FOUND",
      s"kstate operator $operator has no state store '$storeName': its state schema file $path " +
        "does not exist. kstate operators keep their state in the store 'default'.")

  def invalidStateRead(why: String): KStateException =
    err("KSTATE_INVALID_STATE_READ", s"Cannot read kstate state: $why.")

  def checkpointNotFound(checkpoint: String): KStateException =
    err("KSTATE_CHECKPOINT_NOT_FOUND",
      s"Checkpoint $checkpoint does not exist. Pass the checkpointLocation of the streaming " +
        "query that materialized the table (writeStream.option(\"checkpointLocation\", ...)).")

  def tableNotFound(name: String, checkpoint: String, tables: Seq[String]): KStateException =
    err("KSTATE_TABLE_NOT_FOUND",
      s"Checkpoint $checkpoint holds no table named '$name'. Tables there: " +
        s"${if (tables.isEmpty) "none" else tables.mkString(", ")}. Pass the name= given to " +
        "to_table(...), or versioned_table-<n> / table-<n> for an unnamed one (as listed).")

  def tableNotVersioned(name: String, checkpoint: String): KStateException =
    err("KSTATE_TABLE_NOT_VERSIONED",
      s"Table '$name' in checkpoint $checkpoint is not versioned: it keeps only its latest " +
        "values, so it cannot be read as of a time. Materialize it with " +
        "to_table(..., versioned=VersionedTable(history_retention)) (a new checkpoint) to read " +
        "it with read_table.")

  def unsupportedAggregate(expr: String, why: String): KStateException =
    err("KSTATE_UNSUPPORTED_AGGREGATE",
      s"Cannot aggregate '$expr': $why. Windowed aggregations take Spark's built-in aggregate " +
        "functions (count, sum, min, max, avg, first, last, ...) and expressions over them, " +
        "e.g. F.sum(\"amount\") or F.max(\"x\") - F.min(\"x\").")

  def duplicateOutputColumn(name: String, columns: Seq[String]): KStateException =
    err("KSTATE_DUPLICATE_COLUMN",
      s"The windowed aggregation would output two columns named '$name' (columns: " +
        s"${columns.mkString(", ")}). Give the aggregate another name with .alias(...).")

  def invalidBufferConfig(why: String): KStateException =
    err("KSTATE_INVALID_BUFFER_CONFIG", s"Invalid buffer config: $why.")

  def suppressNeedsKStateProvider(operator: String, storeClass: String): KStateException =
    err("KSTATE_UNSUPPORTED_STATE_PROVIDER",
      s"suppress operator '$operator' keeps its buffer in kstate's state store provider, but " +
        s"spark.kstate.stateStore.providerClass gave a $storeClass store. Leave that setting at " +
        "its default (io.kstate.KStateStoreProvider) for queries that suppress.")

  def unsupportedSuppress(why: String): KStateException =
    err("KSTATE_UNSUPPORTED_SUPPRESS", s"Cannot suppress this DataFrame: $why.")

  def invalidTableColumn(role: String, why: String): KStateException =
    err("KSTATE_INVALID_TABLE_COLUMN", s"Cannot build the table: its $role $why.")

  def suppressOnVersionedTable(table: String): KStateException =
    err("KSTATE_SUPPRESS_ON_VERSIONED_TABLE",
      s"Table '$table' is versioned: suppress is not defined on a versioned table (KIP-914: it would " +
        "drop the version history the table keeps). Suppress an unversioned table instead: build it " +
        "with to_table(...) without versioned=, or call to_stream() first and suppress the stream.")

  def invalidProcessingOrder(what: String, value: String): KStateException =
    err("KSTATE_INVALID_PROCESSING_ORDER",
      s"Invalid processing order for $what: '$value'. Use 'auto' (the default: Kafka task order " +
        "for an ordered log such as Kafka, event-time order otherwise), 'task' or 'event_time'.")

  def mismatchedInputs(role: String, leftType: String, rightType: String): KStateException =
    err("KSTATE_MISMATCHED_INPUTS",
      s"The two inputs' $role columns have different types ($leftType and $rightType); a " +
        "two-input operator meets both sides' records of one key in one state partition and " +
        s"orders them by one event time, so both must have the same $role type. Cast one side, " +
        "e.g. F.col('ts').cast('timestamp') or F.col('id').cast('bigint').")

  def internal(msg: String): KStateException = err("KSTATE_INTERNAL_ERROR", msg)

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
    err("KSTATE_STREAM_STATIC_JOIN",
      s"The $streaming is built from a streaming DataFrame and the $static from a batch DataFrame: " +
        s"kstate's joins take both inputs as streams of updates (or both as batches). $fix")
  }

  def joinGraceOnUnversionedTable(graceMs: Long): KStateException =
    err("KSTATE_JOIN_GRACE_ON_UNVERSIONED_TABLE",
      s"A stream-table join with a grace period (${graceMs}ms) needs a versioned table: the " +
        "grace period holds stream records back so that they join the table as of their own " +
        "timestamp, and an unversioned table keeps only its latest value per key. Materialize " +
        "the table as versioned (versioned=VersionedTable(history_retention=...)), or drop grace=.")

  def joinGraceExceedsRetention(graceMs: Long, historyRetentionMs: Long): KStateException =
    err("KSTATE_JOIN_GRACE_EXCEEDS_RETENTION",
      s"The stream-table join's grace period (${graceMs}ms) exceeds the table's history retention " +
        s"(${historyRetentionMs}ms): a stream record released after the grace period would look up " +
        "a version the table no longer keeps. Lower the join's grace= to at most the history " +
        "retention, or raise the table's history_retention.")

  def invalidTableJoinType(how: String, allowed: Seq[String]): KStateException =
    err("KSTATE_INVALID_JOIN_TYPE",
      s"Invalid table-table join type '$how'. Use one of ${allowed.mkString(", ")} (Kafka's KTable#join, " +
        "leftJoin and outerJoin); for a right join, swap the tables and use 'left'.")

  def joinColumnClash(name: String, key: String, timestamp: String, leftValues: Seq[String],
      rightValues: Seq[String]): KStateException =
    err("KSTATE_JOIN_COLUMN_CLASH",
      s"The table-table join's result would have two columns named '$name': it has the left table's " +
        s"key '$key', its value columns ${leftValues.mkString("[", ", ", "]")}, the right table's value " +
        s"columns ${rightValues.mkString("[", ", ", "]")} and the left table's timestamp '$timestamp'. " +
        "Rename the clashing value column on one side first, e.g. " +
        s"right.map_values(F.col('$name').alias('right_$name'), ...).")

  def invalidTableAggregate(what: String, why: String): KStateException =
    err("KSTATE_INVALID_TABLE_AGGREGATE",
      s"Cannot aggregate the grouped table with $what: $why. A grouped table's count(), " +
        "sum(column) and reduce(adder, subtractor) read the grouped value columns (group_by's " +
        "value=, else the table's value columns): sum takes a numeric expression over them, " +
        "reduce two functions of (aggregate, value) returning the value's type, e.g. " +
        "reduce(lambda agg, v: agg + v, lambda agg, v: agg - v); agg takes count, sum and avg; " +
        "aggregate an initializer and two functions returning the initializer's type.")
  def tableAggregateWithoutSubtractor(aggregate: String, column: String, why: String): KStateException =
    err("KSTATE_TABLE_AGGREGATE_WITHOUT_SUBTRACTOR",
      s"Cannot use $aggregate (in agg column '$column') on a grouped table: $why. A grouped table's " +
        "rows change, so each aggregate must be able to take a value out again: agg takes count(*), " +
        "count(col), sum(col) and avg(col)/mean(col). Write any other aggregate with " +
        "reduce(adder, subtractor) or aggregate(initializer, adder, subtractor), whose subtractor you " +
        "write (e.g. keep a sum and a count and take each value out).")
  def joinColumnClash(column: String, streamColumns: Seq[String], tableValues: Seq[String]): KStateException =
    err("KSTATE_DUPLICATE_COLUMN",
      s"The stream-table join would output two columns named '$column': the stream's columns " +
        s"(${streamColumns.mkString(", ")}) are followed by the table's value columns " +
        s"(${tableValues.mkString(", ")}). Rename one before joining, e.g. " +
        s"stream.withColumnRenamed('$column', 'stream_$column'), or map the table's values to new names " +
        s"(table.map_values(F.col('$column').alias('table_$column'))).")

  def invalidJoinType(how: String): KStateException =
    err("KSTATE_INVALID_JOIN_TYPE",
      s"Invalid join type '$how' for a stream-table join: use how='inner' (stream rows without a " +
        "table value are dropped) or how='left' (they are emitted with null table values).")

  def invalidForeignKeyJoinType(how: String): KStateException =
    err("KSTATE_INVALID_JOIN_TYPE",
      s"Invalid foreign-key join type '$how'. Use how='inner' (Kafka's KTable#join with a foreign-key " +
        "extractor: left rows without a matching right row have no result) or how='left' (its leftJoin: " +
        "they join with null right columns). Kafka has no outer foreign-key join.")

  def foreignKeyTypeMismatch(expr: String, foreignKeyType: String, rightKey: String, rightKeyType: String)
    : KStateException =
    err("KSTATE_FOREIGN_KEY_TYPE_MISMATCH",
      s"The foreign key $expr has type $foreignKeyType, which is not comparable with the right table's " +
        s"key '$rightKey' of type $rightKeyType: a foreign-key join looks each left row's foreign key up " +
        "among the right table's keys, so both must have the same type (a narrower integral or decimal " +
        "type is widened). Cast the foreign key, e.g. foreign_key=F.col('country_id').cast('bigint').")

  def invalidStandbyReplicas(value: String): KStateException =
    err("KSTATE_INVALID_STANDBY_REPLICAS",
      s"spark.kstate.standbyReplicas is '$value'; it must be a whole number of standby copies, 0 or " +
        "more (0, the default, keeps none). Set e.g. spark.conf.set('spark.kstate.standbyReplicas', '1').")

  def invalidReplicaSetting(key: String, value: String): KStateException =
    err("KSTATE_INVALID_REPLICA_SETTING",
      s"$key is '$value'; it must be a whole number, 0 or more. Set e.g. spark.conf.set('$key', '1').")

  /** @param what what wanted standby replicas, e.g. "spark.kstate.standbyReplicas is 1" */
  def standbyReplicasNeedPlugin(what: String): KStateException =
    err("KSTATE_STANDBY_REPLICAS_NEED_PLUGIN",
      s"$what, but kstate's plugin is not loaded, so there are no standby replicas. Start the application with spark.plugins=io.kstate.KStatePlugin " +
        "(PySpark: build the session with kstate.configure(SparkSession.builder)), or set " +
        "spark.kstate.standbyReplicas=0.")

  // --- kstate.testing: the pipeline test driver (docs/testing.md) ---

  /** @param input the driver's input the records were piped to; @param why what did not match */
  def testDriverInvalidRecord(input: String, why: String): KStateException =
    err("KSTATE_TEST_DRIVER_INVALID_RECORD",
      s"A record piped to input '$input' does not match its schema: $why. Give each record as a " +
        "dict of the schema's field names or a tuple of its fields in schema order, with values of " +
        "the fields' types (e.g. an int of epoch milliseconds or a datetime for a timestamp).")

  /** @param known the driver's input names */
  def testDriverUnknownInput(input: String, known: String): KStateException =
    err("KSTATE_TEST_DRIVER_UNKNOWN_INPUT",
      s"The test driver has no input '$input'; its inputs are: $known. Pipe records to one of " +
        "them (input=...), or declare the input when building the driver.")

  def testDriverInvalidPipeline(why: String): KStateException =
    err("KSTATE_TEST_DRIVER_INVALID_PIPELINE",
      s"The test driver cannot run this pipeline: $why.")

  /** @param state "not started", "already started" or "closed" */
  def testDriverNotRunning(state: String): KStateException =
    err("KSTATE_TEST_DRIVER_NOT_RUNNING",
      s"The test driver is $state. Use it inside its 'with' block (which starts its query and, at " +
        "its end, stops the query and removes its temporary checkpoint and input directories); a " +
        "closed driver cannot be started again: build a new one.")

  def incompatibleStateSchema(operator: String, recordedKey: String, column: String, change: String): KStateException =
    err("KSTATE_INCOMPATIBLE_STATE_SCHEMA",
      s"kstate operator '$operator' keeps rows in its state that cannot be converted to the query's new " +
        s"schema ($recordedKey): column '$column' changed $change. kstate converts state across adding, " +
        "removing and reordering columns and widening numbers (byte->short->int->long, int->double, " +
        "float->double, wider decimals); not other type changes, and not the key. Revert the change, or " +
        "start the query from a new checkpoint location. The checkpoint is unchanged.")

  // ---- repartitioning state (docs/operators.md, "Rescaling state") ----------------------------

  def invalidRepartition(why: String): KStateException =
    err("KSTATE_INVALID_REPARTITION",
      s"Cannot repartition the checkpoint's state: $why. Nothing was written; the checkpoint is unchanged.")

  def repartitionNotNeeded(checkpoint: String, batchId: Long, numPartitions: Int): KStateException =
    err("KSTATE_REPARTITION_NOT_NEEDED",
      s"Checkpoint $checkpoint already has $numPartitions state partitions (its last committed " +
        s"micro-batch, $batchId, ran with spark.sql.shuffle.partitions=$numPartitions). Nothing was " +
        "written; pass another number of partitions to rescale.")

  def repartitionUncommittedBatch(checkpoint: String, batchId: Long, committed: Long): KStateException =
    err("KSTATE_REPARTITION_UNCOMMITTED_BATCH",
      s"Checkpoint $checkpoint has micro-batch $batchId planned but not committed (the last " +
        s"committed one is $committed): the query stopped while it ran. Repartitioning now would " +
        "skip it, and a sink that relies on batch ids for exactly-once output would drop or repeat " +
        "its rows. Restart the query until it commits that micro-batch, stop it, then " +
        "repartition. Nothing was written; the checkpoint is unchanged.")

  def repartitionUnfinished(checkpoint: String, batchId: Long, started: Int, asked: Int): KStateException =
    err("KSTATE_REPARTITION_UNFINISHED",
      s"Checkpoint $checkpoint has an unfinished repartition to $started state partitions (micro-batch " +
        s"$batchId); it must be finished before another: call kstate.repartition_state with " +
        s"$started partitions (it resumes), then with $asked. Nothing was written.")

  def repartitionNeedsKState(checkpoint: String, operators: Seq[String]): KStateException =
    err("KSTATE_REPARTITION_NEEDS_KSTATE",
      s"Spark's StreamingCheckpointManager.repartition cannot move the state of kstate operators " +
        s"(${operators.mkString(", ")} in $checkpoint): it knows only Spark's own operators' state " +
        "layout. Use kstate.repartition_state(spark, checkpoint_location, num_partitions) (Scala: " +
        "io.kstate.KStateRepartition.repartitionState). Nothing was written; the checkpoint is unchanged.")

  def repartitionUnsupportedState(operator: String, why: String): KStateException =
    err("KSTATE_REPARTITION_UNSUPPORTED_STATE",
      s"Cannot repartition the state of operator $operator: $why. Nothing was written; the " +
        "checkpoint is unchanged and the query restarts from it with its current number of partitions.")

  def connectInvalidCall(why: String): KStateException =
    err("KSTATE_CONNECT_INVALID_CALL",
      s"The kstate Spark Connect plugin cannot make this call: $why.")

  /**
   * A kstate Spark Connect message the server cannot read: bytes that are not the message's
   * wire format, a length past the message's end, or values nested deeper than the plugin reads.
   * Not a version question: a kstate client never sends one.
   */
  def connectMalformedMessage(why: String): KStateException =
    err("KSTATE_CONNECT_MALFORMED_MESSAGE",
      s"The kstate Spark Connect plugin refused a malformed message: $why. kstate's Python " +
        "client does not send such messages; the request was not made and the server is unaffected.")

  def connectUnknownOperation(what: String): KStateException =
    err("KSTATE_CONNECT_UNKNOWN_OPERATION",
      s"The kstate Spark Connect plugin does not know this operation ($what): the client's kstate is " +
        "newer than the server's. Use the operation's older form, or give the server the client's " +
        "kstate version (kstate.jar_path()).")
}
