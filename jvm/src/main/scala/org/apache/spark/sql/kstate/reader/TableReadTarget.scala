package org.apache.spark.sql.kstate.reader

import io.kstate.KStateErrors

import org.apache.spark.sql.catalyst.parser.CatalystSqlParser
import org.apache.spark.sql.classic.{SparkSession => ClassicSession}
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager
import org.apache.spark.sql.types.{DataType, StructField, StructType}

/**
 * What the tasks of a versioned table read need, resolved and checked on the driver: the
 * table source's state ([[state]]: latest committed batch, partitions, store configuration), its
 * history retention and grace (to open its versioned store as the query does) and its columns.
 *
 * @param schema the result's columns: the key column, the value columns, the timestamp column,
 *   named and typed as the table's
 */
final case class TableReadTarget(
    state: StateReadTarget,
    historyRetentionMs: Long,
    graceMs: Long,
    keyType: DataType,
    valueSchema: StructType,
    timestampType: DataType,
    schema: StructType)

object TableReadTarget {
  /** The name of the versioned store the table source keeps its versions in (`kstate_vs_table_*`). */
  val VersionedStoreName: String = org.apache.spark.sql.kstate.execution.KStateTableSourceExec.VersionedStoreName

  private val Kinds = Set("table", "versioned_table")

  /**
   * Resolves a read of the table named `name` in the checkpoint at `checkpointLocation`. Checks,
   * in this order, each failing with a [[io.kstate.KStateException]]: the arguments
   * (`KSTATE_INVALID_STATE_READ`); the checkpoint exists (`KSTATE_CHECKPOINT_NOT_FOUND`); it has a
   * committed batch (`KSTATE_STATE_NOT_FOUND`); it has a table of that name
   * (`KSTATE_TABLE_NOT_FOUND`, listing the tables it has); the table is versioned
   * (`KSTATE_TABLE_NOT_VERSIONED`). Reads only metadata.
   */
  def resolve(session: ClassicSession, checkpointLocation: String, name: String): TableReadTarget = {
    if (checkpointLocation == null || checkpointLocation.trim.isEmpty) {
      throw KStateErrors.invalidStateRead("the checkpoint location is empty")
    }
    if (name == null || name.isEmpty) throw KStateErrors.invalidStateRead("the table name is empty")
    val view = new CheckpointView(session, checkpointLocation)
    if (!CheckpointFileManager.create(view.root, view.hadoopConf).exists(view.root)) {
      throw KStateErrors.checkpointNotFound(view.root.toString)
    }
    if (view.committedBatches.isEmpty) throw KStateErrors.noCommittedBatch(view.root.toString)
    val tables = view.kstateOperators.filter(op => op.config.get("kind").exists(Kinds.contains))
    val table = tables.find(_.name.contains(name)).getOrElse(throw KStateErrors.tableNotFound(
      name, view.root.toString, tables.map(t => s"${t.name.getOrElse("?")} (${t.config("kind")})")))
    if (table.config("kind") != "versioned_table") throw KStateErrors.tableNotVersioned(name, view.root.toString)

    val state = StateReadTarget.resolve(session, checkpointLocation, OperatorSelector.ById(table.id), None,
      io.kstate.KStateStateReader.DefaultStoreName)
    def recorded(key: String): String = table.config.getOrElse(key,
      throw KStateErrors.internal(s"table '$name' has no '$key' in its recorded configuration: ${table.config}"))
    val keyType = state.keySchema.fields.head.dataType
    val timestampType = CatalystSqlParser.parseDataType(recorded("timestampType"))
    // recorded since read_table exists; a checkpoint from before names them "key" and "timestamp"
    val keyColumn = table.config.getOrElse("keyColumn", "key")
    val timestampColumn = table.config.getOrElse("timestampColumn", "timestamp")
    val schema = StructType(StructField(keyColumn, keyType, nullable = false) +:
      state.valueSchema.fields.map(_.copy(nullable = true)) :+
      StructField(timestampColumn, timestampType, nullable = false))
    TableReadTarget(state, recorded("historyRetentionMs").toLong, recorded("graceMs").toLong, keyType,
      state.valueSchema, timestampType, schema)
  }
}
