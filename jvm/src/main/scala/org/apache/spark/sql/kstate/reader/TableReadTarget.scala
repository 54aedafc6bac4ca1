package org.apache.spark.sql.kstate.reader

import org.apache.spark.sql.kstate.errors.KStateErrors

import org.apache.spark.sql.kstate.execution.{KStateStreamTableJoinExec, KStateTableJoinExec}
import org.apache.spark.sql.kstate.planning.TableJoinSources
import org.apache.spark.sql.kstate.plans.JoinedTableSource

import org.apache.spark.sql.catalyst.parser.CatalystSqlParser
import org.apache.spark.sql.classic.{SparkSession => ClassicSession}
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager
import org.apache.spark.sql.types.{DataType, StructField, StructType}

/**
 * What the tasks of a versioned table read need, resolved and checked on the driver: the state
 * of the operator that materializes the table ([[state]]: latest committed batch, partitions,
 * store configuration) and the versioned store's name in it ([[storeName]]: the table source's,
 * or a stream–table join's that does its source's work, [[JoinedTableSource]]), its history
 * retention and grace (to open the versioned store as the query does) and its columns.
 *
 * @param schema the result's columns: the key column, the value columns, the timestamp column,
 *   named and typed as the table's
 */
final case class TableReadTarget(
    state: StateReadTarget,
    storeName: String,
    historyRetentionMs: Long,
    graceMs: Long,
    keyType: DataType,
    valueSchema: StructType,
    timestampType: DataType,
    schema: StructType
)

object TableReadTarget {

  /** The name of the versioned store the table source keeps its versions in (`kstate_vs_table_*`). */
  val VersionedStoreName: String = org.apache.spark.sql.kstate.execution.KStateTableSourceExec.VersionedStoreName

  private val Kinds = Set("table", "versioned_table")

  /**
   * An operator that materializes a table: its name, kind, the prefix of the table's entries in
   * its recorded configuration and the versioned store's name.
   */
  private final case class Found(
      op: RecordedOperator,
      name: Option[String],
      kind: String,
      prefix: String,
      storeName: String,
      valueTypeKey: Option[String] = None
  )

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
    // a table source, or a stream–table join that does its (named) table source's work
    val sources = view.kstateOperators.filter(op => op.config.get("kind").exists(Kinds.contains))
      .map(op => Found(op, op.name, op.config("kind"), "", VersionedStoreName))
    val inJoins = view.kstateOperators.filter(_.config.contains(JoinedTableSource.Name))
      .map(op =>
        Found(
          op,
          op.config.get(JoinedTableSource.Name),
          op.config(JoinedTableSource.Kind),
          JoinedTableSource.Prefix,
          KStateStreamTableJoinExec.VersionedStoreName
        )
      )
    // a table–table join that does both its tables' sources' work (TableJoinSources)
    val inTableJoins = view.kstateOperators.filter(_.config.get("kind").contains("table_join")).flatMap { op =>
      Seq(
        (TableJoinSources.LeftPrefix, KStateTableJoinExec.LeftVersionedName, "leftValueType"),
        (TableJoinSources.RightPrefix, KStateTableJoinExec.RightVersionedName, "rightValueType")
      ).filter { case (p, _, _) => op.config.contains(p + "name") }.map { case (p, store, valueType) =>
        Found(op, op.config.get(p + "name"), op.config(p + "kind"), p, store, Some(valueType))
      }
    }
    val tables = sources ++ inJoins ++ inTableJoins
    val found = tables.find(_.name.contains(name)).getOrElse(throw KStateErrors.tableNotFound(
      name,
      view.root.toString,
      tables.map(t => s"${t.name.getOrElse("?")} (${t.kind})")
    ))
    if (found.kind != "versioned_table") throw KStateErrors.tableNotVersioned(name, view.root.toString)
    val table = found.op

    val state = StateReadTarget.resolve(
      session,
      checkpointLocation,
      OperatorSelector.ById(table.id),
      None,
      StateReadTarget.DefaultStoreName
    )
    def recorded(key: String): String = table.config.getOrElse(
      key,
      throw KStateErrors.internal(s"table '$name' has no '$key' in its recorded configuration: ${table.config}")
    )
    val p = found.prefix
    val keyType = state.keySchema.fields.head.dataType
    val timestampType = CatalystSqlParser.parseDataType(recorded(p + "timestampType"))
    // recorded since read_table exists; a checkpoint from before names them "key" and "timestamp"
    val keyColumn = table.config.getOrElse(p + "keyColumn", "key")
    val timestampColumn = table.config.getOrElse(p + "timestampColumn", "timestamp")
    // a table of a table–table join: its value columns are the join's record of that side's
    val valueSchema = found.valueTypeKey.map(k =>
      CatalystSqlParser.parseDataType(recorded(k)) match {
        case s: StructType => s
        case other => throw KStateErrors.internal(s"table '$name': '$k' is not a struct: $other")
      }
    ).getOrElse(state.valueSchema)
    val schema = StructType(StructField(keyColumn, keyType, nullable = false) +:
      valueSchema.fields.map(_.copy(nullable = true)) :+
      StructField(timestampColumn, timestampType, nullable = false))
    TableReadTarget(
      state,
      found.storeName,
      recorded((if (found.valueTypeKey.isDefined) p else "") + "historyRetentionMs").toLong,
      recorded(p + "graceMs").toLong,
      keyType,
      valueSchema,
      timestampType,
      schema
    )
  }
}
