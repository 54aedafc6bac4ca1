package io.kstate.oracle

import java.nio.file.Files

import scala.collection.mutable.ArrayBuffer

import io.kstate.suppress.{BufferConfig, Suppressed}
import io.kstate.windows.{SessionWindows, SlidingWindows, TimeWindows}
import io.kstate.implicits._

import org.apache.spark.sql.{DataFrame, Row, SQLContext, SparkSession}
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.streaming.StreamingQueryException

import OracleCase._

/**
 * kstate on an [[OracleCase]]: the same records as a streaming query over a `MemoryStream` with
 * one input partition and one state partition (`spark.sql.shuffle.partitions=1`), so the
 * operator sees Kafka's single task's order; one micro-batch per input batch
 * (`processAllAvailable` after each), the rows each micro-batch emits collected in order.
 * A micro-batch that fails with `KSTATE_BUFFER_FULL` ends the run (`Emitted.failedAt`).
 */
final class KStateRunner(spark: SparkSession) {
  type Row3 = (String, Long, Option[Long])

  def run(c: OracleCase, batches: Seq[Seq[Ev]]): Emitted = {
    implicit val ctx: SQLContext = spark.sqlContext
    val session = spark; import session.implicits._
    val in = MemoryStream[Row3](1)
    val df = in.toDF().toDF("k", "ts", "v")
    val (query, mode, toOut) = build(c, df)
    val emitted = new java.util.concurrent.ConcurrentHashMap[Long, Seq[Out]]()
    val q = query.writeStream.outputMode(mode)
      .option("checkpointLocation", Files.createTempDirectory("kstate-oracle").toString)
      .foreachBatch { (b: DataFrame, id: Long) => emitted.put(id, b.collect().toSeq.map(toOut)); () }
      .start()
    var failedAt: Option[Int] = None
    try {
      val it = batches.iterator.zipWithIndex
      while (failedAt.isEmpty && it.hasNext) {
        val (batch, i) = it.next()
        in.addData(batch.map(e => (e.key, e.ts, e.value)))
        try q.processAllAvailable()
        catch {
          case e: StreamingQueryException if String.valueOf(e.getMessage).contains("KSTATE_BUFFER_FULL") =>
            failedAt = Some(i)
        }
      }
    } finally q.stop()
    val n = failedAt.getOrElse(batches.length)
    Emitted((0 until n).map(i => Option(emitted.get(i.toLong)).getOrElse(Nil)), failedAt)
  }

  private def windowed(r: Row): Out = {
    val tombstone = r.schema.fieldNames.contains("tombstone") && r.getAs[Boolean]("tombstone")
    Out(
      r.getAs[String]("k"),
      r.getAs[Long]("window_start"),
      r.getAs[Long]("window_end"),
      if (tombstone) None else Some(r.getAs[Long]("count"))
    )
  }

  private def build(c: OracleCase, df: DataFrame): (DataFrame, String, Row => Out) = {
    val suppress = (d: DataFrame, on: Boolean) =>
      if (on) d.kstate.suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded)) else d
    c match {
      case TimeCount(size, advance, grace, s) =>
        val w = TimeWindows.ofSize(size).advanceBy(advance).grace(grace)
        (suppress(df.kstate.windowedBy(w, col("k"), col("ts")).count(), s), "update", windowed)
      case SessionCount(gap, grace, s) =>
        val w = SessionWindows.withInactivityGap(gap).grace(grace)
        (suppress(df.kstate.windowedBy(w, col("k"), col("ts")).count(), s), "update", windowed)
      case SlidingCount(diff, grace, s) =>
        val w = SlidingWindows.ofTimeDifference(diff).grace(grace)
        (suppress(df.kstate.windowedBy(w, col("k"), col("ts")).count(), s), "update", windowed)
      case TimeLimit(limit, buffer) =>
        val config = buffer match {
          case Unbounded => BufferConfig.unbounded
          case MaxRecordsEmitEarly(n) => BufferConfig.maxRecords(n)
          case MaxRecordsShutDown(n) => BufferConfig.maxRecords(n).shutDownWhenFull
        }
        val limited = df.kstate.suppress(
          Suppressed.untilTimeLimit(java.time.Duration.ofMillis(limit), config),
          col("k"),
          col("ts"),
          null
        )
        (
          limited,
          "update",
          (r: Row) =>
            Out(
              r.getAs[String]("k"),
              r.getAs[Long]("ts"),
              r.getAs[Long]("ts"),
              Option(r.getAs[java.lang.Long]("v")).map(_.longValue)
            )
        )
    }
  }
}
