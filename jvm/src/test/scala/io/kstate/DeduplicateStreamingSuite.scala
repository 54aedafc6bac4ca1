package io.kstate

import org.apache.spark.sql.kstate.config.KStateConf

import scala.jdk.CollectionConverters._

import io.kstate.implicits._
import io.kstate.testing.KStateSparkSuite

import org.apache.spark.sql.{DataFrame, Encoders, Row, SQLContext}
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.functions.{col, count, struct}
import org.apache.spark.sql.streaming.{
  OutputMode,
  StatefulProcessor,
  StreamingQuery,
  StreamingQueryException,
  TimeMode,
  TimerValues,
  TTLConfig,
  ValueState
}

/** Wiring of the dedup operator into micro-batch queries: state, restart, metrics, plan rules. */
class DeduplicateStreamingSuite extends KStateSparkSuite {
  type Rec = (String, Long, Int) // key, ts (ms), seq

  // the one streaming suite on Spark's default checkpoint file manager for a local disk
  // (FileContext); the others use the FileSystem one, which forks fewer processes
  override protected def extraConf: Map[String, String] = KStateSparkSuite.SparkDefaultCheckpointFiles

  private def input(): MemoryStream[Rec] = {
    implicit val ctx: SQLContext = spark.sqlContext
    val session = spark; import session.implicits._
    MemoryStream[Rec]
  }

  private def frame(in: MemoryStream[Rec]): DataFrame = in.toDF().toDF("k", "ts", "seq")

  private def byKey(interval: String)(df: DataFrame): DataFrame =
    df.kstate.deduplicateByKey(interval, col("k"), col("ts"))

  /** Starts `df` into [[CollectSink]] (idempotent per batch id, so restarts are fine). */
  private def start(df: DataFrame, checkpoint: String, mode: String = "append"): StreamingQuery =
    CollectSink.start(df, checkpoint, mode)

  private def seqs(q: StreamingQuery): Seq[Int] =
    CollectSink.rows(q).map(_.getAs[Int]("seq")).sorted

  /** Runs `batches` (one MemoryStream add each) through `build`; returns the forwarded seqs. */
  private def runAll(batches: Seq[Seq[Rec]], build: DataFrame => DataFrame): (Seq[Int], StreamingQuery) = {
    val in = input()
    val q = start(build(frame(in)), tempDir("ckpt"))
    try {
      batches.foreach { b => in.addData(b); q.processAllAvailable() }
      (seqs(q), q)
    } finally q.stop()
  }

  private val example1 = Seq(
    Seq(("k", 20000L, 1)),
    Seq(("k", 25000L, 2)),
    Seq(("k", 11000L, 3)),
    Seq(("k", 9000L, 4))
  )

  test("KIP-655 Example 1 across micro-batches: late record forwarded only without duplicate") {
    val (out, q) = runAll(example1, byKey("10 seconds"))
    assert(out === Seq(1, 4))
    val op = q.recentProgress.filter(_.stateOperators.nonEmpty).last.stateOperators.head
    assert(op.operatorName === "kstate_deduplicate_by_key")
  }

  test(
    "standby replicas without kstate's plugin, or a bad replica or state store setting: named errors at the first micro-batch"
  ) {
    val standbys = "spark.kstate.standbyReplicas"
    for (
      (key, value, errorClass) <- Seq(
        (standbys, "1", "KSTATE_STANDBY_REPLICAS_NEED_PLUGIN"),
        (standbys, "-1", "KSTATE_INVALID_STANDBY_REPLICAS"),
        (standbys, "one", "KSTATE_INVALID_STANDBY_REPLICAS"),
        ("spark.kstate.maxWarmupReplicas", "-1", "KSTATE_INVALID_REPLICA_SETTING"),
        ("spark.kstate.acceptableRecoveryLag", "1 batch", "KSTATE_INVALID_REPLICA_SETTING"),
        // the state store provider's own settings, read where the store opens
        (
          "spark.sql.streaming.stateStore.kstate.backgroundHeapRestoreAbove",
          "lots",
          "KSTATE_INVALID_STATE_STORE_SETTING"
        ),
        ("spark.sql.streaming.stateStore.kstate.heapStateBytes", "half", "KSTATE_INVALID_STATE_STORE_SETTING"),
        ("spark.sql.streaming.stateStore.kstate.maxWriteSetBytes", "-5", "KSTATE_INVALID_STATE_STORE_SETTING"),
        ("spark.sql.streaming.stateStore.kstate.tableSnapshots", "yes", "KSTATE_INVALID_STATE_STORE_SETTING")
      )
    ) {
      spark.conf.set(key, value)
      try {
        val in = input()
        val q = start(byKey("10 seconds")(frame(in)), tempDir("ckpt"))
        in.addData(("k", 1000L, 1))
        val e = intercept[StreamingQueryException](q.processAllAvailable())
        q.stop()
        assert(kstateCause(e).map(_.errorClass) === Some(errorClass), s"$key=$value")
      } finally spark.conf.unset(key)
    }
  }

  test("KIP-655 Example 3: another key advancing stream time purges the entry") {
    // Example 3 needs k1 and k2 in one state partition (one Kafka task).
    spark.conf.set("spark.sql.shuffle.partitions", "1")
    try {
      val (out, _) = runAll(
        Seq(Seq(("k1", 10000L, 1)), Seq(("k2", 21000L, 2)), Seq(("k1", 9000L, 3))),
        byKey("10 seconds")
      )
      assert(out === Seq(1, 2, 3))
      // Example 2: with k2 at 20 s, k1@10 s is still stored, so k1@9 s is a duplicate.
      val (out2, _) = runAll(
        Seq(Seq(("k1", 10000L, 1)), Seq(("k2", 20000L, 2)), Seq(("k1", 9000L, 3))),
        byKey("10 seconds")
      )
      assert(out2 === Seq(1, 2))
    } finally spark.conf.set("spark.sql.shuffle.partitions", "3")
  }

  test("stream time is per state partition and persists across micro-batches and restarts") {
    val batches = Seq(
      Seq(("a", 100000L, 1)),
      Seq(("a", 105000L, 2)),
      Seq(("a", 80000L, 3)),
      Seq(("a", 116000L, 4)),
      Seq(("a", 95000L, 5)),
      Seq(("a", 126000L, 6))
    )
    val (uninterrupted, _) = runAll(batches, byKey("10 seconds"))
    // a@126 is exactly 10 s after the stored a@116: a duplicate (inclusive bound).
    assert(uninterrupted === Seq(1, 3, 4, 5))
    // Stop and restart from the checkpoint between every pair of batches.
    val ckpt = tempDir("ckpt")
    val in = input()
    val sink = scala.collection.mutable.ArrayBuffer.empty[Int]
    batches.foreach { b =>
      val q = start(byKey("10 seconds")(frame(in)), ckpt)
      in.addData(b)
      q.processAllAvailable()
      sink ++= seqs(q)
      q.stop()
    }
    assert(sink.sorted.toSeq === uninterrupted)
  }

  test("a changed interval on restart fails with a named error; the original config resumes") {
    val ckpt = tempDir("ckpt")
    val in = input()
    val q1 = start(byKey("10 seconds")(frame(in)), ckpt)
    in.addData(("k", 1000L, 1)); q1.processAllAvailable(); q1.stop()

    val q2 = start(byKey("20 seconds")(frame(in)), ckpt)
    in.addData(("k", 2000L, 2))
    val e = intercept[StreamingQueryException](q2.processAllAvailable())
    assert(e.getMessage.contains("KSTATE_OPERATOR_CONFIG_CHANGED"), e.getMessage)
    assert(e.getMessage.contains("intervalMs=10000") && e.getMessage.contains("intervalMs=20000"))
    q2.stop()

    val q3 = start(byKey("10 seconds")(frame(in)), ckpt)
    q3.processAllAvailable()
    assert(seqs(q3) === Seq.empty) // k@2000 is a duplicate of k@1000: state survived
    q3.stop()
  }

  test("a different kstate state store provider on restart fails with a named error") {
    val ckpt = tempDir("ckpt")
    val in = input()
    val q1 = start(byKey("10 seconds")(frame(in)), ckpt)
    in.addData(("k", 1000L, 1)); q1.processAllAvailable(); q1.stop()
    spark.conf.set(KStateConf.StateStoreProvider.key, classOf[org.apache.spark.sql.kstate.OtherRocksDBProvider].getName)
    try {
      val q2 = start(byKey("10 seconds")(frame(in)), ckpt)
      in.addData(("k", 2000L, 2))
      val e = intercept[StreamingQueryException](q2.processAllAvailable())
      assert(e.getMessage.contains("KSTATE_OPERATOR_CONFIG_CHANGED"), e.getMessage)
      assert(
        e.getMessage.contains("stateStoreProvider=" + classOf[org.apache.spark.sql.kstate.OtherRocksDBProvider].getName)
      )
      q2.stop()
    } finally spark.conf.unset(KStateConf.StateStoreProvider.key)
  }

  /** The state directory of the query's only kstate operator. */
  private def operatorDir(ckpt: String): java.io.File =
    new java.io.File(ckpt, "state").listFiles().filter(_.getName.toLongOption
      .exists(org.apache.spark.sql.kstate.planning.OperatorIdentity.isKStateOperatorId)).toSeq match {
      case Seq(d) => d
      case other => fail(s"expected one kstate operator directory, found $other")
    }

  /** The named kstate error in `e`'s cause chain. */
  private def kstateCause(e: Throwable): Option[KStateException] =
    Iterator.iterate(e)(_.getCause).takeWhile(_ != null).collectFirst { case k: KStateException => k }

  test("a changelog of state partition 1 copied over partition 0's fails the restart with KSTATE_STATE_FILE_CORRUPT") {
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    try {
      val (a, b) = keysInDifferentPartitions(2)
      val ckpt = tempDir("ckpt")
      val in = input()
      val q1 = start(byKey("10 seconds")(frame(in)), ckpt)
      in.addData((a, 1000L, 1), (b, 1000L, 2)); q1.processAllAvailable()
      in.addData((a, 2000L, 3), (b, 30000L, 4)); q1.processAllAvailable()
      q1.stop()
      val op = operatorDir(ckpt)
      val name = "2.kstate.changelog" // written by micro-batch 1 in both partitions
      java.nio.file.Files.copy(
        new java.io.File(op, s"1/$name").toPath,
        new java.io.File(op, s"0/$name").toPath,
        java.nio.file.StandardCopyOption.REPLACE_EXISTING
      )

      val q2 = start(byKey("10 seconds")(frame(in)), ckpt)
      in.addData((a, 3000L, 5), (b, 31000L, 6))
      val e = intercept[StreamingQueryException](q2.processAllAvailable())
      q2.stop()
      val k = kstateCause(e).getOrElse(fail("no KStateException in the cause chain", e))
      info(k.getMessage)
      assert(k.errorClass === "KSTATE_STATE_FILE_CORRUPT")
      assert(
        k.getMessage.contains(s"0/$name") && k.getMessage.contains("partition 0") &&
          k.getMessage.contains("partition 1"),
        k.getMessage
      )
    } finally spark.conf.set("spark.sql.shuffle.partitions", "3")
  }

  test("a deleted configuration record is a named error on restart, not a run on the old state") {
    val ckpt = tempDir("ckpt")
    val in = input()
    val q1 = start(byKey("10 seconds")(frame(in)), ckpt)
    in.addData(("k", 1000L, 1)); q1.processAllAvailable(); q1.stop()
    val record = new java.io.File(operatorDir(ckpt), "_kstate/operator.properties")
    assert(record.delete())

    val q2 = start(byKey("20 seconds")(frame(in)), ckpt)
    in.addData(("k", 2000L, 2))
    val e = intercept[StreamingQueryException](q2.processAllAvailable())
    q2.stop()
    info(kstateCause(e).map(_.getMessage).getOrElse(e.getMessage))
    assert(e.getMessage.contains("KSTATE_OPERATOR_CONFIG_MISSING"), e.getMessage)
    assert(e.getMessage.contains(record.getPath), e.getMessage)
    assert(kstateCause(e).map(_.errorClass) === Some("KSTATE_OPERATOR_CONFIG_MISSING"))
    assert(!record.exists(), "a failed restart must not record a configuration for old state")
  }

  test("a query whose first batch failed before committing any state restarts, also without a record") {
    val boom = org.apache.spark.sql.functions.udf { (k: String) =>
      if (k == "boom") throw new IllegalStateException("output failure") else k
    }
    spark.conf.set("spark.sql.shuffle.partitions", "1") // one task: it fails before its commit
    try {
      val ckpt = tempDir("ckpt")
      val in = input()
      // fails while the store is open, after the provider created the partition's directory
      val q1 = start(byKey("10 seconds")(frame(in)).withColumn("k", boom(col("k"))), ckpt)
      in.addData(("boom", 1000L, 1))
      intercept[StreamingQueryException](q1.processAllAvailable())
      q1.stop()
      val partition = new java.io.File(operatorDir(ckpt), "0")
      assert(
        partition.isDirectory && !partition.list().exists(_.endsWith(".kstate.changelog")),
        partition.list().toSeq
      )
      // a failed first batch without its configuration record (e.g. it failed before recording)
      assert(new java.io.File(operatorDir(ckpt), "_kstate/operator.properties").delete())

      val q2 = start(byKey("20 seconds")(frame(in)), ckpt)
      in.addData(("k", 2000L, 2), ("k", 3000L, 3))
      q2.processAllAvailable()
      q2.stop()
      assert(seqs(q2) === Seq(1, 2)) // batch 0 re-runs: boom@1 s and k@2 s; k@3 s is a duplicate
      val recorded = scala.io.Source.fromFile(new java.io.File(operatorDir(ckpt), "_kstate/operator.properties"))
      try assert(recorded.mkString.contains("intervalMs=20000"))
      finally recorded.close()
    } finally spark.conf.set("spark.sql.shuffle.partitions", "3")
  }

  test("complete output mode is rejected with a named error when the query starts") {
    val in = input()
    for (df <- Seq(byKey("1 second")(frame(in)).groupBy("k").count(), byKey("1 second")(frame(in)))) {
      val e = intercept[KStateException](df.writeStream.format("memory").queryName("c" + System.nanoTime())
        .option("checkpointLocation", tempDir("ckpt")).outputMode("complete").start())
      assert(e.errorClass === "KSTATE_UNSUPPORTED_OUTPUT_MODE", e.getMessage)
    }
  }

  test("metrics: duplicates, late records, null keys, stored entries in progress customMetrics") {
    val in = input()
    val q = start(byKey("10 seconds")(frame(in)), tempDir("ckpt"))
    in.addData(
      ("k", 20000L, 1),
      ("k", 25000L, 2),
      ("k", 11000L, 3),
      ("k", 9000L, 4),
      (null, 30000L, 5),
      ("j", 30000L, 6)
    )
    q.processAllAvailable()
    val op = q.lastProgress.stateOperators.head
    val m = op.customMetrics.asScala.map { case (k, v) => k -> v.longValue() }
    assert(m("duplicatesDropped") === 2L)
    assert(m("lateRecordsForwarded") === 1L)
    assert(m("nullKeysForwarded") === 1L)
    // At stream time 30000 the bound is 20000 (inclusive): k@20000 and j@30000 stay stored.
    assert(m("storedEntries") === 2L)
    assert(op.numRowsTotal === 2L)
    // kstate reports its own provider's metrics, whatever the session's provider is.
    assert(m.contains("kstateStoreChangelogRecords") && m("kstateStoreChangelogRecords") > 0L, m.keySet)
    // The same figures are SQL metrics of the exec: what the Spark UI's SQL tab shows.
    val exec = q.asInstanceOf[org.apache.spark.sql.execution.streaming.runtime.StreamingQueryWrapper]
      .streamingQuery.lastExecution.executedPlan.collectFirst {
        case e: org.apache.spark.sql.kstate.execution.KStateDeduplicateExec => e
      }.get
    assert(exec.metrics("duplicatesDropped").value === 2L)
    assert(exec.metrics("numOutputRows").value === 4L)
    assert(exec.metrics("duplicatesDropped").metricType === "sum")
    q.stop()
  }

  test("purging keeps stored entries bounded: expired entries linger at most one interval") {
    spark.conf.set("spark.sql.shuffle.partitions", "1")
    try {
      val in = input()
      val q = start(byKey("10 seconds")(frame(in)), tempDir("ckpt"))
      // A new key every 2 s of event time: 6 keys are live (ts >= stream time - 10 s) at a time.
      val stored = (0 until 30).map { i =>
        in.addData((s"k$i", i * 2000L, i)); q.processAllAvailable()
        q.lastProgress.stateOperators.head.customMetrics.get("storedEntries").longValue()
      }
      q.stop()
      assert(seqs(q) === (0 until 30))
      assert(stored.max <= 12L, stored) // live (6) + at most one interval of expired ones (5)
      assert(stored.last >= 6L)
      // Row counts add up: every stored entry is still stored or was removed.
      val ops = q.recentProgress.flatMap(_.stateOperators)
      assert(ops.map(_.numRowsUpdated).sum - ops.map(_.numRowsRemoved).sum === stored.last)
    } finally spark.conf.set("spark.sql.shuffle.partitions", "3")
  }

  test("modes: by key and value, and by id across partitions; struct keys") {
    val in = input()
    val df = frame(in).withColumn("id", col("seq") % 2)
    val byKv = df.kstate.deduplicateByKeyValue(col("id"), "10 seconds", struct(col("k")), col("ts"))
    val q = start(byKv, tempDir("ckpt"))
    in.addData(("k", 1000L, 1), ("k", 2000L, 2), ("k", 3000L, 3), ("j", 3000L, 5))
    q.processAllAvailable()
    assert(seqs(q) === Seq(1, 2, 5))
    q.stop()

    val in2 = input()
    val byId = frame(in2).kstate.deduplicate(col("k"), "10 seconds", col("ts"))
    val q2 = start(byId, tempDir("ckpt"))
    in2.addData(("x", 1000L, 1), ("y", 1000L, 2))
    in2.addData(("x", 5000L, 3), ("y", 12000L, 4))
    q2.processAllAvailable()
    assert(seqs(q2) === Seq(1, 2, 4))
    q2.stop()
  }

  test("kstate and Spark's own stateful operators in one query, with a different query-wide provider") {
    val provider = "spark.sql.streaming.stateStore.providerClass"
    val old = spark.conf.getOption(provider)
    spark.conf.set(
      provider,
      "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
    )
    try {
      val in = input()
      val counted = byKey("10 seconds")(frame(in)).groupBy("k").agg(count("*").as("n"))
      val q = CollectSink.start(counted, tempDir("ckpt"), "update")
      in.addData(("a", 1000L, 1), ("a", 2000L, 2), ("b", 1000L, 3))
      q.processAllAvailable()
      in.addData(("a", 20000L, 4))
      q.processAllAvailable()
      val latest = CollectSink.rows(q).groupBy(_.getString(0)).map {
        case (k, rows) => k -> rows.map(_.getLong(1)).max
      }
      assert(latest === Map("a" -> 2L, "b" -> 1L))
      assert(q.lastProgress.stateOperators.map(_.operatorName).toSet ===
        Set("kstate_deduplicate_by_key", "stateStoreSave"))
      q.stop()
    } finally old match {
        case Some(v) => spark.conf.set(provider, v)
        case None => spark.conf.unset(provider)
      }
  }

  test("kstate dedup upstream of transformWithState in one query") {
    val provider = "spark.sql.streaming.stateStore.providerClass"
    spark.conf.set(
      provider,
      "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
    )
    try {
      val session = spark; import session.implicits._
      val in = input()
      val deduped = byKey("10 seconds")(frame(in)).select($"k", $"seq").as[(String, Int)]
      val tws = deduped.groupByKey(_._1)
        .transformWithState(new CountingProcessor, TimeMode.None(), OutputMode.Update())
      val q = CollectSink.start(tws.toDF(), tempDir("ckpt"), "update")
      in.addData(("a", 1000L, 1), ("a", 2000L, 2), ("b", 1000L, 3))
      q.processAllAvailable()
      // b@5000 before a@30000: b is a duplicate of b@1000 before a's stream time expires it.
      in.addData(("b", 5000L, 5), ("a", 30000L, 4))
      q.processAllAvailable()
      val counts = CollectSink.rows(q).map(r => r.getString(0) -> r.getLong(1)).groupBy(_._1)
        .map { case (k, v) => k -> v.map(_._2).max }
      assert(counts === Map("a" -> 2L, "b" -> 1L))
      q.stop()
    } finally spark.conf.unset(provider)
  }

  /** Two keys that land in different state partitions (Spark's hash partitioning). */
  private def keysInDifferentPartitions(n: Int): (String, String) = {
    val s = spark; import s.implicits._
    val parts = Seq("a", "b", "c", "d", "e", "f").toDF("k")
      .selectExpr("k", s"pmod(hash(k), $n) AS p").collect().map(r => r.getString(0) -> r.getInt(1))
    val (k1, p1) = parts.head
    (k1, parts.find(_._2 != p1).get._1)
  }

  private def withWatermarkOption(follow: Boolean): Seq[Int] = {
    val (a, b) = keysInDifferentPartitions(3)
    spark.conf.set(KStateConf.StreamTimeFollowsWatermark.key, follow.toString)
    try {
      val in = input()
      val df = frame(in).withColumn("event_time", (col("ts") / 1000).cast("timestamp"))
        .withWatermark("event_time", "0 seconds")
      val q = start(byKey("10 seconds")(df), tempDir("ckpt"))
      in.addData((a, 1000L, 1), (b, 100000L, 2)) // b's partition sets the watermark to 100 s
      q.processAllAvailable()
      in.addData((a, 5000L, 3)) // a's partition has seen only 1 s
      q.processAllAvailable()
      q.stop()
      seqs(q)
    } finally spark.conf.unset(KStateConf.StreamTimeFollowsWatermark.key)
  }

  test("stream time is per partition by default; followWatermark raises it to the watermark") {
    // Default: a's partition is idle at stream time 1 s, so a@5 s is a duplicate of a@1 s.
    assert(withWatermarkOption(follow = false) === Seq(1, 2))
    // Option on: stream time jumps to the 100 s watermark, a@1 s expires, a@5 s is a late
    // non-duplicate and is forwarded.
    assert(withWatermarkOption(follow = true) === Seq(1, 2, 3))
  }

  test("operators are identified by name; two operators with one name are an error") {
    val in = input()
    val once = byKey("10 seconds")(frame(in)).kstate.deduplicateByKey("10 seconds", col("k"), col("ts"), "same")
    // both names are in the plan when the second operator is built
    val built = intercept[KStateException](once.kstate.deduplicateByKey("5 seconds", col("k"), col("ts"), "same"))
    assert(built.errorClass === "KSTATE_DUPLICATE_OPERATOR_NAME")
    // DataFrames built apart and combined later: found when the query runs
    val other = frame(in).kstate.deduplicateByKey("5 seconds", col("k"), col("ts"), "same")
    val q = start(once.union(other), tempDir("ckpt"))
    in.addData(("k", 1L, 1))
    val e = intercept[StreamingQueryException](q.processAllAvailable())
    assert(e.getMessage.contains("KSTATE_DUPLICATE_OPERATOR_NAME"), e.getMessage)
    q.stop()

    val ckpt = tempDir("ckpt")
    val in2 = input()
    val q2 = start(frame(in2).kstate.deduplicateByKey("10 seconds", col("k"), col("ts"), "clicks"), ckpt)
    in2.addData(("k", 1L, 1)); q2.processAllAvailable(); q2.stop()
    val stateDirs = new java.io.File(ckpt, "state").list().toSet
    assert(stateDirs === Set(org.apache.spark.sql.kstate.planning.OperatorIdentity.operatorId("clicks").toString))
    val recorded = scala.io.Source.fromFile(
      new java.io.File(ckpt, s"state/${stateDirs.head}/_kstate/operator.properties")
    ).mkString
    assert(recorded.contains("name=clicks") && recorded.contains("intervalMs=10000"))
  }

  test("floating point keys: -0.0 equals 0.0 and NaN equals NaN, as in Spark's grouping") {
    val s = spark; import s.implicits._
    val df = Seq(
      (0.0d, 1000L, 1),
      (-0.0d, 2000L, 2),
      (Double.NaN, 1000L, 3),
      (java.lang.Double.longBitsToDouble(0x7ff8000000000001L), 2000L, 4)
    ).toDF("k", "ts", "seq")
      .coalesce(1)
    val out = df.kstate.deduplicateByKey("10 seconds", col("k"), col("ts"))
    assert(out.collect().map(_.getAs[Int]("seq")).sorted.toSeq === Seq(1, 3))
  }

  test("a batch DataFrame is one batch in DataFrame order, no state kept") {
    val session = spark; import session.implicits._
    val df = example1.flatten.toDF("k", "ts", "seq").repartition(3).sortWithinPartitions("seq")
      .coalesce(1)
    assert(byKey("10 seconds")(df).collect().map(_.getAs[Int]("seq")).sorted.toSeq === Seq(1, 4))
    // Run twice: nothing carried over from the first run.
    assert(byKey("10 seconds")(df).count() === 2)
  }
}

/** A foreachBatch sink keeping each query's rows per batch id in memory (replays overwrite). */
object CollectSink {
  private val batches =
    new java.util.concurrent.ConcurrentHashMap[String, java.util.concurrent.ConcurrentHashMap[Long, Seq[Row]]]()

  def start(df: DataFrame, checkpoint: String, mode: String): StreamingQuery = {
    val id = "q" + System.nanoTime()
    batches.put(id, new java.util.concurrent.ConcurrentHashMap[Long, Seq[Row]]())
    df.writeStream.queryName(id).option("checkpointLocation", checkpoint).outputMode(mode)
      .foreachBatch { (b: DataFrame, batchId: Long) =>
        batches.get(id).put(batchId, b.collect().toSeq); ()
      }.start()
  }

  def rows(q: StreamingQuery): Seq[Row] =
    batches.get(q.name).asScala.toSeq.sortBy(_._1).flatMap(_._2)
}

/** Counts records per key in a ValueState. */
class CountingProcessor extends StatefulProcessor[String, (String, Int), (String, Long)] {
  @transient private var seen: ValueState[Long] = _
  override def init(outputMode: OutputMode, timeMode: TimeMode): Unit =
    seen = getHandle.getValueState[Long]("seen", Encoders.scalaLong, TTLConfig.NONE)
  override def handleInputRows(key: String, rows: Iterator[(String, Int)], timerValues: TimerValues)
      : Iterator[(String, Long)] = {
    val n = (if (seen.exists()) seen.get() else 0L) + rows.size
    seen.update(n)
    Iterator((key, n))
  }
}
