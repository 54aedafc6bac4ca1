package io.kstate

import io.kstate.implicits._
import io.kstate.oracle.{Ev, TableAggCase}
import io.kstate.tables.{KTable, VersionedTable}
import io.kstate.testing.KStateSparkSuite

import org.apache.spark.sql.{Column, DataFrame, Row, SQLContext}
import org.apache.spark.sql.catalyst.expressions.{Literal, Murmur3Hash}
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.functions.{avg, col, concat, count, count_distinct, first, lit, max, struct, sum, when}
import org.apache.spark.sql.kstate.processor.table.InMemoryTableState
import org.apache.spark.sql.kstate.processor.tableagg.{TableAggFixtures, TableAggInputs, TableAggregationDriver}
import org.apache.spark.sql.streaming.{StreamingQuery, StreamingQueryException}
import org.apache.spark.unsafe.types.UTF8String
import org.scalacheck.Gen
import org.scalacheck.rng.Seed

/**
 * Table aggregation (`table.groupBy(...).count()/sum/reduce/agg/aggregate`) wired into Spark: both stages as
 * execs, store-backed state across micro-batches and restarts, the stage-2 order, construction
 * errors; and, on random input, every emitted change (group, aggregate, old aggregate,
 * timestamp) per micro-batch identical to [[TableAggregationDriver]] (the Scala model) with
 * Spark's partitioning of table keys and groups, on 1 and 3 state partitions.
 */
class TableAggregateStreamingSuite extends KStateSparkSuite {
  type Rec = (String, Long, Option[Long]) // table key, ts, value (None: tombstone)

  private def input(): MemoryStream[Rec] = {
    implicit val ctx: SQLContext = spark.sqlContext
    val session = spark; import session.implicits._
    MemoryStream[Rec]
  }

  private def table(df: DataFrame, versioned: Option[VersionedTable]): KTable =
    df.toDF("k", "ts", "v").kstate.toTable(col("k"), col("ts"), versioned.orNull)

  /** Runs `batches` through `build` (one micro-batch each, restarting before each if asked); rows per batch. */
  private def run(
      batches: Seq[Seq[Rec]],
      build: DataFrame => DataFrame,
      restartEach: Boolean = false
  ): Seq[Seq[Row]] = {
    val in = input()
    val ckpt = tempDir("ckpt")
    var q: StreamingQuery = null
    var seen = 0 // rows the running query's sink holds
    try {
      batches.map { b =>
        if (q == null || restartEach) {
          if (q != null) q.stop()
          q = CollectSink.start(build(in.toDF()), ckpt, "update")
          seen = 0
        }
        in.addData(b)
        q.processAllAvailable()
        val rows = CollectSink.rows(q)
        val fresh = rows.drop(seen)
        seen = rows.length
        fresh
      }
    } finally if (q != null) q.stop()
  }

  private def changes(t: KTable): DataFrame = t.changeRows

  /** (group, aggregate, old aggregate, ts) of a change row with one aggregate column. */
  private def change(r: Row): (String, Option[Long], Option[Long], Long) =
    (
      r.getString(0),
      Option(r.get(1)).map(_.asInstanceOf[Long]),
      Option(r.getStruct(3)).map(_.getLong(0)),
      r.getLong(2)
    )

  // KIP-914's three rows for one key: v1@1 (group A), v2@10 (group B), v3@5 (group A)
  private val kip = Seq(Seq[Rec](("k", 1L, Some(10L))), Seq[Rec](("k", 10L, Some(21L))), Seq[Rec](("k", 5L, Some(12L))))
  private def groupOf(v: Column): Column = when(v < 20, lit("A")).otherwise(lit("B"))

  test("KIP-914's three-row example: unversioned re-groups by arrival, versioned ignores the out-of-order v3") {
    val count =
      (v: Option[VersionedTable]) => (df: DataFrame) => changes(table(df, v).groupBy(groupOf(col("v")).as("g")).count())
    val unversioned = run(kip, count(None)).map(_.map(change).sortBy(_._1))
    // v2 moves the row from A to B (A first, Kafka's order); v3 moves it back, each at its own time
    // (A's timestamp is the max of its aggregate's and the change's)
    assert(unversioned === Seq(
      Seq(("A", Some(1L), None, 1L)),
      Seq(("A", Some(0L), Some(1L), 10L), ("B", Some(1L), None, 10L)),
      Seq(("A", Some(1L), Some(0L), 10L), ("B", Some(0L), Some(1L), 10L))
    ))
    val versioned = run(kip, count(Some(VersionedTable.of("1 minute")))).map(_.map(change).sortBy(_._1))
    assert(versioned === Seq(
      Seq(("A", Some(1L), None, 1L)),
      Seq(("A", Some(0L), Some(1L), 10L), ("B", Some(1L), None, 10L)),
      Seq()
    )) // v3@5 is older than v2@10: not the latest version, ignored
  }

  test("a row that stays in its group updates it once (KIP-904); sum and reduce; a restart between every batch") {
    val batches = Seq(
      Seq[Rec](("a", 1L, Some(3L)), ("b", 2L, Some(4L))),
      Seq[Rec](("a", 3L, Some(5L))),
      Seq[Rec](("b", 4L, None)),
      Seq[Rec](("a", 5L, Some(25L)))
    )
    val sum = (df: DataFrame) => changes(table(df, None).groupBy(groupOf(col("v")).as("g"), col("v")).sum(col("v")))
    val expected = Seq(
      Seq(("A", Some(3L), None, 1L), ("A", Some(7L), Some(3L), 2L)),
      Seq(("A", Some(9L), Some(7L), 3L)), // a: 3 -> 5 in A: one change, subtract and add
      Seq(("A", Some(5L), Some(9L), 4L)), // b deleted: its 4 leaves A
      Seq(("A", Some(0L), Some(5L), 5L), ("B", Some(25L), None, 5L))
    ) // a moves to B; A's sum 0 stays
    assert(run(batches, sum).map(_.map(change).sortBy(_._1)) === expected)
    assert(run(batches, sum, restartEach = true).map(_.map(change).sortBy(_._1)) === expected)
    val reduce = (df: DataFrame) =>
      changes(table(df, None).groupBy(groupOf(col("v")).as("g"), col("v"))
        .reduce((agg, v) => agg + v, (agg, v) => when(agg - v === 0, lit(null)).otherwise(agg - v)))
    // reduce: a deleting subtractor deletes A when it reaches 0 (a tombstone, old value 5)
    assert(run(batches, reduce, restartEach = true).map(_.map(change).sortBy(_._1)) === expected.updated(
      3,
      Seq(("A", None, Some(5L), 5L), ("B", Some(25L), None, 5L))
    ))
  }

  test("the result is an unversioned table with the group key, aggregate and timestamp columns") {
    val t = table(spark.range(1).selectExpr("'k' as k", "1L as ts", "2L as v"), Some(VersionedTable.of("1 minute")))
    val counted = t.groupBy(col("v").as("g")).count()
    assert(!counted.isVersioned)
    assert((counted.keyColumn, counted.valueColumns, counted.timestampColumn) === ("g", Seq("count"), "ts"))
    assert(counted.toStream().collect().toSeq === Seq(Row(2L, 1L, 1L)))
    // batch: a static table's changes in their listed order
    val static = spark.createDataFrame(Seq(("a", 1L, 3L), ("a", 2L, 4L), ("b", 3L, 3L))).toDF("k", "ts", "v")
    val sums = static.kstate.toTable(col("k"), col("ts")).groupBy(lit("all").as("g")).sum("v").toStream()
    assert(sums.collect().toSeq.map(r => (r.getLong(1), r.getLong(2))) === Seq((3L, 1L), (4L, 2L), (7L, 3L)))
  }

  test("reduce over several grouped value columns: the placeholders and the result are structs of them") {
    val static =
      spark.createDataFrame(Seq(("a", 1L, 3L, 10L), ("b", 2L, 4L, 5L), ("a", 3L, 6L, 1L))).toDF("k", "ts", "n", "m")
    val t = static.kstate.toTable(col("k"), col("ts")).groupBy(lit("all").as("g"))
      .reduce(
        (agg, v) => struct((agg("n") + v("n")).as("n"), (agg("m") + v("m")).as("m")),
        (agg, v) => struct((agg("n") - v("n")).as("n"), (agg("m") - v("m")).as("m"))
      )
    assert(t.valueColumns === Seq("n", "m"))
    // a=(3,10), b=(4,5), then a changes to (6,1) in the same group: −(3,10) +(6,1)
    assert(t.toStream().collect().toSeq.map(r => (r.getLong(1), r.getLong(2), r.getLong(3))) ===
      Seq((3L, 10L, 1L), (7L, 15L, 2L), (10L, 6L, 3L)))
  }

  test("bad group_by, sum and reduce arguments fail at construction with named errors") {
    val t = table(spark.createDataFrame(Seq(("a", 1L, 3L))).toDF("k", "ts", "v"), None)
    def error(f: => Any): String = intercept[KStateException](f).errorClass
    assert(error(t.groupBy(col("nope"))) === "KSTATE_MISSING_COLUMN")
    assert(error(t.groupBy(org.apache.spark.sql.functions.rand())) === "KSTATE_NON_DETERMINISTIC_EXPRESSION")
    assert(error(t.groupBy(org.apache.spark.sql.functions.map(col("k"), col("v")))) === "KSTATE_INVALID_KEY_TYPE")
    assert(error(t.groupBy(col("k")).sum("nope")) === "KSTATE_MISSING_COLUMN")
    assert(error(t.groupBy(col("k"), col("k").as("name")).sum("name")) === "KSTATE_INVALID_TABLE_AGGREGATE")
    assert(error(t.groupBy(col("k")).reduce((a, v) => a * 1.5, (a, v) => a - v)) === "KSTATE_INVALID_TABLE_AGGREGATE")
    assert(error(t.groupBy(col("k")).reduce((a, v) => org.apache.spark.sql.functions.sum(v), (a, v) => a - v)) ===
      "KSTATE_INVALID_TABLE_AGGREGATE")
    assert(error(t.groupBy(col("v").as("ts")).count()) === "KSTATE_INVALID_TABLE_AGGREGATE")
    assert(error(t.groupBy(col("k")).count("bad name!")) === "KSTATE_INVALID_OPERATOR_NAME")
  }

  test(
    "agg of count, count(col), sum, avg, with a restart between batches: the groups and values of Spark's batch groupBy.agg"
  ) {
    val batches = Seq(
      Seq[Rec](("a", 1L, Some(3L)), ("b", 2L, Some(4L)), ("c", 3L, Some(23L))),
      Seq[Rec](("a", 4L, Some(5L)), ("c", 5L, None)), // a stays in A (one update); c deleted: B loses its last row
      Seq[Rec](("b", 6L, Some(21L)))
    ) // b moves from A to B
    val aggregated = (df: DataFrame) =>
      changes(table(df, None).groupBy(groupOf(col("v")).as("g"), col("v"))
        .agg(count("*"), count(col("v")).as("n"), sum("v"), avg("v"), (sum("v") * 2).as("twice")))
    val rows = run(batches, aggregated, restartEach = true)
    def shown(r: Row) = (
      r.getString(0),
      Option(r.get(1)).map(_ =>
        (
          r.getLong(1),
          r.getLong(2),
          r.getLong(3),
          r.getDouble(4),
          r.getLong(5)
        )
      ),
      r.getLong(6)
    )
    assert(rows.map(_.map(shown).sortBy(_._1)) === Seq(
      Seq(
        ("A", Some((1L, 1L, 3L, 3.0, 6L)), 1L),
        ("A", Some((2L, 2L, 7L, 3.5, 14L)), 2L),
        ("B", Some((1L, 1L, 23L, 23.0, 46L)), 3L)
      ),
      Seq(("A", Some((2L, 2L, 9L, 4.5, 18L)), 4L), ("B", None, 5L)), // B deleted: a tombstone (Spark has no group B)
      Seq(("A", Some((1L, 1L, 5L, 5.0, 10L)), 6L), ("B", Some((1L, 1L, 21L, 21.0, 42L)), 6L))
    ))
    // the columns are named as Spark's batch agg names them, in its types
    val t = table(spark.createDataFrame(Seq(("a", 1L, 3L))).toDF("k", "ts", "v"), None).groupBy(col("k"), col("v"))
      .agg(count("*"), count(col("v")).as("n"), sum("v"), avg("v"))
    val batch =
      spark.createDataFrame(Seq(Tuple1(3L))).toDF("v").agg(count("*"), count(col("v")).as("n"), sum("v"), avg("v"))
    assert(t.valueColumns === batch.columns.toSeq)
    assert(t.toStream().schema.fields.slice(1, 5).map(f => (f.name, f.dataType)).toSeq ===
      batch.schema.fields.map(f => (f.name, f.dataType)).toSeq)
  }

  test("aggregate(initializer, adder, subtractor): the aggregate's own type (a struct), deleted by a null result") {
    val static = spark.createDataFrame(Seq(("a", 1L, 3L), ("b", 2L, 4L), ("a", 3L, 6L), ("b", 4L, 4L)))
      .toDF("k", "ts", "v")
    val t = static.kstate.toTable(col("k"), col("ts")).groupBy(lit("all").as("g"), col("v"))
      .aggregate(
        struct(lit(0L).as("n"), lit(0.0).as("total")),
        (agg, v) => struct((agg("n") + 1).as("n"), (agg("total") + v).as("total")),
        (agg, v) =>
          when(agg("n") === 1, lit(null)).otherwise(struct((agg("n") - 1).as("n"), (agg("total") - v).as("total")))
      )
    assert(t.valueColumns === Seq("n", "total"))
    // a=3, b=4, a: 3 -> 6 (one update), b: 4 -> 4
    assert(t.toStream().collect().toSeq.map(r => (r.getLong(1), r.getDouble(2), r.getLong(3))) ===
      Seq((1L, 3.0, 1L), (2L, 7.0, 2L), (2L, 10.0, 3L), (2L, 10.0, 4L)))
    val named = static.kstate.toTable(col("k"), col("ts")).groupBy(lit("all").as("g"), col("v"))
      .aggregate(lit(1L).as("product"), (agg, v) => agg * v, (agg, v) => agg / v cast "bigint")
    assert(named.valueColumns === Seq("product"))
    assert(named.toStream().collect().toSeq.map(_.getLong(1)) === Seq(3L, 12L, 24L, 24L))
    val unnamed = static.kstate.toTable(col("k"), col("ts")).groupBy(lit("all").as("g"), col("v"))
      .aggregate(lit(0L), (agg, v) => agg + v, (agg, v) => agg - v)
    assert(unnamed.valueColumns === Seq("aggregate"))
  }

  test("bad agg and aggregate arguments fail at construction with named errors") {
    val t = table(spark.createDataFrame(Seq(("a", 1L, 3L))).toDF("k", "ts", "v"), None).groupBy(col("k"), col("v"))
    def error(f: => Any): KStateException = intercept[KStateException](f)
    val noSubtractor = error(t.agg(count("*"), max("v")))
    assert(noSubtractor.errorClass === "KSTATE_TABLE_AGGREGATE_WITHOUT_SUBTRACTOR")
    assert(noSubtractor.getMessage.contains("max(v)") && noSubtractor.getMessage.contains("reduce"))
    assert(error(t.agg(count_distinct(col("v")))).errorClass === "KSTATE_TABLE_AGGREGATE_WITHOUT_SUBTRACTOR")
    assert(error(t.agg(first("v"))).errorClass === "KSTATE_TABLE_AGGREGATE_WITHOUT_SUBTRACTOR")
    assert(error(t.agg(sum("nope"))).errorClass === "KSTATE_MISSING_COLUMN")
    assert(error(t.agg(col("v"))).errorClass === "KSTATE_INVALID_TABLE_AGGREGATE")
    assert(error(t.agg(sum("v").as("k"))).errorClass === "KSTATE_INVALID_TABLE_AGGREGATE") // named like the key
    // aggregate: the adder and subtractor return the initializer's type
    assert(error(t.aggregate(lit(0), (a, v) => a + v, (a, v) => a - v)).errorClass === "KSTATE_INVALID_TABLE_AGGREGATE")
    assert(error(t.aggregate(lit(0L), (a, v) => a + v, (a, v) => (a - v).cast("double"))).errorClass ===
      "KSTATE_INVALID_TABLE_AGGREGATE")
    assert(error(t.aggregate(
      col("v"),
      (a, v) => a + v,
      (a, v) => a - v
    )).errorClass === "KSTATE_INVALID_TABLE_AGGREGATE")
  }

  test("a changed aggregation on restart is KSTATE_OPERATOR_CONFIG_CHANGED") {
    val in = input()
    val ckpt = tempDir("ckpt")
    val q1 = CollectSink.start(changes(table(in.toDF(), None).groupBy(col("k")).count()), ckpt, "update")
    in.addData(("a", 1L, Some(1L))); q1.processAllAvailable(); q1.stop()
    val q2 = CollectSink.start(changes(table(in.toDF(), None).groupBy(col("k"), col("v")).sum("v")), ckpt, "update")
    in.addData(("a", 2L, Some(2L)))
    val e = intercept[StreamingQueryException](q2.processAllAvailable())
    assert(e.getMessage.contains("KSTATE_OPERATOR_CONFIG_CHANGED"), e.getMessage)
    q2.stop()
  }

  // --- the property check against the Scala model ------------------------------------------------

  private def aggregated(c: TableAggCase)(t: KTable): KTable = {
    val v = col("v")
    val grouped = t.groupBy(
      when(v % 5 === 4, lit(null)).otherwise(concat(lit("g"), (v % 3).cast("string"))).as("g"),
      when(v === 8, lit(null)).otherwise(v).as("gv")
    )
    c match {
      case TableAggCase.Count => grouped.count()
      case TableAggCase.Sum => grouped.sum("gv")
      case TableAggCase.DeletingReduce =>
        grouped.reduce((a, x) => a + x, (a, x) => when(a - x === 0, lit(null)).otherwise(a - x))
      case TableAggCase.Chain => // the groups' names all have length 2: chainAdd's g.length
        grouped.aggregate(
          lit(TableAggCase.chainInit.longValue),
          (a, x) => a * 3 + x + 2,
          (a, x) => when((a - x) % 4 === 0, lit(null)).otherwise(a - x)
        )
    }
  }

  /** Spark's hash partition of a string among `n`. */
  private def sparkPartition(n: Int)(s: String): Int =
    Math.floorMod(Murmur3Hash(Seq(Literal(UTF8String.fromString(s))), 42).eval().asInstanceOf[Int], n)

  private def model(c: TableAggCase, retention: Option[Long], n: Int): TableAggFixtures.Driver =
    new TableAggregationDriver[String, java.lang.Long, String, java.lang.Long, java.lang.Long](
      IndexedSeq.fill(n)(TableAggFixtures.sourceState(retention)),
      sparkPartition(n) _,
      IndexedSeq.fill(n)(InMemoryTableState.unversioned[String, java.lang.Long]()),
      sparkPartition(n) _,
      TableAggFixtures.selector,
      TableAggFixtures.aggregator(c)
    )

  for (n <- Seq(1, 3))
    test(s"random changelogs on $n state partition(s): every change per micro-batch as the Scala model") {
      val old = spark.conf.get("spark.sql.shuffle.partitions")
      spark.conf.set("spark.sql.shuffle.partitions", n.toString)
      try {
        val cases = TableAggCase.all
        for (i <- 1 to 2; c <- cases) {
          val seed = i * 101L + n
          val retention =
            if (i % 2 == 0) Some(Gen.choose(0L, 15L).pureApply(Gen.Parameters.default, Seed(seed))) else None
          val batches = TableAggInputs.batchesWithNegativeTimes(14).pureApply(Gen.Parameters.default, Seed(seed))
            .filter(_.nonEmpty)
          val d = model(c, retention, n)
          val expected = batches.map(b =>
            d.runBatch(b.map(TableAggFixtures.update(_))).map(ch =>
              (ch.key, Option(ch.newValue).map(_.longValue), Option(ch.oldValue).map(_.longValue), ch.timestamp)
            )
          )
          val got = run(
            batches.map(_.map((e: Ev) => (e.key, e.ts, e.value))),
            df => changes(aggregated(c)(table(df, retention.map(VersionedTable.ofMillis))))
          ).map(_.map(change))
          def byGroup(rs: Seq[(String, Option[Long], Option[Long], Long)]) = rs.groupBy(_._1)
          withClue(s"$c retention $retention batches $batches") {
            assert(got.map(byGroup) === expected.map(byGroup))
          }
        }
      } finally spark.conf.set("spark.sql.shuffle.partitions", old)
    }
}
