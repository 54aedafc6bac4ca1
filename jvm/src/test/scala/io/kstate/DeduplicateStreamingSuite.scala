package io.kstate

import io.kstate.implicits._
import io.kstate.testing.KStateSparkSuite

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.streaming.{StreamingQuery, Trigger}

class DeduplicateStreamingSuite extends KStateSparkSuite {

  private def run(
      batches: Seq[Seq[(String, Long, Int)]],
      checkpoint: String,
      build: DataFrame => DataFrame): (Seq[Row], StreamingQuery) = {
    val s = spark
    import s.implicits._
    implicit val sqlCtx: org.apache.spark.sql.SQLContext = s.sqlContext
    val input = MemoryStream[(String, Long, Int)]
    val df = build(input.toDF().toDF("k", "ts", "seq"))
    val q = df.writeStream.format("memory").queryName("out_" + System.nanoTime())
      .option("checkpointLocation", checkpoint).outputMode("append").start()
    batches.foreach { b => input.addData(b); q.processAllAvailable() }
    val rows = spark.table(q.name).collect().toSeq
    (rows, q)
  }

  test("KIP-655 Example 1 across micro-batches: late record forwarded only without duplicate") {
    val (rows, q) = run(
      Seq(Seq(("k", 20000L, 1)), Seq(("k", 25000L, 2)), Seq(("k", 11000L, 3)), Seq(("k", 9000L, 4))),
      tempDir("ckpt"),
      _.kstate.deduplicateByKey("10 seconds", col("k"), col("ts")))
    q.stop()
    assert(rows.map(_.getInt(2)).sorted === Seq(1, 4))
    val progress = q.recentProgress.filter(_.stateOperators.nonEmpty).last.stateOperators.head
    assert(progress.operatorName === "kstate_deduplicate_by_key")
  }
}
