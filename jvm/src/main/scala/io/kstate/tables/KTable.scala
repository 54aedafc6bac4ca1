package io.kstate.tables

import io.kstate.{KStateDataFrame, ProcessingOrder}
import org.apache.spark.sql.kstate.errors.KStateErrors
import io.kstate.suppress.Suppressed

import org.apache.spark.sql.{AnalysisException, Column, DataFrame}
import org.apache.spark.sql.catalyst.expressions.NamedExpression
import org.apache.spark.sql.kstate.planning.OperatorIdentity
import org.apache.spark.sql.kstate.plans.{KStateFkJoin, KStateTableJoin, TableTransforms}
import org.apache.spark.sql.kstate.shim.SparkShim

/**
 * A table (Kafka's `KTable`): a changelog of keyed updates, materialized per state partition.
 * Built by `df.kstate.toTable(key, timestamp[, versioned])`; a table's rows are its updates in
 * processing order, each with the key's value after it (its value columns; all null: a
 * tombstone).
 *
 * Versioned or not (KIP-914): a table is versioned iff it was materialized as versioned
 * (`toTable(..., VersionedTable.of(...))`) with no unversioned materialization, aggregation or
 * join in between; `filter` and `mapValues` keep it, `toStream()` loses it (`toTable` again,
 * versioned, to get it back). [[isVersioned]] tells.
 *
 * Operations:
 *  - [[toStream]]: the table's updates as a DataFrame (key, value and timestamp columns; a
 *    tombstone's value columns are null), usable with any sink in append or update mode;
 *  - [[filter]] / [[filterNot]], [[mapValues]]: Kafka's stateless table operations (rules in
 *    `org.apache.spark.sql.kstate.plans.TableTransforms`);
 *  - [[suppress]]: Kafka's `KTable#suppress`, not allowed on a versioned table
 *    (`KSTATE_SUPPRESS_ON_VERSIONED_TABLE`, KIP-914).
 */
final class KTable private[kstate] (
    changes: DataFrame,
    val keyColumn: String,
    val timestampColumn: String,
    val valueColumns: Seq[String],
    versioned: Option[VersionedTable],
    val name: String,
    order: Option[ProcessingOrder]
) {

  def isVersioned: Boolean = versioned.isDefined

  /** The versioned materialization, or null for an unversioned table. */
  def versionedTable: VersionedTable = versioned.orNull

  /**
   * The table's change rows (for kstate's table operators): its own columns (key, values,
   * timestamp; a tombstone's values are null), then `__kstate_old` (the key's previous value as
   * a struct of the value columns, null when absent) and `__kstate_latest` (false only for an
   * out-of-order update of a versioned table); in processing order within each partition.
   */
  private[kstate] def changeRows: DataFrame = changes
  private[kstate] def versioning: Option[VersionedTable] = versioned
  private[kstate] def processingOrder: Option[ProcessingOrder] = order

  private[kstate] def spec: TableTransforms.Changes =
    TableTransforms.Changes(SparkShim.logicalPlan(changes), keyColumn, timestampColumn, valueColumns)

  /** The table's updates: its key, value and timestamp columns, one row per update. */
  def toStream(): DataFrame = changes.select(spec.userColumns.map(a => changes.col(quoted(a.name))): _*)

  /**
   * Keeps the values `condition` holds for (true; false or null turn the value into a tombstone),
   * as Kafka's `KTable#filter`; the condition reads the key and value columns. On an unversioned
   * table a tombstone following a tombstone of the same key is not passed on; on a versioned one
   * it is (KIP-914).
   */
  def filter(condition: Column): KTable = {
    val c = resolved("condition", Seq(condition)).head
    withChanges(TableTransforms.filter(spec, c, isVersioned), valueColumns)
  }

  /** [[filter]] with the negated condition (Kafka's `filterNot`: null counts as not holding). */
  def filterNot(condition: Column): KTable =
    filter(org.apache.spark.sql.functions.not(org.apache.spark.sql.functions.coalesce(
      condition,
      org.apache.spark.sql.functions.lit(false)
    )))

  /**
   * New value columns computed from each value (Kafka's `KTable#mapValues`), e.g.
   * `mapValues(upper(col("name")).as("name"), col("age") + 1 as "age")`; the key and timestamp
   * columns stay. A tombstone stays a tombstone; a value mapped to all nulls becomes one.
   */
  def mapValues(first: Column, rest: Column*): KTable = mapValues(first +: rest)
  def mapValues(columns: Seq[Column]): KTable = {
    if (columns.isEmpty) throw KStateErrors.invalidTableColumn("value", "is empty: mapValues needs at least one column")
    val exprs = resolved("mapValues column", columns)
    val names = exprs.map(_.name)
    (names ++ Seq(keyColumn, timestampColumn)).groupBy(_.toLowerCase).collectFirst {
      case (_, ns) if ns.size > 1 => ns.head
    }.foreach(n =>
      throw KStateErrors.invalidTableColumn(
        "value",
        s"column '$n' is named twice or like the " +
          "key or timestamp column: name each mapped column uniquely (.as(...))"
      )
    )
    val (plan, values) = TableTransforms.mapValues(spec, exprs)
    withChanges(plan, values)
  }

  /**
   * Kafka's `KTable#suppress` on this table's updates, by its key and timestamp (see
   * `KStateDataFrame.suppress`). A versioned table cannot be suppressed (KIP-914).
   */
  def suppress(suppressed: Suppressed): DataFrame = {
    if (isVersioned) throw KStateErrors.suppressOnVersionedTable(name)
    val s = toStream()
    new KStateDataFrame(s, order).suppress(suppressed, s.col(quoted(keyColumn)), s.col(quoted(timestampColumn)), null)
  }

  /**
   * Kafka's primary-key table–table join (`KTable#join`, `leftJoin`, `outerJoin`): `how` is
   * "inner", "left" or "outer". Both tables must have the same key type and timestamp type
   * (`KSTATE_MISMATCHED_INPUTS`); their value columns, with this table's key and timestamp
   * columns, must have distinct names (`KSTATE_JOIN_COLUMN_CLASH`: rename with [[mapValues]]).
   *
   * The result is an unversioned table keyed like this one (KIP-914: a join does not keep
   * versions) whose columns are this table's key, this table's value columns, `other`'s value
   * columns and this table's timestamp column; a side without a value has null value columns.
   * Each update of either side joins the other side's latest value and makes a result row with
   * the timestamp max of both; on a versioned side an out-of-order update makes none (KIP-914).
   * Rules and differences from Kafka: docs/tables.md, "Table–table joins".
   * {{{
   *   val joined = users.join(profiles.mapValues(col("city")), "left")
   * }}}
   */
  def join(other: KTable): KTable = join(other, "inner", null)
  def join(other: KTable, how: String): KTable = join(other, how, null)
  def join(other: KTable, how: String, name: String): KTable = {
    Option(name).foreach(OperatorIdentity.validateName)
    val node = KStateTableJoin.of(spec, versioned, other.spec, other.versioning, how, Option(name))
    new KTable(
      KStateDataFrame.withNode(changes, node),
      keyColumn,
      timestampColumn,
      valueColumns ++ other.valueColumns,
      None,
      Option(name).getOrElse(node.kind),
      order
    )
  }

  /**
   * Kafka's foreign-key table–table join (KIP-213: `KTable#join` / `leftJoin` with a foreign-key
   * extractor): each row of this table joins the row of `other` whose key is `foreignKey`, an
   * expression over this table's key and value columns (e.g. `col("country_id")`); `how` is
   * "inner" (a row without a matching right row has no result) or "left" (it joins with null
   * right columns). The foreign key must have `other`'s key type (a narrower numeric type is
   * widened; `KSTATE_FOREIGN_KEY_TYPE_MISMATCH` otherwise) and be deterministic
   * (`KSTATE_NON_DETERMINISTIC_EXPRESSION`); both tables need the same timestamp type
   * (`KSTATE_MISMATCHED_INPUTS`) and distinct column names (`KSTATE_JOIN_COLUMN_CLASH`).
   *
   * The result is an unversioned table keyed like this one (KIP-914), with this table's key,
   * this table's value columns, `other`'s value columns and this table's timestamp column. An
   * update of this table joins `other`'s latest value of its foreign key (timestamp: the max of
   * both); an update of `other` re-joins every row of this table that refers to its key (at the
   * update's timestamp). When a row's foreign key changes, no result of its old foreign key
   * survives (Kafka's rule). On a versioned side an out-of-order update makes no result. Rules:
   * docs/tables.md, "Foreign-key joins".
   * {{{
   *   val enriched = orders.join(customers, col("customer_id"), "left")
   * }}}
   */
  def join(other: KTable, foreignKey: Column): KTable = join(other, foreignKey, "inner", null)
  def join(other: KTable, foreignKey: Column, how: String): KTable = join(other, foreignKey, how, null)
  def join(other: KTable, foreignKey: Column, how: String, name: String): KTable = {
    Option(name).foreach(OperatorIdentity.validateName)
    val stream = toStream()
    val checks = KStateDataFrame(stream)
    checks.checked("foreign_key", foreignKey, checks.comparable)
    val fk = resolved("foreign_key", Seq(foreignKey)).head
    val node = KStateFkJoin.of(spec, other.spec, other.versioning, fk, how, Option(name))
    new KTable(
      KStateDataFrame.withNode(changes, node),
      keyColumn,
      timestampColumn,
      valueColumns ++ other.valueColumns,
      None,
      Option(name).getOrElse(node.kind),
      order
    )
  }

  /**
   * Groups the table's rows by a new key (Kafka's `KTable#groupBy`) for [[KGroupedTable.count]],
   * `sum` or `reduce`: `key` (and `values`, default the table's value columns) are expressions
   * over the table's key, value and timestamp columns, e.g. `groupBy(col("region"))`,
   * `groupBy(col("region"), col("amount"))`. The aggregate is an unversioned table keyed by the group.
   */
  def groupBy(key: Column): KGroupedTable = new KGroupedTable(this, key, Nil)
  def groupBy(key: Column, value: Column, more: Column*): KGroupedTable = new KGroupedTable(this, key, value +: more)
  def groupBy(key: Column, values: Seq[Column]): KGroupedTable = new KGroupedTable(this, key, values)

  override def toString: String =
    s"KTable($name: key=$keyColumn, timestamp=$timestampColumn, values=${valueColumns.mkString("[", ", ", "]")}" +
      versioned.map(v => ", " + v.describe).getOrElse("") + ")"

  private def quoted(n: String): String = "`" + n.replace("`", "``") + "`"

  private def resolved(role: String, columns: Seq[Column]): Seq[NamedExpression] = {
    val plan =
      try SparkShim.logicalPlan(changes.select(columns: _*))
      catch {
        case e: AnalysisException => throw KStateErrors.missingColumn(role, e.getMessage)
      }
    plan.expressions.map(_.asInstanceOf[NamedExpression])
  }

  private def withChanges(plan: org.apache.spark.sql.catalyst.plans.logical.LogicalPlan, values: Seq[String]): KTable =
    new KTable(SparkShim.ofRows(changes, plan), keyColumn, timestampColumn, values, versioned, name, order)
}
