package io.kstate.tables

import scala.collection.mutable
import scala.util.Random

import io.kstate.{CollectSink, KStateException}
import io.kstate.implicits._
import io.kstate.testing.KStateSparkSuite

import org.apache.spark.sql.{DataFrame, Row, SQLContext}
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.functions.{col, hash, lit, not, pmod, upper}
import org.apache.spark.sql.kstate.processor.join.{TableTableJoinKind, TableTableJoinModel}
import org.apache.spark.sql.streaming.StreamingQuery

/**
 * The primary-key table–table join wired into micro-batch queries: KIP-914's A/B sequences one
 * record per micro-batch, a restart between every two micro-batches, random inputs against the
 * record-by-record model ([[TableTableJoinModel]]) on 1 and 3 state partitions, the result as a
 * table (toStream, filter, mapValues, joined again), and the errors at construction.
 *
 * Both tables read one MemoryStream of updates `(left, k, v, ts)`: rows with `left` true are the
 * left table's (value column `lv`), the others the right table's (`rv`); a null `v` is a tombstone.
 */
class TableJoinStreamingSuite extends KStateSparkSuite {
  type Upd = (Boolean, String, String, Long)

  private def input(): MemoryStream[Upd] = {
    implicit val ctx: SQLContext = spark.sqlContext
    val session = spark; import session.implicits._
    MemoryStream[Upd]
  }

  private def tables(src: DataFrame, lv: Option[VersionedTable], rv: Option[VersionedTable]): (KTable, KTable) = {
    val df = src.toDF("left", "k", "v", "ts")
    val l = df.filter(col("left")).select(col("k"), col("v").as("lv"), col("ts"))
      .kstate.toTable(col("k"), col("ts"), lv.orNull, "left_table")
    val r = df.filter(not(col("left"))).select(col("k"), col("v").as("rv"), col("ts"))
      .kstate.toTable(col("k"), col("ts"), rv.orNull, "right_table")
    (l, r)
  }

  /** The join's change rows: k, lv, rv, ts, old as "(l,r)". */
  private def joined(src: DataFrame, how: String, lv: Option[VersionedTable], rv: Option[VersionedTable]): DataFrame = {
    val (l, r) = tables(src, lv, rv)
    l.join(r, how, "tj").changeRows.select(col("k"), col("lv"), col("rv"), col("ts"), col("__kstate_old"))
  }

  private def show(s: String) = if (s == null) "null" else s
  private def pair(l: String, r: String): Option[String] =
    if (l == null && r == null) None else Some(s"(${show(l)},${show(r)})")
  private def result(row: Row): TableTableJoinModel.Res = {
    val old = row.getStruct(4)
    TableTableJoinModel.Res(
      row.getString(0),
      pair(row.getString(1), row.getString(2)),
      if (old == null) None else pair(old.getString(0), old.getString(1)),
      row.getLong(3)
    )
  }

  private def run(batches: Seq[Seq[Upd]], build: DataFrame => DataFrame, restartEach: Boolean = false)
      : Seq[TableTableJoinModel.Res] = {
    val in = input()
    val ckpt = tempDir("ckpt")
    val out = mutable.ArrayBuffer.empty[Row]
    var q: StreamingQuery = null
    def start(): Unit = q = CollectSink.start(build(in.toDF()), ckpt, "append")
    try {
      start()
      batches.foreach { b =>
        if (restartEach) { out ++= CollectSink.rows(q); q.stop(); start() }
        in.addData(b)
        q.processAllAvailable()
      }
      out ++= CollectSink.rows(q)
    } finally if (q != null) q.stop()
    out.map(result).toSeq
  }

  private def r(nw: String, old: String, ts: Long) = TableTableJoinModel.Res("k", Option(nw), Option(old), ts)
  private val versioned = Some(VersionedTable.ofMillis(100))

  // ------------------------------------------------------------------ KIP-914's sequences

  test("KIP-914 accepted rule, first sequence, one record per micro-batch: (a5,b2), (a5,b3), (a5,b4) at 5") {
    val seq = Seq(
      (true, "k", "a0", 0L),
      (true, "k", "a5", 5L),
      (false, "k", "b2", 2L),
      (false, "k", "b3", 3L),
      (false, "k", "b4", 4L),
      (true, "k", "a1", 1L)
    )
    assert(run(seq.map(Seq(_)), joined(_, "inner", versioned, versioned)) ===
      Seq(r("(a5,b2)", null, 5), r("(a5,b3)", "(a5,b2)", 5), r("(a5,b4)", "(a5,b3)", 5)))
  }

  test("KIP-914 problem example: unversioned tables join the out-of-order b1, versioned ones do not") {
    val seq = Seq((true, "k", "a0", 0L), (true, "k", "a4", 4L), (false, "k", "b2", 2L), (false, "k", "b1", 1L))
    assert(run(seq.map(Seq(_)), joined(_, "inner", None, None)) ===
      Seq(r("(a4,b2)", null, 4), r("(a4,b1)", "(a4,b2)", 4)))
    assert(run(seq.map(Seq(_)), joined(_, "inner", versioned, versioned)) === Seq(r("(a4,b2)", null, 4)))
  }

  test("KIP-914 Attempt-1 sequence: only latest records join") {
    val seq = Seq(
      (true, "k", "a0", 0L),
      (false, "k", "b0", 0L),
      (true, "k", "a4", 4L),
      (false, "k", "b3", 3L),
      (false, "k", "b2", 2L),
      (true, "k", "a1", 1L)
    )
    assert(run(seq.map(Seq(_)), joined(_, "inner", versioned, versioned)) ===
      Seq(r("(a0,b0)", null, 0), r("(a4,b0)", "(a0,b0)", 4), r("(a4,b3)", "(a4,b0)", 4)))
  }

  test("a restart between every two micro-batches gives the uninterrupted output") {
    val rnd = new Random(7)
    val batches = randomBatches(rnd, 40)
    Seq("inner", "left", "outer").foreach { how =>
      val build = joined(_: DataFrame, how, versioned, None)
      assert(run(batches, build, restartEach = true) === run(batches, build), how)
    }
  }

  test("a changed join type on restart is KSTATE_OPERATOR_CONFIG_CHANGED") {
    val in = input()
    val ckpt = tempDir("ckpt")
    val q1 = CollectSink.start(joined(in.toDF(), "inner", versioned, None), ckpt, "append")
    in.addData((true, "k", "a", 1L)); q1.processAllAvailable(); q1.stop()
    val q = CollectSink.start(joined(in.toDF(), "left", versioned, None), ckpt, "append")
    in.addData((false, "k", "b", 2L))
    val e = intercept[org.apache.spark.sql.streaming.StreamingQueryException](q.processAllAvailable())
    assert(e.getMessage.contains("KSTATE_OPERATOR_CONFIG_CHANGED") && e.getMessage.contains("how=left"), e.getMessage)
    q.stop()
  }

  test("difference D3: a TIMESTAMP result timestamp has millisecond precision") {
    val session = spark; import session.implicits._
    val df = Seq(("k", "a", "2024-01-01 12:00:00.123456")).toDF("k", "a", "s")
      .select(col("k"), col("a"), col("s").cast("timestamp").as("ts"))
    val l = df.kstate.toTable(col("k"), col("ts"))
    val r = df.select(col("k"), col("a").as("b"), col("ts")).kstate.toTable(col("k"), col("ts"))
    val out = l.join(r).toStream().collect()
    assert(out.map(_.getAs[java.sql.Timestamp]("ts").toString).toSeq === Seq("2024-01-01 12:00:00.123"))
  }

  // ----------------------------------------------------------- random inputs vs the model

  private def randomBatches(rnd: Random, n: Int): Seq[Seq[Upd]] = {
    val recs = (0 until n).map { _ =>
      val k = if (rnd.nextInt(12) == 0) null else Seq("a", "b", "c", "d", "e")(rnd.nextInt(5))
      val v = if (rnd.nextInt(4) == 0) null else Seq("x", "y", "z")(rnd.nextInt(3))
      (rnd.nextBoolean(), k, v, (rnd.nextInt(50) - 15).toLong)
    }
    val cuts = (0 until n).filter(_ => rnd.nextInt(5) == 0)
    (0 +: cuts :+ n).distinct.sorted.sliding(2).collect { case Seq(a, b) if b > a => recs.slice(a, b) }.toSeq
  }

  private def partitionOf(keys: Seq[String], n: Int): Map[String, Int] = {
    val session = spark; import session.implicits._
    keys.toDF("k").select(col("k"), pmod(hash(col("k")), lit(n))).collect().map(x =>
      x.getString(0) -> x.getInt(1)
    ).toMap
  }

  /**
   * The model's results, by key, as Spark's plan processes the records: per micro-batch and
   * state partition, the join merges the two tables' updates in Kafka task order (each table's
   * updates in its input's order, the one whose running maximum timestamp is lowest next, left
   * first on ties), and drops what a table source drops (null keys and, on a versioned table,
   * updates older than its stream time − grace). A null-key update takes part in the merge, as in
   * a Kafka task, where the join reads its tables' sources (the default); where each table has
   * its own source operator (`nullKeysInMerge` false) the source drops it before the merge.
   */
  private def model(
      batches: Seq[Seq[Upd]],
      kind: TableTableJoinKind,
      lv: Option[VersionedTable],
      rv: Option[VersionedTable],
      n: Int,
      nullKeysInMerge: Boolean = true
  ): Map[String, Seq[TableTableJoinModel.Res]] = {
    val part = partitionOf(Seq("a", "b", "c", "d", "e", null), n)
    val grace = lv.orElse(rv).map(_.graceMs).getOrElse(0L)
    val joins = mutable.Map.empty[Int, TableTableJoinModel.Join]
    val streamTime = mutable.Map.empty[(Int, Boolean), Long]
    val out = mutable.ArrayBuffer.empty[TableTableJoinModel.Res]
    batches.foreach { b =>
      val passed = b.filter(u => nullKeysInMerge || u._2 != null).filter { case (left, k, _, ts) =>
        val side = (part(k), left)
        val v = if (left) lv else rv
        val late = k != null && v.exists(t => streamTime.get(side).exists(st => ts < st - t.graceMs))
        if (!late && k != null) streamTime(side) = math.max(streamTime.getOrElse(side, Long.MinValue), ts)
        !late
      }
      passed.groupBy(u => part(u._2)).foreach { case (p, us) =>
        def ordered(left: Boolean) = {
          var max = Long.MinValue
          us.filter(_._1 == left).map { u => max = math.max(max, u._4); (max, if (left) 0 else 1, u) }
        }
        val merged = (ordered(true) ++ ordered(false)).zipWithIndex
          .sortBy { case ((m, s, _), i) => (m, s, i) }.map(_._1._3)
        val j = joins.getOrElseUpdate(
          p,
          new TableTableJoinModel.Join(
            kind,
            lv.isDefined,
            rv.isDefined,
            grace,
            (l, r) => s"(${show(l)},${show(r)})"
          )
        )
        merged.filter(_._2 != null).foreach(u =>
          out ++= j.update(TableTableJoinModel.Upd(u._1, u._2, u._3, Some(u._4)))
        )
      }
    }
    out.toSeq.groupBy(_.key)
  }

  private def kindOf(how: String) = how match {
    case "inner" => TableTableJoinKind.Inner
    case "left" => TableTableJoinKind.Left
    case "outer" => TableTableJoinKind.Outer
  }

  test("random updates of both tables agree with the model, on 1 and 3 state partitions") {
    val rnd = new Random(15)
    val grace = Some(VersionedTable.ofMillis(40).withGraceMillis(10))
    val cases = Seq(
      ("inner", None, None, 1),
      ("left", grace, None, 3),
      ("outer", grace, grace, 3),
      ("inner", None, grace, 3)
    )
    cases.foreach { case (how, lv, rv, n) =>
      val batches = randomBatches(rnd, 45)
      spark.conf.set("spark.sql.shuffle.partitions", n.toString)
      val got =
        try run(batches, joined(_, how, lv, rv))
        finally spark.conf.set("spark.sql.shuffle.partitions", "3")
      val expected = model(batches, kindOf(how), lv, rv, n)
      assert(got.groupBy(_.key) === expected, s"$how lv=$lv rv=$rv partitions=$n batches=$batches")
      assert(got.nonEmpty)
    }
  }

  // ------------------------------------------------- the join reading its tables' sources

  private val ReadsSources = "spark.kstate.tableJoin.readsSources"

  private def withReadsSources[T](on: Boolean)(f: => T): T = {
    spark.conf.set(ReadsSources, on.toString)
    try f
    finally spark.conf.unset(ReadsSources)
  }

  /** Runs `batches` (a restart before batch `restartAt`, with `readsSources` then), returning results and operator names. */
  private def runLayout(
      batches: Seq[Seq[Upd]],
      build: DataFrame => DataFrame,
      readsSources: Boolean,
      restartAt: Int = -1,
      readsSourcesAfter: Boolean = true,
      ckpt: String = null
  ): (Seq[TableTableJoinModel.Res], Set[String]) = {
    val in = input()
    val dir = Option(ckpt).getOrElse(tempDir("ckpt"))
    val out = mutable.ArrayBuffer.empty[Row]
    val operators = mutable.Set.empty[String]
    var q: StreamingQuery = null
    def start(on: Boolean): Unit = withReadsSources(on) { q = CollectSink.start(build(in.toDF()), dir, "append") }
    try {
      start(readsSources)
      batches.zipWithIndex.foreach { case (b, i) =>
        if (i == restartAt) { out ++= CollectSink.rows(q); q.stop(); start(readsSourcesAfter) }
        in.addData(b)
        q.processAllAvailable()
        operators ++= q.lastProgress.stateOperators.map(_.operatorName)
      }
      out ++= CollectSink.rows(q)
    } finally if (q != null) q.stop()
    (out.map(result).toSeq, operators.toSet)
  }

  private val Three = Set("kstate_table", "kstate_table_join")
  private val One = Set("kstate_table_join")

  for (partitions <- Seq(1, 3)) {
    test(s"a join reading both tables' sources: one operator, the results of three ($partitions state partitions)") {
      val rnd = new Random(40 + partitions)
      val grace = Some(VersionedTable.ofMillis(40).withGraceMillis(10))
      val cases = Seq(("inner", None, None), ("left", grace, None), ("outer", grace, grace), ("inner", None, grace))
      spark.conf.set("spark.sql.shuffle.partitions", partitions.toString)
      try cases.foreach { case (how, lv, rv) =>
          // no null keys: one difference, tested below
          val batches = randomBatches(rnd, 60).map(_.filter(_._2 != null)).filter(_.nonEmpty)
          val build = joined(_: DataFrame, how, lv, rv)
          val (one, oneOps) = runLayout(batches, build, readsSources = true)
          val (three, threeOps) = runLayout(batches, build, readsSources = false)
          assert(oneOps === One && threeOps === Three, s"$how $lv $rv")
          assert(one === three, s"$how lv=$lv rv=$rv batches=$batches")
          assert(one.groupBy(_.key) === model(batches, kindOf(how), lv, rv, partitions), s"$how $lv $rv")
          assert(one.nonEmpty)
        }
      finally spark.conf.set("spark.sql.shuffle.partitions", "3")
    }
  }

  test("a checkpoint keeps the layout it started with, whatever the setting on restart") {
    val rnd = new Random(77)
    val batches = randomBatches(rnd, 50).map(_.filter(_._2 != null)).filter(_.nonEmpty)
    val build = joined(_: DataFrame, "outer", versioned, None)
    val (expected, _) = runLayout(batches, build, readsSources = true)
    // started with three operators, restarted with the setting on: still three
    val (a, aOps) = runLayout(batches, build, readsSources = false, restartAt = 2, readsSourcesAfter = true)
    assert(a === expected && aOps === Three)
    // started with one, restarted with the setting off: still one
    val (b, bOps) = runLayout(batches, build, readsSources = true, restartAt = 2, readsSourcesAfter = false)
    assert(b === expected && bOps === One)
  }

  test("a join reading its sources reports each table's versions and what its sources would have dropped") {
    spark.conf.set("spark.sql.shuffle.partitions", "1")
    val in = input()
    val q = withReadsSources(on = true) {
      CollectSink.start(
        joined(in.toDF(), "inner", Some(VersionedTable.ofMillis(100).withGraceMillis(5)), None),
        tempDir("c"),
        "append"
      )
    }
    try {
      in.addData(Seq((true, "k", "a1", 10L), (true, "k", "a2", 11L), (false, "k", "b", 12L), (true, null, "n", 13L)))
      q.processAllAvailable()
      in.addData(Seq((true, "k", "late", 2L))) // older than 11 - 5: not stored
      q.processAllAvailable()
      val ops = q.recentProgress.flatMap(_.stateOperators)
      assert(ops.map(_.operatorName).toSet === One)
      def total(m: String) = ops.map(_.customMetrics.get(m).longValue).sum
      assert(q.lastProgress.stateOperators.head.customMetrics.get("leftTableVersions") === 2L)
      assert(q.lastProgress.stateOperators.head.customMetrics.get("rightTableVersions") === 0L)
      assert(total("nullKeysDropped") === 1L && total("lateRecordsDropped") === 1L && total("joinResults") === 1L)
      assert(CollectSink.rows(q).map(result) === Seq(TableTableJoinModel.Res("k", Some("(a2,b)"), None, 12L)))
    } finally { q.stop(); spark.conf.set("spark.sql.shuffle.partitions", "3") }
  }

  test("the one difference of reading the sources: a null-key update takes part in the task-order merge") {
    // one state partition; the right table's null:x@30 moves its input's running time to 30, so
    // the left a:s@10 comes before the right a:v@1 (as in a Kafka task): (s,null), then (s,v).
    // With a source operator per table, the source drops x first: a:v@1 comes first, no result
    // (a left join's right side alone), then (s,v).
    spark.conf.set("spark.sql.shuffle.partitions", "1")
    try {
      val batch = Seq(Seq((false, null, "x", 30L), (false, "a", "v", 1L), (true, "a", "s", 10L)))
      val build = joined(_: DataFrame, "left", None, None)
      def res(k: String, nw: String, old: String, ts: Long) = TableTableJoinModel.Res(k, Option(nw), Option(old), ts)
      assert(runLayout(batch, build, readsSources = true)._1 ===
        Seq(res("a", "(s,null)", null, 10), res("a", "(s,v)", "(s,null)", 10)))
      assert(runLayout(batch, build, readsSources = false)._1 === Seq(res("a", "(s,v)", null, 10)))
      val kind = TableTableJoinKind.Left
      assert(model(batch, kind, None, None, 1).values.flatten.toSeq ===
        Seq(res("a", "(s,null)", null, 10), res("a", "(s,v)", "(s,null)", 10)))
      assert(model(batch, kind, None, None, 1, nullKeysInMerge = false).values.flatten.toSeq ===
        Seq(res("a", "(s,v)", null, 10)))
    } finally spark.conf.set("spark.sql.shuffle.partitions", "3")
  }

  // ------------------------------------------------------------------ the result is a table

  test("the result is an unversioned table: toStream, filter, mapValues and another join work on it") {
    val in = input()
    val (l, r) = tables(in.toDF(), None, None)
    val j = l.join(r, "outer")
    assert(!j.isVersioned && j.keyColumn == "k" && j.timestampColumn == "ts" && j.valueColumns == Seq("lv", "rv"))
    val third = in.toDF().toDF("left", "k", "v", "ts").select(col("k"), col("v").as("w"), col("ts"))
      .kstate.toTable(col("k"), col("ts"))
    val chained = j.filter(col("lv").isNotNull).mapValues(upper(col("lv")).as("LV"), col("rv")).join(third, "left")
    assert(chained.toStream().columns.toSeq === Seq("k", "LV", "rv", "w", "ts"))
    val q = CollectSink.start(chained.toStream(), tempDir("ckpt"), "append")
    try {
      in.addData((true, "k", "a", 1L))
      q.processAllAvailable()
      // "a" reaches the third table as (k, a, 1) too; the left join sees either order
      assert(CollectSink.rows(q).map(_.toSeq).last.take(3) === Seq("k", "A", null))
    } finally q.stop()
  }

  // -------------------------------------------------------------------- errors at construction

  test("errors at construction: join type, clashing value columns, key types") {
    val in = input()
    val (l, r) = tables(in.toDF(), None, None)
    val how = intercept[KStateException](l.join(r, "right"))
    assert(how.errorClass === "KSTATE_INVALID_JOIN_TYPE" && how.getMessage.contains("swap the tables"))
    val clash = intercept[KStateException](l.join(l.mapValues(col("lv"))))
    assert(clash.errorClass === "KSTATE_JOIN_COLUMN_CLASH" && clash.getMessage.contains("'lv'"))
    val named = in.toDF().toDF("left", "k", "v", "ts").select(col("k").as("id"), col("v").as("ts"), col("ts").as("t"))
      .kstate.toTable(col("id"), col("t"))
    val tsClash = intercept[KStateException](l.join(named)) // its value column 'ts' is the left timestamp's name
    assert(tsClash.errorClass === "KSTATE_JOIN_COLUMN_CLASH")
    val other = in.toDF().toDF("left", "k", "v", "ts").select(col("ts").as("id"), col("v").as("w"), col("ts"))
      .kstate.toTable(col("id"), col("ts"))
    val keys = intercept[KStateException](l.join(other))
    assert(keys.errorClass === "KSTATE_MISMATCHED_INPUTS" && keys.getMessage.contains("key"))
  }
}
