package io.kstate.tables

import io.kstate.KStateDataFrame
import org.apache.spark.sql.kstate.errors.KStateErrors

import org.apache.spark.sql.{AnalysisException, Column, DataFrame}
import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, AttributeReference, Expression, NamedExpression}
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, LocalRelation, Project}
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.kstate.planning.OperatorIdentity
import org.apache.spark.sql.kstate.plans.{
  DeclarativeTableAggregates,
  KStateTableAggregate,
  KStateTableRegroup,
  TableAggregateSpec,
  TableChangeColumns,
  TableTransforms
}
import org.apache.spark.sql.kstate.shim.SparkShim
import org.apache.spark.sql.types.DataType

/**
 * A table grouped by a new key (Kafka's `KGroupedTable`), built by `table.groupBy(key[, values])`:
 * each table row belongs to the group `key` computes from it (over the table's key, value and
 * timestamp columns) and contributes its grouped value (`values`, default the table's value
 * columns). A row whose group is null, or whose grouped value columns are all null, contributes
 * to no group (Kafka skips a null key or value); a tombstone contributes nothing.
 *
 * An aggregation ([[count]], [[sum]], [[reduce]], [[agg]], [[aggregate]]) gives an UNVERSIONED table keyed by the group,
 * whose rows are each group's aggregate after each change (Kafka's rules, docs/tables.md "Table
 * aggregation"): a table row that changes subtracts its old value from its old group and adds its
 * new value to its new group (one update when both are the same group, KIP-904); on a versioned
 * table an out-of-order update (older than the key's latest version) is ignored (KIP-914). The
 * result's columns: the group key (named as the `key` column), the aggregate column(s), the
 * timestamp column (the table's name and type: the latest of the group's contributing updates).
 *
 * {{{
 *   val byRegion = users.groupBy(col("region"))
 *   byRegion.count()                                   // region, count, ts
 *   users.groupBy(col("region"), col("amount")).sum(col("amount"))
 *   users.groupBy(col("region"), col("amount")).reduce((agg, v) => agg + v, (agg, v) => agg - v)
 *   users.groupBy(col("region"), col("amount")).agg(count("*"), avg("amount"))  // region, count(1), avg(amount), ts
 *   users.groupBy(col("region"), col("amount")).aggregate(lit(0L).as("n"), (agg, v) => agg + 1, (agg, v) => agg - 1)
 * }}}
 */
final class KGroupedTable private[kstate] (table: KTable, key: Column, values: Seq[Column]) {
  private val stream: DataFrame = table.toStream()
  private val changes = table.spec

  private val groupExpr: NamedExpression = {
    val checks = KStateDataFrame(stream)
    checks.checked("group_by key", key, checks.comparable)
    resolvedOverTable("group_by key", Seq(key)).head
  }
  private val valueExprs: Seq[NamedExpression] =
    if (values.isEmpty) changes.valueAttrs
    else {
      values.foreach(v => KStateDataFrame(stream).checked("group_by value", v, (_, _) => ()))
      resolvedOverTable("group_by value", values)
    }

  /** The grouped value's columns as the aggregations' expressions read them. */
  private val valueAttrs: Seq[Attribute] = valueExprs.map(e => AttributeReference(e.name, e.dataType)())

  /** Kafka's `count()`: the number of table rows in each group, in a column `count` (BIGINT). */
  def count(): KTable = count(null)
  def count(name: String): KTable = aggregate(TableAggregateSpec.count(valueAttrs, "count"), valueExprs, name)

  /**
   * The sum of `column` (a numeric expression over the grouped value columns) per group, in a
   * column `sum`: BIGINT for integral input, DOUBLE for floating point, DECIMAL(p + 10, s) for
   * DECIMAL(p, s). kstate's (Kafka's grouped table has no `sum`; its `reduce(+, −)` gives the same
   * values). A row whose `column` is null contributes nothing; a group emptied by subtraction
   * sums to 0 and stays.
   */
  def sum(column: String): KTable = sum(col(column), null)
  def sum(column: Column): KTable = sum(column, null)
  def sum(column: Column, name: String): KTable = {
    val input = resolvedOver(valueAttrs, column, "sum", e => KStateErrors.missingColumn("sum", e.getMessage))
    if (TableAggregateSpec.sumType(input.dataType).isEmpty) {
      throw KStateErrors.invalidTableAggregate(
        s"sum(${input.sql})",
        s"it has type ${input.dataType.sql}, not a " +
          "numeric type (cast it, e.g. F.col('amount').cast('bigint'))"
      )
    }
    val substituted = substitute(input)
    val v = AttributeReference("sum", input.dataType)()
    aggregate(TableAggregateSpec.sum(v, "sum"), Seq(Alias(substituted, "sum")()), name)
  }

  /**
   * Kafka's `reduce(adder, subtractor)`: each group's aggregate has the grouped value's columns;
   * a group's first value is its aggregate, each value added is `adder(aggregate, value)`, each
   * value subtracted `subtractor(aggregate, value)`. The functions are called once, here, on two
   * placeholder columns (named `__kstate_agg` and `__kstate_value`), and must return a column of
   * the value's type: the value column's type when the grouped value is one column, else a struct
   * of the columns (e.g. `struct(agg("a") + v("a") as "a", ...)`). A result that is null (all
   * columns null) deletes the group's aggregate: a tombstone is emitted.
   */
  def reduce(adder: (Column, Column) => Column, subtractor: (Column, Column) => Column): KTable =
    reduce(adder, subtractor, null)
  def reduce(adder: (Column, Column) => Column, subtractor: (Column, Column) => Column, name: String): KTable = {
    val (agg, value) = (col(TableAggregateSpec.AggregatePlaceholder), col(TableAggregateSpec.ValuePlaceholder))
    reduceColumns(adder(agg, value), subtractor(agg, value), name)
  }

  /**
   * [[reduce]] with the functions already applied to the placeholder columns
   * `col("__kstate_agg")` and `col("__kstate_value")` (the Python API's path).
   */
  def reduceColumns(adder: Column, subtractor: Column, name: String): KTable = {
    val t = TableAggregateSpec.placeholderType(valueAttrs)
    val aggP = AttributeReference(TableAggregateSpec.AggregatePlaceholder, t)()
    val valueP = AttributeReference(TableAggregateSpec.ValuePlaceholder, t)()
    aggregate(
      TableAggregateSpec.reduce(
        valueAttrs,
        function("reduce adder", adder, aggP, valueP, t),
        function("reduce subtractor", subtractor, aggP, valueP, t),
        aggP,
        valueP
      ),
      valueExprs,
      name
    )
  }

  /**
   * Spark's declarative aggregates that have a subtractor, several at once: `count(*)`,
   * `count(col)` (non-null values), `sum(col)`, `avg(col)` / `mean(col)`, over the grouped value
   * columns, and expressions over them (`sum("v") / count("v")`), each named as Spark names it
   * (`avg(v)`) or by its alias. Spark's types and null rules: nulls are ignored, a sum or an
   * average of no (non-null) values is null. A group is deleted (a tombstone is emitted) when its
   * last row leaves it, so the result table holds the groups Spark's batch `groupBy.agg` of the
   * current table has, with the same values ([[DeclarativeTableAggregates]]). An aggregate with
   * no subtractor (`min`, `max`, `first`, `collect_list`, ..., DISTINCT or FILTER) is
   * `KSTATE_TABLE_AGGREGATE_WITHOUT_SUBTRACTOR`: write it with [[reduce]] or [[aggregate]].
   */
  def agg(column: Column, columns: Column*): KTable = aggColumns(column +: columns, null)

  /** [[agg]] with an operator name (the Python API's path). */
  def aggColumns(columns: Seq[Column], name: String): KTable = {
    if (columns.isEmpty) throw KStateErrors.invalidTableAggregate(
      "agg()",
      "it has no aggregate column " +
        "(pass e.g. count(\"*\"), sum(\"v\"))"
    )
    val plan =
      try SparkShim.logicalPlan(SparkShim.ofRows(stream, LocalRelation(valueAttrs)).agg(
          columns.head,
          columns.tail: _*
        ))
      catch {
        case e: AnalysisException if Option(e.getCondition).exists(_.startsWith("UNRESOLVED_")) =>
          throw KStateErrors.missingColumn("agg", e.getMessage)
        case e: AnalysisException => throw KStateErrors.invalidTableAggregate(
            "agg",
            "each column must be an " +
              s"aggregate function of the grouped value columns, or an expression over such aggregates (${e.getMessage})"
          )
      }
    val exprs = plan match {
      case a: Aggregate => a.aggregateExpressions
      case other => throw KStateErrors.invalidTableAggregate("agg", s"it is not an aggregation (${other.nodeName})")
    }
    exprs.find(!_.deterministic).foreach(e => throw KStateErrors.nonDeterministic("agg column", e.sql))
    val spec = DeclarativeTableAggregates.spec(valueAttrs, exprs)
    aggregate(spec, valueExprs, name)
  }

  /**
   * Kafka's `aggregate(initializer, adder, subtractor)`: each group's aggregate has the type of
   * `initializer` (a Column expression over no column, e.g. `lit(0L)` or a `struct(...)` of
   * literals), evaluated once; a group's first value is added to it, each value added is
   * `adder(aggregate, value)`, each value subtracted `subtractor(aggregate, value)`, both Column
   * functions on the placeholders `__kstate_agg` (the aggregate's type) and `__kstate_value`
   * (as in [[reduce]]) that must return the aggregate's type (`KSTATE_INVALID_TABLE_AGGREGATE`
   * otherwise). The result's aggregate column is named as `initializer` (`lit(0L).as("n")` →
   * `n`, default `aggregate`); a struct initializer gives one column per field. A result that is
   * null (all columns null) deletes the group (a tombstone); its next value starts again from the
   * initializer.
   */
  def aggregate(
      initializer: Column,
      adder: (Column, Column) => Column,
      subtractor: (Column, Column) => Column
  ): KTable =
    aggregate(initializer, adder, subtractor, null)
  def aggregate(
      initializer: Column,
      adder: (Column, Column) => Column,
      subtractor: (Column, Column) => Column,
      name: String
  ): KTable = {
    val (agg, value) = (col(TableAggregateSpec.AggregatePlaceholder), col(TableAggregateSpec.ValuePlaceholder))
    aggregateColumns(initializer, adder(agg, value), subtractor(agg, value), name)
  }

  /** [[aggregate]] with the functions already applied to the placeholder columns (the Python API's path). */
  def aggregateColumns(initializer: Column, adder: Column, subtractor: Column, name: String): KTable = {
    val init =
      try SparkShim.logicalPlan(SparkShim.ofRows(stream, LocalRelation(Nil)).select(initializer))
      catch {
        case e: AnalysisException => throw KStateErrors.invalidTableAggregate(
            "aggregate initializer",
            s"it must be an expression over no column, e.g. lit(0L) (${e.getMessage})"
          )
      }
    val (initExpr, aggName) = init match {
      case Project(Seq(e), _) if e.deterministic =>
        (unaliased(e), SparkShim.expression(stream, initializer) match { case Alias(_, n) => n; case _ => "aggregate" })
      case _ => throw KStateErrors.invalidTableAggregate(
          "aggregate initializer",
          "it must be one deterministic " +
            "expression over no column, e.g. lit(0L) or struct(lit(0L).as(\"n\"), lit(0.0).as(\"s\"))"
        )
    }
    val t = initExpr.dataType
    val aggP = AttributeReference(TableAggregateSpec.AggregatePlaceholder, t)()
    val valueP =
      AttributeReference(TableAggregateSpec.ValuePlaceholder, TableAggregateSpec.placeholderType(valueAttrs))()
    val spec = TableAggregateSpec.aggregate(
      valueAttrs,
      initExpr,
      aggName,
      function("aggregate adder", adder, aggP, valueP, t),
      function("aggregate subtractor", subtractor, aggP, valueP, t),
      aggP,
      valueP
    )
    aggregate(spec, valueExprs, name)
  }

  /** A function of the placeholders, resolved; it must return `t`. */
  private def function(role: String, c: Column, aggP: Attribute, valueP: Attribute, t: DataType): Expression = {
    val e = resolvedOver(Seq(aggP, valueP), c, role, e => KStateErrors.invalidTableAggregate(role, e.getMessage))
    if (!DataType.equalsStructurally(e.dataType, t, ignoreNullability = true)) {
      throw KStateErrors.invalidTableAggregate(
        s"$role ${e.sql}",
        s"it returns ${e.dataType.sql}, not the " +
          s"aggregate's type ${t.sql} (cast the result)"
      )
    }
    e
  }

  override def toString: String = s"KGroupedTable(${table.name} by ${groupExpr.sql})"

  /** Both stages over the table's change rows; `stage1Values` are over the table's columns. */
  private def aggregate(spec: TableAggregateSpec, stage1Values: Seq[NamedExpression], name: String): KTable = {
    Option(name).foreach(OperatorIdentity.validateName)
    val groupName = groupExpr.name
    val names = (groupName +: spec.output.map(_.name)) :+ table.timestampColumn
    names.groupBy(_.toLowerCase).collectFirst { case (_, ns) if ns.size > 1 => ns.head }.foreach { n =>
      throw KStateErrors.invalidTableAggregate(
        s"group key '$groupName'",
        s"the result would have two columns " +
          s"named '$n' (${names.mkString(", ")}): name the group key otherwise, e.g. col(...).alias(\"group\")"
      )
    }
    val group = unaliased(groupExpr)
    val stage1 = stage1Values.map(unaliased)
    val regroup = KStateTableRegroup(
      group,
      stage1,
      TableTransforms.onOld(changes, group),
      stage1.map(TableTransforms.onOld(changes, _)),
      changes.valueAttrs,
      changes.oldValue,
      changes.latest,
      changes.attr(changes.timestamp),
      table.isVersioned,
      KStateTableRegroup.outputOf(groupName, group, spec.valueType),
      changes.plan
    )
    val ts = changes.attr(changes.timestamp)
    val node = KStateTableAggregate(
      spec,
      Option(name),
      regroup.groupAttr,
      regroup.addAttr,
      regroup.subtractAttr,
      regroup.timestampAttr,
      spec.output,
      AttributeReference(ts.name, ts.dataType, nullable = false)(),
      TableChangeColumns.oldValueAttribute(spec.output),
      TableChangeColumns.latestAttribute(),
      regroup
    )
    new KTable(
      KStateDataFrame.withNode(stream, node),
      groupName,
      ts.name,
      spec.output.map(_.name),
      None,
      Option(name).getOrElse(node.kind),
      table.processingOrder
    )
  }

  private def unaliased(e: Expression): Expression = e match {
    case Alias(child, _) => child
    case other => other
  }

  /** `e` over the grouped value attributes, with each replaced by its expression over the table. */
  private def substitute(e: Expression): Expression = {
    val byId = valueAttrs.map(_.exprId).zip(valueExprs.map(unaliased)).toMap
    e.transform { case a: Attribute if byId.contains(a.exprId) => byId(a.exprId) }
  }

  /** `columns` resolved over the table's key, value and timestamp columns. */
  private def resolvedOverTable(role: String, columns: Seq[Column]): Seq[NamedExpression] = {
    val plan =
      try SparkShim.logicalPlan(stream.select(columns: _*))
      catch {
        case e: AnalysisException => throw KStateErrors.missingColumn(role, e.getMessage)
      }
    plan match {
      case Project(exprs, _) => exprs
      case _ => throw KStateErrors.invalidTableAggregate(
          role,
          "it is an aggregate function; group_by takes " +
            "expressions over a table row"
        )
    }
  }

  /** `c` resolved over `attrs` alone (a one-column row expression), without its alias. */
  private def resolvedOver(
      attrs: Seq[Attribute],
      c: Column,
      role: String,
      unresolved: AnalysisException => Exception
  ): Expression = {
    val plan =
      try SparkShim.logicalPlan(SparkShim.ofRows(stream, LocalRelation(attrs)).select(c))
      catch {
        case e: AnalysisException => throw unresolved(e)
      }
    plan match {
      case Project(Seq(e), _) =>
        if (!e.deterministic) throw KStateErrors.nonDeterministic(role, e.sql)
        unaliased(e)
      case _ => throw KStateErrors.invalidTableAggregate(
          role,
          "it is an aggregate function; it takes an " +
            "expression over one grouped value (and the aggregate)"
        )
    }
  }
}
