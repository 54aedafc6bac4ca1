package org.apache.spark.sql.kstate

import java.time.Instant
import java.util.concurrent.ConcurrentLinkedQueue

import scala.jdk.CollectionConverters._

import io.kstate.KStateException
import io.kstate.implicits._
import io.kstate.suppress.{BufferConfig, Suppressed}
import io.kstate.testing.KStateSparkSuite

import org.apache.spark.sql.{DataFrame, ForeachWriter, Row}
import org.apache.spark.sql.execution.streaming.RealTimeTrigger
import org.apache.spark.sql.execution.streaming.checkpointing.CommitLog
import org.apache.spark.sql.execution.streaming.sources.LowLatencyMemoryStream
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.streaming.{StreamingQuery, StreamingQueryException}

/**
 * Spark 4.3's real-time mode (`Trigger.RealTime`) with kstate operators (docs/operators.md,
 * "Real-time mode"): what Spark requires of them, and what deduplication and `until_time_limit`
 * do when let in. Spark 4.3 only (4.2's real-time mode allows no stateful operator at all).
 *
 * Each real-time batch is one long job whose tasks all run at once: one input partition and one
 * state partition, so a query's two tasks fit the session's two cores; the queries run one
 * after the other.
 */
class RealTimeModeSuite extends KStateSparkSuite {
  import RealTimeModeSuite._

  override protected def extraConf: Map[String, String] = Map(
    "spark.sql.streaming.realTimeMode.minBatchDuration" -> "1000",
    "spark.sql.shuffle.partitions" -> "1"
  )

  private type Rec = (String, Long)
  private val BatchMs = 5000L

  private def source(): LowLatencyMemoryStream[Rec] = {
    val session = spark; import session.implicits._
    LowLatencyMemoryStream.singlePartition[Rec](spark)
  }

  /** Starts `df` with a real-time trigger into a foreach sink (one of real-time mode's allowed sinks). */
  private def start(df: DataFrame): Started = {
    val seen = new ConcurrentLinkedQueue[(String, Long)]()
    val id = s"rtm${System.nanoTime()}"
    sinks.put(id, seen)
    val ckpt = tempDir("rtm")
    val q = df.writeStream.queryName(id).option("checkpointLocation", ckpt).outputMode("update")
      .trigger(RealTimeTrigger(BatchMs)).foreach(new Collect(id)).start()
    Started(q, seen, ckpt)
  }

  private def frame(in: LowLatencyMemoryStream[Rec]): DataFrame = in.toDF().toDF("k", "ts")

  private def dedup(in: LowLatencyMemoryStream[Rec]): DataFrame =
    frame(in).kstate.deduplicateByKey("10 seconds", col("k"), col("ts"), "dedup")

  private def causes(e: Throwable): Seq[Throwable] = Iterator.iterate(e)(_.getCause).takeWhile(_ != null).toSeq

  /**
   * Runs the first real-time batch of `df` over `records` to its end; returns the rows the sink
   * received, each with how long after the batch started it arrived, and the checkpoint.
   */
  private def firstBatch(df: LowLatencyMemoryStream[Rec] => DataFrame, records: Rec*): (Seq[(String, Long)], String) = {
    val in = source()
    in.addData(records)
    val s = start(df(in))
    try {
      val deadline = System.currentTimeMillis() + 60000
      while (s.q.recentProgress.isEmpty && s.q.exception.isEmpty && System.currentTimeMillis() < deadline)
        Thread.sleep(100)
      s.q.exception.foreach(e => fail(e))
      val started = Instant.parse(s.q.recentProgress.head.timestamp).toEpochMilli
      (s.seen.asScala.toSeq.map { case (row, at) => row -> (at - started) }.sortBy(_._1), s.checkpoint)
    } finally s.q.stop()
  }

  test(
    "a kstate operator in a real-time query with Spark's defaults: refused by Spark's operator allowlist, naming kstate's exec (was KSTATE_UNSUPPORTED_CHECKPOINT_FORMAT)"
  ) {
    // Before: real-time mode forces checkpoint format 2, which kstate refused in the first
    // micro-batch; and Spark 4.3 took a query of kstate operators for a stateless one and turned
    // on asynchronous progress tracking, which failed with "Stateful streaming queries does not
    // support async progress tracking" (shim StatefulLogicalNode)
    val in = source()
    in.addData(("a", 1000L))
    val s = start(dedup(in))
    try {
      val e = intercept[StreamingQueryException](s.q.processAllAvailable())
      val text = causes(e).map(_.getMessage).mkString("\n")
      assert(
        text.contains("STREAMING_REAL_TIME_MODE.OPERATOR_OR_SINK_NOT_IN_ALLOWLIST") &&
          text.contains("KStateDeduplicateExec"),
        text
      )
      assert(!causes(e).exists(_.isInstanceOf[KStateException]), text)
    } finally s.q.stop()
  }

  test(
    "with Spark's allowlist check off, deduplication and until_time_limit run in real-time mode on format 2 with the micro-batch results, but emit only when the real-time batch ends"
  ) {
    spark.conf.set("spark.sql.streaming.realTimeMode.allowlistCheck", "false")
    try {
      // the control: Spark's own deduplication emits while its batch runs
      val (control, _) = firstBatch(in => frame(in).dropDuplicates("k"), ("a", 1000L), ("a", 2000L), ("b", 1500L))
      assert(control.map(_._1) == Seq("a,1000", "b,1500"))
      assert(control.forall(_._2 < BatchMs - 500), s"Spark's dropDuplicates, ms after the batch started: $control")
      // kstate's deduplication: the same rows, at the end of the batch
      val (deduped, ckpt) = firstBatch(dedup, ("a", 1000L), ("a", 2000L), ("b", 1500L), ("c", 9000L))
      assert(deduped.map(_._1) == Seq("a,1000", "b,1500", "c,9000"))
      assert(deduped.forall(_._2 >= BatchMs), s"kstate's deduplication, ms after the batch started: $deduped")
      // real-time mode made the checkpoint format 2: the commit log holds the operator's id
      val ids = new CommitLog(spark, s"$ckpt/commits").get(0L).flatMap(_.stateUniqueIds).get
      assert(ids.size == 1 && ids.values.head.length == 1, ids)
      // until_time_limit: b (5 s) moves stream time past a's limit, so a is due while the batch
      // runs; kstate emits it when the batch ends
      val (limited, _) = firstBatch(
        in =>
          frame(in).kstate.suppress(
            Suppressed.untilTimeLimit("1 second", BufferConfig.unbounded),
            col("k"),
            col("ts"),
            "limit"
          ),
        ("a", 1000L),
        ("b", 5000L)
      )
      assert(limited.map(_._1) == Seq("a,1000"))
      assert(limited.forall(_._2 >= BatchMs), s"kstate's until_time_limit, ms after the batch started: $limited")
    } finally spark.conf.unset("spark.sql.streaming.realTimeMode.allowlistCheck")
  }
}

object RealTimeModeSuite {
  final case class Started(q: StreamingQuery, seen: ConcurrentLinkedQueue[(String, Long)], checkpoint: String)

  val sinks = new java.util.concurrent.ConcurrentHashMap[String, ConcurrentLinkedQueue[(String, Long)]]()

  /** Collects rows as text with the time each arrived. */
  final class Collect(id: String) extends ForeachWriter[Row] {
    override def open(partitionId: Long, epochId: Long): Boolean = true
    override def process(value: Row): Unit = sinks.get(id).add(value.toSeq.mkString(",") -> System.currentTimeMillis())
    override def close(errorOrNull: Throwable): Unit = ()
  }
}
