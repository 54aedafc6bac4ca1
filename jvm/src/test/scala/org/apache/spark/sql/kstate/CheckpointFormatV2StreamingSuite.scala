package org.apache.spark.sql.kstate

import org.apache.spark.sql.kstate.planning.OperatorIdentity

import java.io.{File, FileInputStream}
import java.nio.charset.StandardCharsets
import java.nio.file.Files
import java.util.UUID

import scala.collection.mutable

import io.kstate.{CollectSink, KStateException, KStateRepartition, KStateStateReader, KStateTableReader}
import io.kstate.implicits._
import io.kstate.suppress.{BufferConfig, Suppressed}
import io.kstate.tables.VersionedTable
import io.kstate.testing.KStateSparkSuite
import io.kstate.windows.TimeWindows

import org.apache.spark.TaskContext
import org.apache.spark.sql.{DataFrame, Row, SQLContext}
import org.apache.spark.sql.execution.streaming.checkpointing.CommitLog
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.functions.{col, udf}
import org.apache.spark.sql.kstate.engine.StateFile
import org.apache.spark.sql.streaming.{StreamingQuery, StreamingQueryException}

/**
 * kstate's operators with Spark's state checkpoint format v2
 * (`spark.sql.streaming.stateStore.checkpointFormatVersion=2`): each task reports the id its
 * commit made, Spark records them in the commit log and hands them back, and the stores are
 * restored by (version, id). Anchored on Spark's RocksDBStateStoreCheckpointFormatV2Suite
 * ("validate ID", "task retry", "query failure and restart"). The session runs `local[2,2]`: a
 * failed task is retried once.
 */
class CheckpointFormatV2StreamingSuite extends KStateSparkSuite {
  import CheckpointFormatV2StreamingSuite._

  private val Format = "spark.sql.streaming.stateStore.checkpointFormatVersion"

  override protected def extraConf: Map[String, String] = Map("spark.master" -> "local[2,2]", Format -> "2")

  private def input(): MemoryStream[Rec] = {
    implicit val ctx: SQLContext = spark.sqlContext
    val session = spark; import session.implicits._
    MemoryStream[Rec]
  }

  private def all(in: MemoryStream[Rec]): DataFrame = in.toDF().toDF("side", "k", "v", "ts")
  private def stream(in: MemoryStream[Rec]): DataFrame = all(in).filter(col("side") === "s").select("k", "v", "ts")

  private def dedup(in: MemoryStream[Rec]): DataFrame =
    stream(in).kstate.deduplicateByKey("10 seconds", col("k"), col("ts"), "dedup")

  private def finalCounts(in: MemoryStream[Rec]): DataFrame =
    stream(in).kstate.windowedBy(TimeWindows.ofSize("10 seconds"), col("k"), col("ts")).count("counts")
      .kstate.suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded))

  private def enrich(in: MemoryStream[Rec]): DataFrame = {
    val updates = all(in).filter(col("side") === "t").select(col("k"), col("v").as("tv"), col("ts"))
    val table = updates.kstate.withProcessingOrder("event_time")
      .toTable(col("k"), col("ts"), VersionedTable.ofMillis(60000L), "profiles")
    stream(in).select(col("k"), col("v").as("sv"), col("ts")).kstate.withProcessingOrder("event_time")
      .join(table, col("k"), col("ts"), "left", null: String, "enrich")
  }

  private val batches: Seq[Seq[Rec]] = Seq(
    Seq(("s", "a", "1", 1000L), ("t", "a", "A1", 500L), ("s", "b", "2", 1500L), ("t", "b", "B1", 800L)),
    Seq(("s", "a", "3", 12000L), ("t", "a", "A2", 11000L), ("s", "c", "4", 3000L), ("s", "a", "3b", 12500L)),
    Seq(("s", "a", "5", 25000L), ("s", "b", "6", 26000L), ("t", "b", "B2", 24000L)),
    Seq(("s", "c", "7", 40000L), ("s", "a", "8", 41000L))
  )

  private def withFormat[T](format: Int)(body: => T): T = {
    spark.conf.set(Format, format.toString)
    try body
    finally spark.conf.set(Format, "2")
  }

  /** Runs `batches` through `build` on `ckpt`: one query, or one per micro-batch (`restart`). */
  private def run(
      build: MemoryStream[Rec] => DataFrame,
      mode: String,
      restart: Boolean,
      ckpt: String = tempDir("v2"),
      in: MemoryStream[Rec] = input(),
      data: Seq[Seq[Rec]] = batches
  ): Seq[String] = {
    val out = mutable.ArrayBuffer.empty[String]
    var q: StreamingQuery = null
    def startQuery(): Unit = q = CollectSink.start(build(in), ckpt, mode)
    def stopQuery(): Unit = { out ++= CollectSink.rows(q).map(show); q.stop() }
    startQuery()
    try data.foreach { b =>
        in.addData(b)
        q.processAllAvailable()
        if (restart) { stopQuery(); startQuery() }
      }
    finally stopQuery()
    out.sorted.toSeq
  }

  private def commitLog(ckpt: String) = new CommitLog(spark, s"$ckpt/commits")

  /** The commit log's `stateUniqueIds` of `batch`: operator id -> partition -> ids. */
  private def idsOf(ckpt: String, batch: Long): Map[Long, Seq[Seq[String]]] =
    commitLog(ckpt).get(batch).flatMap(_.stateUniqueIds).getOrElse(Map.empty)
      .map { case (op, ids) => op.toString.toLong -> ids.toSeq.map(_.toSeq) }

  private def kstateOperators(ckpt: String): Seq[Long] =
    new File(s"$ckpt/state").list().toSeq.flatMap(_.toLongOption).filter(OperatorIdentity.isKStateOperatorId).sorted

  private def lineageOf(ckpt: String, op: Long, p: Int, version: Long, id: String): Seq[StateFile.LineageEntry] = {
    val in = new FileInputStream(s"$ckpt/state/$op/$p/${version}_$id.kstate.changelog")
    try StateFile.readHeader(in, StateFile.Changelog, version, "f").checkpoint.get.lineage
    finally in.close()
  }

  /**
   * Every micro-batch's commit log entry holds one id per state partition of every kstate
   * operator, each the id of that partition's changelog of the batch's version, whose lineage
   * ends at the previous batch's id of the partition (Spark's "validate ID").
   */
  private def checkIds(ckpt: String, batchIds: Seq[Long], partitions: Int): Unit = {
    val ops = kstateOperators(ckpt)
    assert(ops.nonEmpty)
    for (b <- batchIds; op <- ops) {
      val ids = idsOf(ckpt, b)
      assert(ids.contains(op), s"commits/$b has no ids for kstate operator $op: $ids")
      assert(ids(op).size == partitions && ids(op).forall(_.size == 1), s"commits/$b: ${ids(op)}")
      for (p <- 0 until partitions) {
        val id = ids(op)(p).head
        assert(new File(s"$ckpt/state/$op/$p/${b + 1}_$id.kstate.changelog").exists, s"batch $b partition $p")
        if (b > 0)
          assert(lineageOf(ckpt, op, p, b + 1, id).last == StateFile.LineageEntry(b, idsOf(ckpt, b - 1)(op)(p).head))
      }
    }
    val all = batchIds.flatMap(b => idsOf(ckpt, b).values.flatten.flatten)
    assert(all.distinct.size == all.size, "every commit has a fresh id")
  }

  for (
    (name, build, mode) <- Seq[(String, MemoryStream[Rec] => DataFrame, String)](
      ("deduplication", dedup, "append"),
      ("a windowed count suppressed until its windows close", finalCounts, "append"),
      ("a versioned table and a stream-table join", enrich, "append")
    )
  ) {
    test(
      s"$name: restarted after every micro-batch on format 2 gives the uninterrupted run's output on format 1; the commit log holds the ids"
    ) {
      val expected = withFormat(1)(run(build, mode, restart = false))
      val ckpt = tempDir("v2")
      assert(run(build, mode, restart = true, ckpt) == expected)
      assert(expected.nonEmpty)
      checkIds(ckpt, 0L until batches.size, partitions = 3)
    }
  }

  test(
    "a task that fails after its store committed is retried: the commit log holds the retry's id, and the query restarts from it"
  ) {
    // Spark's "checkpointFormatVersion2 validate ID - task retry": the first attempt commits a
    // version under its own id, then fails; the retry commits the same version under another id
    spark.conf.set("spark.sql.shuffle.partitions", "1")
    try {
      val failOnce = udf { (k: String) =>
        if (k == "boom" && TaskContext.get().attemptNumber() == 0) throw new IllegalStateException("injected")
        k
      }
      // a windowed count emits its updates after the store committed
      val counts = (in: MemoryStream[Rec]) =>
        stream(in).kstate.windowedBy(TimeWindows.ofSize("10 seconds"), col("k"), col("ts"))
          .count("counts").withColumn("k", failOnce(col("k")))
      val ckpt = tempDir("v2")
      val in = input()
      val data = Seq(
        Seq(("s", "a", "1", 1000L)),
        Seq(("s", "boom", "2", 2000L), ("s", "a", "3", 3000L)),
        Seq(("s", "a", "4", 4000L))
      )
      val out = run(counts, "update", restart = true, ckpt, in, data)
      assert(out == Seq("a,0,10000,1,1000", "a,0,10000,2,3000", "a,0,10000,3,4000", "boom,0,10000,1,2000"))
      val op = kstateOperators(ckpt).head
      // version 2 (batch 1): the failed attempt's changelog and the retry's
      val attempts = new File(s"$ckpt/state/$op/0").listFiles().filter(_.getName.startsWith("2_"))
        .sortBy(_.lastModified()).map(_.getName.stripPrefix("2_").stripSuffix(".kstate.changelog"))
      assert(attempts.length == 2, attempts.toSeq)
      assert(idsOf(ckpt, 1)(op)(0).head == attempts.last, "the retry's id")
      checkIds(ckpt, 0L to 2L, partitions = 1)
    } finally spark.conf.set("spark.sql.shuffle.partitions", "3")
  }

  test(
    "a micro-batch whose stateful stage runs twice (two jobs) commits two attempts per partition; either is a valid base for the next batch and a restart"
  ) {
    // Spark's "checkpointFormatVersion2 validate ID - two jobs launched": a foreachBatch sink
    // that runs two jobs over the batch runs kstate's tasks twice
    val ckpt = tempDir("v2")
    val in = input()
    val rows = mutable.ArrayBuffer.empty[String]
    def startQuery(): StreamingQuery = dedup(in).writeStream.option("checkpointLocation", ckpt)
      .foreachBatch { (b: DataFrame, _: Long) => b.count(); rows ++= b.collect().map(show); () }.start()
    var q = startQuery()
    try batches.take(3).zipWithIndex.foreach { case (b, i) =>
        in.addData(b)
        q.processAllAvailable()
        if (i == 1) { q.stop(); q = startQuery() }
      }
    finally q.stop()
    assert(rows.sorted.toSeq == withFormat(1)(run(dedup, "append", restart = false, data = batches.take(3))))
    val op = kstateOperators(ckpt).head
    for (p <- 0 until 3) {
      // two attempts of every version (the partitions with input and those without)
      val changelogs = new File(s"$ckpt/state/$op/$p").list().filter(_.endsWith(".kstate.changelog"))
      assert((1 to 3).forall(v => changelogs.count(_.startsWith(s"${v}_")) == 2), changelogs.sorted.toSeq)
    }
    checkIds(ckpt, 0L to 2L, partitions = 3)
  }

  test(
    "kstate.read_state and read_table on a format-2 checkpoint read the committed ids' state, at the latest and an older batch"
  ) {
    val ckpt = tempDir("v2")
    run(
      in => dedup(in).unionByName(enrich(in).select(col("k"), col("sv").as("v"), col("ts")), true),
      "append",
      restart = true,
      ckpt
    )
    val v1 = tempDir("v1")
    withFormat(1)(run(
      in => dedup(in).unionByName(enrich(in).select(col("k"), col("sv").as("v"), col("ts")), true),
      "append",
      restart = false,
      v1
    ))
    for (batch <- Seq(None, Some(1L))) {
      val state = (c: String) => KStateStateReader.readState(spark, c, "dedup", batch).collect().map(show).sorted.toSeq
      assert(state(ckpt) == state(v1) && state(ckpt).nonEmpty, s"batch $batch")
    }
    val table = (c: String, at: Option[Long]) =>
      KStateTableReader.readTable(spark, c, "profiles", at).collect().map(show).sorted.toSeq
    for (at <- Seq(None, Some(900L), Some(11500L)))
      assert(table(ckpt, at) == table(v1, at) && table(ckpt, at).nonEmpty, s"as of $at")
  }

  test(
    "a format-2 checkpoint repartitioned to 5 partitions: new snapshots with ids, the repartition batch's commit log entry names them, the restart equals the uninterrupted run"
  ) {
    val expected = withFormat(1)(run(dedup, "append", restart = false))
    val ckpt = tempDir("v2")
    val in = input()
    val first = run(dedup, "append", restart = false, ckpt, in, batches.take(2))
    val r = KStateRepartition.repartitionState(spark, ckpt, 5)
    assert(r == 2)
    val op = kstateOperators(ckpt).head
    val ids = idsOf(ckpt, r)(op)
    assert(ids.size == 5)
    for (p <- 0 until 5)
      assert(new File(s"$ckpt/state/$op/$p/${r + 1}_${ids(p).head}.kstate.snapshot").exists, s"partition $p")
    val rest = run(dedup, "append", restart = false, ckpt, in, batches.drop(2))
    assert((first ++ rest).sorted == expected)
    // the batch after the repartition continued from the new snapshots' ids
    for (p <- 0 until 5) {
      val next = idsOf(ckpt, r + 1)(op)(p).head
      assert(lineageOf(ckpt, op, p, r + 2, next).last == StateFile.LineageEntry(r + 1, ids(p).head))
    }
  }

  test(
    "a checkpoint restarted with the other format: Spark 4.3 keeps the checkpoint's format; on 4.2 kstate refuses the switch"
  ) {
    val pinned = org.apache.spark.SPARK_VERSION.startsWith("4.3")
    for ((written, asked) <- Seq(1 -> 2, 2 -> 1)) {
      val ckpt = tempDir("switch")
      val in = input()
      withFormat(written)(run(dedup, "append", restart = false, ckpt, in, batches.take(1)))
      withFormat(asked) {
        val q = CollectSink.start(dedup(in), ckpt, "append")
        try {
          in.addData(batches(1))
          if (pinned) {
            q.processAllAvailable()
            assert(idsOf(ckpt, 1).nonEmpty == (written == 2), s"$written -> $asked")
          } else {
            val e = intercept[StreamingQueryException](q.processAllAvailable())
            val k = Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).collectFirst {
              case k: KStateException => k
            }
            assert(k.exists(_.errorClass == "KSTATE_UNSUPPORTED_CHECKPOINT_FORMAT"), s"$written -> $asked: $e")
            assert(k.get.getMessage.contains(s"written with state checkpoint format $written"), k.get.getMessage)
          }
        } finally q.stop()
      }
    }
  }

  /** Rewrites `commits/<batch>` with `edit` applied to its JSON (and drops Hadoop's checksum file). */
  private def editCommit(ckpt: String, batch: Long)(edit: String => String): Unit = {
    val f = new File(s"$ckpt/commits/$batch").toPath
    val text = new String(Files.readAllBytes(f), StandardCharsets.UTF_8)
    Files.write(f, edit(text).getBytes(StandardCharsets.UTF_8))
    Files.deleteIfExists(new File(s"$ckpt/commits/.$batch.crc").toPath)
  }

  private def restartFailure(ckpt: String, in: MemoryStream[Rec]): KStateException = {
    val q = CollectSink.start(dedup(in), ckpt, "append")
    try {
      in.addData(Seq(("s", "z", "9", 50000L)))
      val e = intercept[StreamingQueryException](q.processAllAvailable())
      Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).collectFirst { case k: KStateException => k }
        .getOrElse(fail(s"no kstate error in $e"))
    } finally q.stop()
  }

  test("a stale or lost checkpoint id in the commit log is a named error at restart, never another attempt's state") {
    val ckpt = tempDir("v2")
    val in = input()
    run(dedup, "append", restart = false, ckpt, in, batches.take(2))
    val op = kstateOperators(ckpt).head
    val committed = idsOf(ckpt, 1)(op)(0).head
    val original = new String(Files.readAllBytes(new File(s"$ckpt/commits/1").toPath), StandardCharsets.UTF_8)
    // stale: an id no file of version 2 has (the state directory is older or newer than the commit log)
    val stale = UUID.randomUUID().toString
    editCommit(ckpt, 1)(_.replace(committed, stale))
    val e = restartFailure(ckpt, in)
    assert(
      e.errorClass == "KSTATE_CHECKPOINT_ID_UNKNOWN" && e.getMessage.contains(stale) && e.getMessage.contains(
        committed
      ),
      e.getMessage
    )
    // lost: the entry names no ids for the operator
    editCommit(ckpt, 1)(_ => original.replaceAll("\"" + op + "\":\\[\\[[^]]*\\](,\\[[^]]*\\])*\\]", "\"0\":[]"))
    assert(!idsOf(ckpt, 1).contains(op))
    val lost = restartFailure(ckpt, in)
    assert(lost.errorClass == "KSTATE_CHECKPOINT_ID_MISSING" && lost.getMessage.contains("commits/1"), lost.getMessage)
    // put back: the query goes on as if nothing happened
    editCommit(ckpt, 1)(_ => original)
    val q = CollectSink.start(dedup(in), ckpt, "append")
    try q.processAllAvailable()
    finally q.stop()
    assert(q.exception.isEmpty)
  }

}

object CheckpointFormatV2StreamingSuite {

  /** side ("s" stream, "t" table update), key, value, event time (ms). */
  type Rec = (String, String, String, Long)

  def show(r: Row): String = r.toSeq.map {
    case null => "null"
    case x => x.toString
  }.mkString(",")
}
