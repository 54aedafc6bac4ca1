package io.kstate

import org.apache.spark.sql.kstate.errors.KStateErrors

import java.time.{Duration => JDuration}

import org.apache.spark.sql.kstate.plans.DedupMode
import io.kstate.suppress.{Suppressed, UntilTimeLimit, UntilWindowCloses}
import io.kstate.tables.{KTable, VersionedTable}
import io.kstate.windows.{SessionWindows, SlidingWindows, TimeWindows, Windows}

import org.apache.spark.sql.{AnalysisException, Column, DataFrame}
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, Expression, NamedExpression}
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, EventTimeWatermark, LogicalPlan}
import org.apache.spark.sql.kstate.planning.{ExpressionLineage, OperatorIdentity}
import org.apache.spark.sql.kstate.plans.{
  AggregateSpec,
  KStateDeduplicate,
  KStateStatefulNode,
  KStateStreamTableJoin,
  KStateSuppress,
  KStateTableSource,
  KStateWindowedAggregate,
  KStateWindowedDistinct,
  TableChangeColumns
}
import org.apache.spark.sql.kstate.shim.{RunningQuery, SparkShim}
import org.apache.spark.sql.types._

/**
 * kstate's operations on one DataFrame. Scala: `import io.kstate.implicits._; df.kstate...`;
 * Python: `df.kstate...`.
 *
 * Arguments are checked here, when the DataFrame is built, not when the query runs: unknown
 * columns, wrong types, non-deterministic expressions and bad durations raise a
 * [[KStateException]] that names the argument.
 */
final class KStateDataFrame(df: DataFrame, order: Option[ProcessingOrder]) {
  def this(df: DataFrame) = this(df, None)

  /**
   * The same operations, with the operators built through them processing each micro-batch in
   * `order` instead of the session's `spark.kstate.processingOrder` ([[ProcessingOrder]];
   * docs/operators.md, "Processing order"): e.g.
   * `df.kstate.withProcessingOrder(ProcessingOrder.EventTime).deduplicateByKey(...)`.
   */
  def withProcessingOrder(order: ProcessingOrder): KStateDataFrame = new KStateDataFrame(df, Option(order))

  /** [[withProcessingOrder]] by name: `auto`, `task` or `event_time`. */
  def withProcessingOrder(order: String): KStateDataFrame =
    withProcessingOrder(ProcessingOrder.parse("withProcessingOrder", order))

  /**
   * KIP-655 `deduplicateByKey`: drops a record when a record with the same key was forwarded
   * within `interval` (inclusive) of its timestamp. Null keys are always forwarded.
   * Records meet in the state partition of their key.
   */
  def deduplicateByKey(interval: String, key: Column, timestamp: Column): DataFrame =
    dedup(DedupMode.ByKey, Durations.toMillis("interval", interval), Some(key), None, timestamp, None)
  def deduplicateByKey(interval: String, key: Column, timestamp: Column, name: String): DataFrame =
    dedup(DedupMode.ByKey, Durations.toMillis("interval", interval), Some(key), None, timestamp, Option(name))
  def deduplicateByKey(interval: JDuration, key: Column, timestamp: Column, name: String): DataFrame =
    dedup(DedupMode.ByKey, Durations.toMillis("interval", interval), Some(key), None, timestamp, Option(name))

  /**
   * KIP-655 `deduplicateByKeyValue`: duplicates share key and `id`; a null key or null id is
   * always forwarded. Records meet in the state partition of their key.
   */
  def deduplicateByKeyValue(id: Column, interval: String, key: Column, timestamp: Column): DataFrame =
    dedup(DedupMode.ByKeyValue, Durations.toMillis("interval", interval), Some(key), Some(id), timestamp, None)
  def deduplicateByKeyValue(
      id: Column,
      interval: String,
      key: Column,
      timestamp: Column,
      name: String
  ): DataFrame =
    dedup(DedupMode.ByKeyValue, Durations.toMillis("interval", interval), Some(key), Some(id), timestamp, Option(name))
  def deduplicateByKeyValue(
      id: Column,
      interval: JDuration,
      key: Column,
      timestamp: Column,
      name: String
  ): DataFrame =
    dedup(DedupMode.ByKeyValue, Durations.toMillis("interval", interval), Some(key), Some(id), timestamp, Option(name))

  /**
   * KIP-655 `deduplicate`: duplicates share `id`, across all input partitions (records are
   * repartitioned by id). A null id is always forwarded.
   */
  def deduplicate(id: Column, interval: String, timestamp: Column): DataFrame =
    dedup(DedupMode.ById, Durations.toMillis("interval", interval), None, Some(id), timestamp, None)
  def deduplicate(id: Column, interval: String, timestamp: Column, name: String): DataFrame =
    dedup(DedupMode.ById, Durations.toMillis("interval", interval), None, Some(id), timestamp, Option(name))
  def deduplicate(id: Column, interval: JDuration, timestamp: Column, name: String): DataFrame =
    dedup(DedupMode.ById, Durations.toMillis("interval", interval), None, Some(id), timestamp, Option(name))

  /**
   * Groups records by `key` into `windows` by event time, for windowed operations such as
   * [[KStateWindowedStream.distinct]].
   */
  def windowedBy(windows: Windows, key: Column, timestamp: Column): KStateWindowedStream = {
    RunningQuery.register(SparkShim.session(df))
    val ts = checked("timestamp", timestamp, eventTime)
    new KStateWindowedStream(df, windows, checked("key", key, comparable), ts.expr, ts.dataType, order)
  }

  /**
   * KIP-328 `suppress`. `Suppressed.untilWindowCloses` on a kstate windowed aggregation
   * (`windowedBy(...).count()` / `.agg(...)` directly before it) fuses into that operator: one
   * stateful operator, no second buffer, exactly one final result per key and window.
   */
  def suppress(suppressed: Suppressed): DataFrame = suppress(suppressed, null, null, null)

  /**
   * `suppress` with the table's key and timestamp columns named (needed by `untilTimeLimit` on
   * anything but a kstate windowed aggregation, whose key is (key, window_start) and timestamp
   * its `timestamp` column), and an operator name.
   *
   * `Suppressed.untilTimeLimit(limit, buffer)`: per key, the first update starts a timer; later
   * updates replace the buffered row without restarting it; the latest row is emitted once the
   * partition's stream time (largest timestamp seen) >= first buffered time + limit. Output is
   * the input rows, unchanged.
   */
  def suppress(suppressed: Suppressed, key: Column, timestamp: Column, name: String): DataFrame =
    suppressTable(suppressed, key, timestamp, null, null, name)

  /**
   * `Suppressed.untilWindowCloses` on a windowed table that is not a kstate windowed
   * aggregation (e.g. Spark's own windowed aggregation in update mode): `key` identifies a
   * window's row (key columns and the window), `windowEnd` is its end, `timestamp` the update's
   * event time (stream time follows it), and `grace` how long after its end a window stays
   * open (Spark: the watermark delay). Each window's latest row is emitted once, when stream
   * time >= window end + grace; an update for a window already closed is dropped.
   */
  def suppressWindows(
      suppressed: UntilWindowCloses,
      key: Column,
      windowEnd: Column,
      timestamp: Column,
      grace: String,
      name: String
  ): DataFrame =
    suppressTable(suppressed, key, timestamp, windowEnd, grace, name)

  /** Both `suppress` forms, for Python: `windowEnd`/`grace` null except for windowed tables. */
  def suppressTable(
      suppressed: Suppressed,
      key: Column,
      timestamp: Column,
      windowEnd: Column,
      grace: String,
      name: String
  ): DataFrame = {
    Option(name).foreach(OperatorIdentity.validateName)
    val plan = SparkShim.logicalPlan(df)
    val named = key != null || timestamp != null || windowEnd != null || grace != null
    (plan, suppressed) match {
      case (a: KStateWindowedAggregate, u: UntilWindowCloses) if !named =>
        if (a.finalResults.isDefined) {
          throw KStateErrors.unsupportedSuppress(
            "this windowed aggregation is already suppressed until its windows close"
          )
        }
        KStateDataFrame.withNode(df, a.copy(finalResults = Some(u)))
      case (_: KStateWindowedAggregate, _: UntilWindowCloses) =>
        throw KStateErrors.unsupportedSuppress("until_window_closes on a kstate windowed aggregation takes no " +
          "key, timestamp, window end or grace: it uses the aggregation's own")
      case _ if !df.isStreaming =>
        throw KStateErrors.unsupportedSuppress("suppress runs on streaming DataFrames only, apart from " +
          "until_window_closes fused into a kstate windowed aggregation (its timers follow stream time " +
          "across micro-batches)")
      case (_, _: UntilWindowCloses) if !named =>
        throw KStateErrors.unsupportedSuppress("until_window_closes needs a kstate windowed aggregation " +
          "directly before it (df.kstate.windowed_by(...).count() or .agg(...)), or, on another windowed " +
          "table (e.g. Spark's own windowed aggregation), its key=, window_end=, timestamp= and grace=")
      case (_, u: UntilWindowCloses) =>
        if (key == null || timestamp == null || windowEnd == null || grace == null) {
          throw KStateErrors.missingColumn(
            Seq(
              "key" -> key,
              "timestamp" -> timestamp,
              "window_end" -> windowEnd,
              "grace" -> grace
            ).collectFirst { case (n, null) => n }.get,
            "until_window_closes on a table that is not a kstate windowed aggregation needs key=, " +
              "window_end=, timestamp= and grace= (e.g. Spark's window struct's end and its watermark delay)"
          )
        }
        suppressNode(u, Durations.toMillis("grace", grace), key, timestamp, Some(windowEnd), name)
      case (_, u: UntilTimeLimit) =>
        if (windowEnd != null || grace != null) {
          throw KStateErrors.unsupportedSuppress("until_time_limit takes no window end or grace")
        }
        val (k, ts) = (plan, Option(key), Option(timestamp)) match {
          case (_, Some(k), Some(t)) => (k, t)
          case (a: KStateWindowedAggregate, None, None) =>
            // a window is (key, start); a session is (key, start, end), as Kafka's Windowed key
            val window = Seq(a.keyAttr, a.windowStart) ++ a.tombstoneAttr.map(_ => a.windowEnd)
            (
              org.apache.spark.sql.functions.struct(window.map(w => df.col(w.name)): _*),
              df.col(a.timestampAttr.name)
            )
          case _ => throw KStateErrors.missingColumn(
              if (key == null) "key" else "timestamp",
              "until_time_limit needs the table's key and timestamp columns (key=..., timestamp=...), " +
                "unless it follows a kstate windowed aggregation directly"
            )
        }
        suppressNode(u, u.timeLimitMs, k, ts, None, name)
    }
  }

  private def suppressNode(
      suppressed: Suppressed,
      limitMs: Long,
      key: Column,
      timestamp: Column,
      windowEnd: Option[Column],
      name: String
  ): DataFrame = {
    RunningQuery.register(SparkShim.session(df))
    val keyE = checked("key", key, comparable).expr
    val tsE = checked("timestamp", timestamp, eventTime).expr
    val endE = windowEnd.map(c => checked("window_end", c, eventTime).expr)
    KStateDataFrame.withNode(
      df,
      KStateSuppress(
        suppressed,
        limitMs,
        Option(name),
        keyE,
        tsE,
        endE,
        order,
        SparkShim.logicalPlan(df)
      )
    )
  }

  private def dedup(
      mode: DedupMode,
      intervalMs: Long,
      key: Option[Column],
      id: Option[Column],
      timestamp: Column,
      name: Option[String]
  ): DataFrame = {
    name.foreach(OperatorIdentity.validateName)
    RunningQuery.register(SparkShim.session(df))
    val keyE = key.map(c => checked("key", c, comparable).expr)
    val idE = id.map(c => checked("id", c, comparable).expr)
    val tsE = checked("timestamp", timestamp, eventTime).expr
    KStateDataFrame.withNode(
      df,
      KStateDeduplicate(mode, intervalMs, name, keyE, idE, tsE, order, SparkShim.logicalPlan(df))
    )
  }

  /**
   * This DataFrame as a table's changelog (Kafka's `KStream#toTable` with a materialization):
   * each row is an update of the key in column `key`, at the event time in column `timestamp`,
   * whose value is the row's other columns; a row whose value columns are all null is a
   * tombstone (the key is deleted; to keep an all-null value, pack the columns into a struct).
   * `key` and `timestamp` must be columns of this DataFrame (`withColumn` first for an
   * expression). Each state partition keeps its keys' latest values (by processing order), or,
   * with `versioned`, their history by timestamp (KIP-889/914): see [[io.kstate.tables.KTable]].
   *
   * {{{
   *   val profiles = updates.kstate.toTable(col("user"), col("ts"), VersionedTable.of("1 day"))
   * }}}
   */
  def toTable(key: Column, timestamp: Column): KTable = toTable(key, timestamp, null, null)
  def toTable(key: Column, timestamp: Column, versioned: VersionedTable): KTable =
    toTable(key, timestamp, versioned, null)
  def toTable(key: Column, timestamp: Column, versioned: VersionedTable, name: String): KTable = {
    Option(name).foreach(OperatorIdentity.validateName)
    RunningQuery.register(SparkShim.session(df))
    val plan = SparkShim.logicalPlan(df)
    val k = tableColumn("key", key, plan, comparable)
    val ts = tableColumn("timestamp", timestamp, plan, eventTime)
    if (k.exprId == ts.exprId) throw KStateErrors.invalidTableColumn(
      "timestamp",
      "is the key column: a " +
        "table needs a key column and a separate event-time column"
    )
    val names = plan.output.map(_.name)
    names.groupBy(_.toLowerCase).collectFirst { case (_, ns) if ns.size > 1 => ns.head }.foreach { n =>
      throw KStateErrors.invalidTableColumn("columns", s"include '$n' twice: rename one (withColumnRenamed)")
    }
    names.find(_.startsWith("__kstate_")).foreach { n =>
      throw KStateErrors.invalidTableColumn("columns", s"include '$n': names starting with __kstate_ are kstate's own")
    }
    val values = plan.output.filterNot(a => a.exprId == k.exprId || a.exprId == ts.exprId)
    if (values.isEmpty) throw KStateErrors.invalidTableColumn(
      "value",
      "is empty: the DataFrame has only " +
        "the key and timestamp columns; a table needs at least one value column"
    )
    val node = KStateTableSource(
      k,
      ts,
      values,
      Option(versioned),
      Option(name),
      order,
      TableChangeColumns.oldValueAttribute(values),
      TableChangeColumns.latestAttribute(),
      plan
    )
    new KTable(
      KStateDataFrame.withNode(df, node),
      k.name,
      ts.name,
      values.map(_.name),
      Option(versioned),
      Option(name).getOrElse(node.kind),
      order
    )
  }

  /**
   * Kafka's stream–table join (`KStream#join` / `leftJoin` with a `KTable`): each row of this
   * DataFrame (the stream) is joined with `table`'s value for its `key`: as of the row's
   * `timestamp` when the table is versioned (KIP-914), else the table's latest value in
   * processing order. `how` is `"inner"` (rows without a table value are dropped) or `"left"`
   * (they are emitted with null table values). `grace` (KIP-923, versioned tables only, at most
   * the history retention) holds each row back until the partition's stream time reaches its
   * timestamp + grace, so that table updates arriving later but older than the row still count;
   * null for none. Output: this DataFrame's columns followed by the table's value columns; each
   * result carries its stream row's timestamp. Rules and differences from Kafka: docs/tables.md,
   * "Stream–table join".
   *
   * {{{
   *   val enriched = clicks.kstate.join(profiles, col("user"), col("ts"), "left", "10 seconds", "enrich")
   * }}}
   */
  def join(table: KTable, key: Column, timestamp: Column): DataFrame =
    join(table, key, timestamp, "inner", null: String, null)
  def join(table: KTable, key: Column, timestamp: Column, how: String): DataFrame =
    join(table, key, timestamp, how, null: String, null)
  def join(table: KTable, key: Column, timestamp: Column, how: String, grace: JDuration, name: String): DataFrame =
    streamTableJoin(table, key, timestamp, how, Option(grace).map(g => Durations.toMillis("grace", g)), name)
  def join(table: KTable, key: Column, timestamp: Column, how: String, grace: String, name: String): DataFrame =
    streamTableJoin(table, key, timestamp, how, Option(grace).map(g => Durations.toMillis("grace", g)), name)

  private def streamTableJoin(
      table: KTable,
      key: Column,
      timestamp: Column,
      how: String,
      graceMs: Option[Long],
      name: String
  ): DataFrame = {
    if (table == null) throw KStateErrors.missingColumn("table", "no table was given")
    val leftJoin = Option(how).map(_.toLowerCase) match {
      case Some("inner") => false
      case Some("left") => true
      case _ => throw KStateErrors.invalidJoinType(String.valueOf(how))
    }
    Option(name).foreach(OperatorIdentity.validateName)
    RunningQuery.register(SparkShim.session(df))
    val plan = SparkShim.logicalPlan(df)
    def resolved(role: String, c: Column, typeCheck: (String, DataType) => Unit): Expression = {
      checked(role, c, typeCheck)
      SparkShim.logicalPlan(df.select(c)).expressions.head match {
        case a: org.apache.spark.sql.catalyst.expressions.Alias => a.child
        case e => e
      }
    }
    val node = KStateStreamTableJoin(
      leftJoin,
      graceMs,
      table.versioning,
      Option(name),
      order,
      plan,
      resolved("key", key, comparable),
      resolved("timestamp", timestamp, eventTime),
      table.spec
    )
    KStateDataFrame.withNode(df, node)
  }

  /** A key or timestamp of a table: resolved and checked as any column, and a column of the DataFrame. */
  private def tableColumn(
      role: String,
      c: Column,
      plan: LogicalPlan,
      typeCheck: (String, DataType) => Unit
  ): Attribute = {
    checked(role, c, typeCheck)
    SparkShim.logicalPlan(df.select(c)).expressions.head match {
      case a: Attribute if plan.outputSet.contains(a) => a
      case e => throw KStateErrors.invalidTableColumn(
          role,
          s"must be a column of the DataFrame, got " +
            s"${e.sql}: add it with withColumn first"
        )
    }
  }

  private[kstate] def comparable(role: String, dt: DataType): Unit = {
    def bad(t: DataType): Boolean = t match {
      case _: MapType | _: VariantType => true
      case s: StructType => s.fields.exists(f => bad(f.dataType))
      case a: ArrayType => bad(a.elementType)
      case _ => false
    }
    if (dt == NullType) throw KStateErrors.nullTypeKey(role)
    if (bad(dt)) throw KStateErrors.unsupportedKeyType(role, dt.sql)
  }

  private def eventTime(role: String, dt: DataType): Unit = dt match {
    case TimestampType | TimestampNTZType | LongType | IntegerType | ShortType | ByteType =>
    case other => throw KStateErrors.wrongTimestampType(role, other.sql)
  }

  /**
   * Resolves `c` against the DataFrame now, so a bad column fails at construction; returns its
   * (unresolved) expression for the plan and its resolved type.
   */
  private[kstate] def checked(
      role: String,
      c: Column,
      typeCheck: (String, DataType) => Unit
  ): KStateDataFrame.Checked = {
    if (c == null) throw KStateErrors.missingColumn(role, "no column was given")
    val resolved =
      try SparkShim.logicalPlan(df.select(c))
      catch {
        case e: AnalysisException => throw KStateErrors.missingColumn(role, e.getMessage)
      }
    val expr = resolved.expressions.head
    if (!expr.deterministic) throw KStateErrors.nonDeterministic(role, expr.sql)
    ExpressionLineage.nonDeterministicDependency(expr, resolved).foreach { d =>
      throw KStateErrors.nonDeterministicColumn(role, d.column, d.expr.sql)
    }
    typeCheck(role, expr.dataType)
    val name = expr match {
      case n: NamedExpression => n.name
      case _ => role
    }
    KStateDataFrame.Checked(SparkShim.expression(df, c), expr.dataType, name)
  }
}

/**
 * A keyed stream grouped into windows (Kafka's TimeWindowedKStream / SessionWindowedKStream);
 * created by [[KStateDataFrame.windowedBy]].
 */
final class KStateWindowedStream private[kstate] (
    df: DataFrame,
    windows: Windows,
    keyArg: KStateDataFrame.Checked,
    timestamp: Expression,
    timestampType: DataType,
    order: Option[ProcessingOrder]
) {
  private def key: Expression = keyArg.expr

  /** Window bounds and result timestamps: TIMESTAMP for timestamp columns, else epoch ms. */
  private def boundType: DataType = timestampType match {
    case t @ (TimestampType | TimestampNTZType) => t
    case _ => LongType
  }

  /**
   * With a watermark on the input and TIMESTAMP bounds, `window_end` is the output's event-time
   * column: Spark's stateful operators downstream use it with the watermark this operator
   * propagates (docs/windows.md, "Chaining"), so no `withWatermark` is needed (or allowed) after it.
   */
  private def windowEndMetadata: Metadata =
    if (
      boundType != LongType &&
      SparkShim.logicalPlan(df).output.exists(_.metadata.contains(EventTimeWatermark.delayKey))
    ) {
      new MetadataBuilder().putLong(EventTimeWatermark.delayKey, 0L).build()
    } else Metadata.empty

  /**
   * The number of records per key and window (Kafka's `count()`), in a column `count`. See
   * [[agg]] for the output.
   */
  def count(): DataFrame = count(null)
  def count(name: String): DataFrame =
    aggregate(Seq(org.apache.spark.sql.functions.count(org.apache.spark.sql.functions.lit(1)).as("count")), name)

  /**
   * Aggregates each key's records per window (Kafka's `aggregate`/`reduce`) with Spark's
   * aggregate functions, e.g. `agg(sum("amount"), max("amount").as("largest"))`.
   *
   * Output columns: the key (named as the key column, else `key`), `window_start`,
   * `window_end`, one column per aggregate, and `timestamp`, the largest record timestamp in
   * the window (Kafka's result timestamp). Records are dropped for a window once stream time
   * >= window end + grace (late). By default each (key, window) a micro-batch changed is
   * emitted once per micro-batch with its current value (an update stream: use output mode
   * "update", or suppress until the windows close for exactly one row per window).
   *
   * Session windows (Kafka's rules, docs/windows.md): a record within the inactivity gap of a
   * key's open sessions merges them into one; a session closes once its end <= stream time -
   * grace - gap (Kafka 4.3's rule). Their output has a last column `tombstone`: true on a row naming a session
   * (key, start, end) that an earlier micro-batch emitted and that no longer exists (it was
   * merged into a larger session), with null aggregates.
   */
  def agg(first: Column, rest: Column*): DataFrame = aggregate(first +: rest, null)

  /** [[agg]] with an operator name (recorded in the checkpoint), for Python. */
  def aggregate(columns: Seq[Column], name: String): DataFrame = {
    Option(name).foreach(OperatorIdentity.validateName)
    if (columns.isEmpty) throw KStateErrors.unsupportedAggregate("", "no aggregate column was given")
    val analyzed =
      try SparkShim.logicalPlan(df.groupBy().agg(columns.head, columns.tail: _*))
      catch {
        case e: AnalysisException => throw KStateErrors.unsupportedAggregate(columns.mkString(", "), e.getMessage)
      }
    val aggregates = analyzed.collectFirst { case a: Aggregate => a.aggregateExpressions }.getOrElse(
      throw KStateErrors.internal(s"no Aggregate in the analysed plan of the aggregate columns: $analyzed")
    )
    val spec = AggregateSpec.of(aggregates)
    val keyName = keyArg.name
    val sessions = windows.isInstanceOf[SessionWindows]
    val names = (Seq(keyName, "window_start", "window_end") ++ spec.results.map(_._1) :+ "timestamp") ++
      (if (sessions) Seq("tombstone") else Nil)
    names.groupBy(_.toLowerCase).collectFirst { case (_, ns) if ns.size > 1 => ns.head }
      .foreach(n => throw KStateErrors.duplicateOutputColumn(n, names))
    KStateDataFrame.withNode(
      df,
      KStateWindowedAggregate(
        windows,
        Option(name),
        key,
        timestamp,
        spec.bufferAttributes,
        spec.initialValues,
        spec.updateExpressions,
        spec.inputBufferAttributes,
        spec.mergeExpressions,
        spec.orderInsensitive,
        spec.results.map(_._2),
        finalResults = None,
        AttributeReference(keyName, keyArg.dataType, nullable = false)(),
        AttributeReference("window_start", boundType, nullable = false)(),
        AttributeReference("window_end", boundType, nullable = false, windowEndMetadata)(),
        // a session's tombstone row has null aggregates
        spec.results.map { case (n, e) => AttributeReference(n, e.dataType, e.nullable || sessions)() },
        AttributeReference("timestamp", boundType, nullable = false)(),
        if (sessions) Some(AttributeReference("tombstone", BooleanType, nullable = false)()) else None,
        order,
        SparkShim.logicalPlan(df)
      )
    )
  }

  /**
   * KIP-655's windowed `distinct()`: per key, only the first record of each window is emitted,
   * with two added columns `window_start` and `window_end` (TIMESTAMP for timestamp columns,
   * epoch milliseconds otherwise). Tumbling or session windows only: hopping windows overlap.
   * Records for a window that has closed (end + grace <= stream time) are dropped as late.
   */
  def distinct(): DataFrame = distinct(null)
  def distinct(name: String): DataFrame = {
    Option(name).foreach(OperatorIdentity.validateName)
    windows match {
      case t: TimeWindows if !t.isTumbling => throw KStateErrors.unsupportedWindowsForDistinct(t.describe)
      case s: SlidingWindows => throw KStateErrors.unsupportedWindowsForDistinct(s.describe)
      case _ =>
    }
    KStateDataFrame.withNode(
      df,
      KStateWindowedDistinct(
        windows,
        Option(name),
        key,
        timestamp,
        AttributeReference("window_start", boundType, nullable = false)(),
        AttributeReference("window_end", boundType, nullable = false)(),
        order,
        SparkShim.logicalPlan(df)
      )
    )
  }
}

object KStateDataFrame {

  /** A checked argument: its expression for the plan and its resolved type. */
  private[kstate] final case class Checked(expr: Expression, dataType: DataType, name: String)

  def apply(df: DataFrame): KStateDataFrame = new KStateDataFrame(df)

  /**
   * A DataFrame of `node` over `df`. Checked first, as they are known now: `node`'s `name=` is
   * not already used by a kstate operator in `df` (`KSTATE_DUPLICATE_OPERATOR_NAME`); then, as
   * the new DataFrame is analysed, kstate's check rule checks the session's settings
   * (`org.apache.spark.sql.kstate.planning.KStateCheckRule`).
   */
  private[kstate] def withNode(df: DataFrame, node: KStateStatefulNode): DataFrame = {
    OperatorIdentity.checkExplicitNames(node)
    SparkShim.ofRows(df, node)
  }
}

/** `import io.kstate.implicits._` adds `df.kstate`. */
object implicits {
  implicit class KStateSyntax(private val df: DataFrame) extends AnyVal {
    def kstate: KStateDataFrame = new KStateDataFrame(df)
  }
}
