package io.kstate

import scala.collection.mutable
import scala.util.Random

import io.kstate.implicits._
import io.kstate.tables.{KTable, VersionedTable}
import io.kstate.testing.KStateSparkSuite

import org.apache.spark.sql.{DataFrame, Row, SQLContext}
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.kstate.processor.join.StreamTableJoinModel
import org.apache.spark.sql.kstate.processor.join.StreamTableJoinModel.Cfg
import org.apache.spark.sql.streaming.{StreamingQuery, StreamingQueryException}

/**
 * The stream–table join wired into micro-batch queries: both inputs from one MemoryStream (a
 * `side` column splits them, so each `addData` is exactly one micro-batch of both sides), the
 * table through `toTable`, results compared with [[StreamTableJoinModel]] run per state
 * partition over each micro-batch in event-time order (ties: stream records first, then input
 * order), on 1 and 3 state partitions; restarts between micro-batches with records in the grace
 * buffer; KIP-923's example one record per micro-batch; a changed grace on restart.
 */
class StreamTableJoinStreamingSuite extends KStateSparkSuite {
  import StreamTableJoinStreamingSuite._

  private def input(): MemoryStream[Rec] = {
    implicit val ctx: SQLContext = spark.sqlContext
    val session = spark; import session.implicits._
    MemoryStream[Rec]
  }

  /** Stream rows (k, sv, ts) and the table (k, tv, ts) from one source; the join as `cfg` says. */
  private def joined(in: MemoryStream[Rec], cfg: Cfg, graceOverride: Option[Long] = None): DataFrame = {
    val all = in.toDF().toDF("side", "k", "v", "ts")
    val stream = all.filter(col("side") === "s").select(col("k"), col("v").as("sv"), col("ts"))
    val updates = all.filter(col("side") === "t").select(col("k"), col("v").as("tv"), col("ts"))
    // the table's source in event-time order too: its grace drops what the model's table drops
    val source = updates.kstate.withProcessingOrder("event_time")
    val table: KTable = cfg.retention match {
      case Some(r) => source.toTable(col("k"), col("ts"), VersionedTable.ofMillis(r).withGraceMillis(cfg.tableGrace))
      case None => source.toTable(col("k"), col("ts"))
    }
    val grace = graceOverride.orElse(cfg.grace)
    stream.kstate.withProcessingOrder("event_time")
      .join(table, col("k"), col("ts"), if (cfg.left) "left" else "inner", grace.map(_.toString).orNull, "enrich")
  }

  private def results(q: StreamingQuery): Seq[(String, String)] =
    CollectSink.rows(q).map(r => (r.getAs[String]("sv"), r.getAs[String]("tv"))).sortBy(_._1)

  /** Runs `batches` through one query, or one query per micro-batch on one checkpoint (`restart`). */
  private def run(
      cfg: Cfg,
      batches: Seq[Seq[Rec]],
      partitions: Int,
      restart: Boolean
  ): (Seq[(String, String)], Seq[Long]) = {
    spark.conf.set("spark.sql.shuffle.partitions", partitions.toString)
    try {
      val ckpt = tempDir("stj")
      val in = input()
      val out = mutable.ArrayBuffer.empty[(String, String)]
      val buffered = mutable.ArrayBuffer.empty[Long]
      var q: StreamingQuery = null
      def startQuery(): Unit = q = CollectSink.start(joined(in, cfg), ckpt, "append")
      def stopQuery(): Unit = { out ++= results(q); q.stop() }
      startQuery()
      try batches.foreach { b =>
          in.addData(b)
          q.processAllAvailable()
          q.recentProgress.lastOption.flatMap(_.stateOperators.find(_.operatorName == "kstate_stream_table_join"))
            .foreach(op => buffered += op.customMetrics.get("bufferRecords"))
          if (restart) { stopQuery(); startQuery() }
        }
      finally stopQuery()
      (out.sortBy(_._1).toSeq, buffered.toSeq)
    } finally spark.conf.set("spark.sql.shuffle.partitions", "3")
  }

  /** The model per state partition over each micro-batch sorted by (ts, side), null ts first. */
  private def expected(cfg: Cfg, batches: Seq[Seq[Rec]], partitions: Int): Seq[(String, String)] = {
    val keys = batches.flatten.map(_._2).distinct
    val session = spark; import session.implicits._
    val partitionOf = keys.filter(_ != null).toDF("k").selectExpr("k", s"pmod(hash(k), $partitions)").collect()
      .map(r => r.getString(0) -> r.getInt(1)).toMap
    val models = mutable.Map.empty[Int, StreamTableJoinModel]
    def model(k: String) = models.getOrElseUpdate(if (k == null) -1 else partitionOf(k), new StreamTableJoinModel(cfg))
    val out = mutable.ArrayBuffer.empty[(String, String)]
    batches.foreach { b =>
      b.zipWithIndex.sortBy { case ((side, _, _, ts), i) => (ts.getOrElse(Long.MinValue), side == "t", i) }
        .foreach { case ((side, k, v, ts), _) =>
          val t = ts
          if (side == "s") out ++= model(k).stream(k, v, t, 0L).map(o => (o.stream, o.table))
          else if (k != null && t.isDefined) model(k).table(k, v, t)
        }
    }
    // finish: releases nothing without watermarks beyond what each record released
    models.values.foreach(m => out ++= m.finish().map(o => (o.stream, o.table)))
    out.sortBy(_._1).toSeq
  }

  private val configs = Seq(
    Cfg(left = false, None, 0L, None),
    Cfg(left = true, None, 0L, None),
    Cfg(left = false, Some(15L), 15L, None),
    Cfg(left = true, Some(15L), 6L, None),
    Cfg(left = false, Some(15L), 15L, Some(5L)),
    Cfg(left = true, Some(12L), 4L, Some(8L))
  )

  for (partitions <- Seq(1, 3)) {
    test(s"random input, micro-batches and configurations: the model's results ($partitions state partitions)") {
      configs.zipWithIndex.foreach { case (cfg, i) =>
        val batches = randomBatches(new Random(100 * partitions + i))
        val (got, _) = run(cfg, batches, partitions, restart = false)
        assert(got === expected(cfg, batches, partitions), s"$cfg\n${batches.mkString("\n")}")
      }
    }
  }

  test("a restart between every two micro-batches with records in the grace buffer: nothing lost or duplicated") {
    val cfg = Cfg(left = true, Some(20L), 20L, Some(10L))
    val batches = randomBatches(new Random(7))
    val (uninterrupted, _) = run(cfg, batches, 3, restart = false)
    val (restarted, buffered) = run(cfg, batches, 3, restart = true)
    assert(buffered.exists(_ > 0), s"records were buffered across a restart: $buffered")
    assert(restarted === uninterrupted)
    assert(restarted === expected(cfg, batches, 3))
  }

  test("the grace buffer's stream time survives a restart: a record late against it is joined at once") {
    val cfg = Cfg(left = true, Some(40L), 40L, Some(10L))
    val batches = Seq(Seq(t("a", "v", 0), s("a", "a#30", 30)), Seq(s("a", "a#5", 5)))
    // stream time 30 after the first micro-batch: a#5 < 30 - 10 is joined at once (a#30 still waits)
    assert(run(cfg, batches, 1, restart = true)._1 === Seq(("a#5", "v")))
  }

  test("KIP-923's example, one record per micro-batch: the late but older table update counts") {
    val batches = Seq(
      Seq(t("a", "old", 0)),
      Seq(s("a", "a#click", 10)),
      Seq(t("a", "new", 8)),
      Seq(s("a", "a#later", 15)),
      Seq(s("b", "b#end", 30))
    )
    val withGrace = Cfg(left = true, Some(20L), 20L, Some(5L))
    assert(run(withGrace, batches, 1, restart = false)._1 === Seq(("a#click", "new"), ("a#later", "new")))
    val noGrace = withGrace.copy(grace = None)
    assert(run(noGrace, batches, 1, restart = false)._1 ===
      Seq(("a#click", "old"), ("a#later", "new"), ("b#end", null)))
  }

  test("on equal timestamps the stream record is processed before the table update (Kafka's order when piped so)") {
    val batch = Seq(t("a", "v1", 1), s("a", "a#5", 5), t("a", "v5", 5))
    val unversioned = Cfg(left = true, None, 0L, None)
    assert(run(unversioned, Seq(batch), 1, restart = false)._1 === Seq(("a#5", "v1")))
    assert(run(unversioned.copy(retention = Some(10L), tableGrace = 10L), Seq(batch), 1, restart = false)._1 ===
      Seq(("a#5", "v1")))
  }

  test("a changed grace period on restart is KSTATE_OPERATOR_CONFIG_CHANGED") {
    val cfg = Cfg(left = false, Some(20L), 20L, Some(5L))
    val ckpt = tempDir("stj")
    val in = input()
    val q1 = CollectSink.start(joined(in, cfg), ckpt, "append")
    in.addData(t("a", "v", 1)); q1.processAllAvailable(); q1.stop()
    val q2 = CollectSink.start(joined(in, cfg, graceOverride = Some(6L)), ckpt, "append")
    in.addData(s("a", "a#1", 2))
    val e = intercept[StreamingQueryException](q2.processAllAvailable())
    assert(e.getMessage.contains("KSTATE_OPERATOR_CONFIG_CHANGED") && e.getMessage.contains("graceMs=5"), e.getMessage)
    q2.stop()
  }

  /**
   * The join in task order (both sides' processing order left at `auto`), the table's updates
   * from two input partitions; `stageBetween`: an identity `mapValues` between the table's source
   * and the join, which keeps the source's own stage and materialization (otherwise the join
   * does the source's work itself, `JoinedTableSource`).
   */
  private def taskOrderJoin(in: MemoryStream[Rec], cfg: Cfg, stageBetween: Boolean): DataFrame = {
    val all = in.toDF().toDF("side", "k", "v", "ts")
    val stream = all.filter(col("side") === "s").select(col("k"), col("v").as("sv"), col("ts"))
    val updates = all.filter(col("side") === "t").select(col("k"), col("v").as("tv"), col("ts")).repartition(2)
    val source = cfg.retention match {
      case Some(r) =>
        updates.kstate.toTable(col("k"), col("ts"), VersionedTable.ofMillis(r).withGraceMillis(cfg.tableGrace))
      case None => updates.kstate.toTable(col("k"), col("ts"))
    }
    val table = if (stageBetween) source.mapValues(col("tv")) else source
    stream.kstate.join(
      table,
      col("k"),
      col("ts"),
      if (cfg.left) "left" else "inner",
      cfg.grace.map(_.toString).orNull,
      "enrich"
    )
  }

  for (partitions <- Seq(1, 3)) {
    test(
      s"a join reading its table's source directly stores the table once, with the results of two stages ($partitions state partitions)"
    ) {
      spark.conf.set("spark.sql.shuffle.partitions", partitions.toString)
      try configs.zipWithIndex.foreach { case (cfg, i) =>
          // table updates with a null key are left out: see docs/tables.md, "One materialization per joined table"
          val batches = randomBatches(new Random(1000 + 100 * partitions + i))
            .map(_.filterNot { case (side, k, _, _) => side == "t" && k == null })
          def runOnce(stageBetween: Boolean): (Seq[(String, String)], Set[String]) = {
            val in = input()
            val q = CollectSink.start(taskOrderJoin(in, cfg, stageBetween), tempDir("stj"), "append")
            val operators = mutable.Set.empty[String]
            try batches.foreach { b =>
                in.addData(b)
                q.processAllAvailable()
                operators ++= q.lastProgress.stateOperators.map(_.operatorName)
              }
            finally q.stop()
            (results(q), operators.toSet)
          }
          val (oneStage, oneStageOperators) = runOnce(stageBetween = false)
          val (twoStages, twoStagesOperators) = runOnce(stageBetween = true)
          assert(oneStageOperators === Set("kstate_stream_table_join"), cfg)
          assert(twoStagesOperators === Set("kstate_table", "kstate_stream_table_join"), cfg)
          assert(oneStage === twoStages, s"$cfg\n${batches.mkString("\n")}")
          assert(oneStage.nonEmpty, cfg)
        }
      finally spark.conf.set("spark.sql.shuffle.partitions", "3")
    }
  }

  test("a join reading its table's source directly drops the table's updates older than the table's grace") {
    // table grace 5, history retention 100: b@10 moves the table's stream time to 10, so a@2 (< 10 - 5)
    // is not stored, and the stream record a@3 finds a@1, not a@2 (with the join storing at grace =
    // retention, as it does behind a stage, it would find a@2)
    val cfg = Cfg(left = true, Some(100L), 5L, None)
    spark.conf.set("spark.sql.shuffle.partitions", "1") // one table stream time for a and b
    val in = input()
    val q = CollectSink.start(taskOrderJoin(in, cfg, stageBetween = false), tempDir("stj"), "append")
    try {
      in.addData(Seq(t("a", "v1", 1), t("b", "w", 10)))
      q.processAllAvailable()
      in.addData(Seq(t("a", "v2", 2)))
      q.processAllAvailable()
      in.addData(Seq(s("a", "a#3", 3)))
      q.processAllAvailable()
      assert(results(q) === Seq(("a#3", "v1")))
      val m = q.recentProgress.flatMap(_.stateOperators).filter(_.operatorName == "kstate_stream_table_join")
        .map(_.customMetrics.get("tableUpdatesExpired").longValue).sum
      assert(m === 1L)
    } finally { q.stop(); spark.conf.set("spark.sql.shuffle.partitions", "3") }
  }

  test("the join's metrics are reported in progress") {
    val cfg = Cfg(left = true, Some(20L), 20L, Some(5L))
    val in = input()
    val q = CollectSink.start(joined(in, cfg), tempDir("stj"), "append")
    try {
      in.addData(Seq(t("a", "v", 1), s("a", "a#1", 3), s("a", "a#2", 9)))
      q.processAllAvailable()
      val op = q.lastProgress.stateOperators.find(_.operatorName == "kstate_stream_table_join").get
      val m = op.customMetrics
      assert(
        m.get("streamRecordsBuffered") === 2L && m.get("bufferedRecordsJoined") === 1L && m.get("bufferRecords") === 1L
      )
      assert(m.get("tableUpdates") === 1L && m.get("joinResults") === 1L)
      assert(results(q) === Seq(("a#1", "v")))
    } finally q.stop()
  }
}

object StreamTableJoinStreamingSuite {

  /** side ("s" stream, "t" table), key, value (table: null = tombstone), timestamp (None = null). */
  type Rec = (String, String, String, Option[Long])

  def s(k: String, v: String, ts: Long): Rec = ("s", k, v, Some(ts))
  def t(k: String, v: String, ts: Long): Rec = ("t", k, v, Some(ts))

  /** 3 to 5 micro-batches of stream records and table updates: keys a-e and null, tombstones, null
   * timestamps, time moving forward with disorder, some records far behind. */
  def randomBatches(rnd: Random): Seq[Seq[Rec]] = {
    var time = 0L
    var n = 0
    Seq.fill(3 + rnd.nextInt(3)) {
      Seq.fill(4 + rnd.nextInt(10)) {
        n += 1
        val k = if (rnd.nextInt(12) == 0) null else s"${"abcde" (rnd.nextInt(5))}"
        val step = rnd.nextInt(10) match {
          case 0 => -(10 + rnd.nextInt(20)).toLong
          case 1 | 2 => -rnd.nextInt(6).toLong
          case _ => rnd.nextInt(5).toLong
        }
        val ts = time + step
        if (step > 0) time = ts
        val tsOpt: Option[Long] = if (rnd.nextInt(15) == 0) None else Some(ts)
        if (rnd.nextBoolean()) ("s", k, s"s$n", tsOpt)
        else ("t", k, if (rnd.nextInt(5) == 0) null else s"t$n", tsOpt)
      }
    }
  }
}
