package io.kstate

import io.kstate.implicits._
import io.kstate.testing.KStateSparkSuite
import io.kstate.windows.{SessionWindows, TimeWindows, Windows}

import org.apache.spark.sql.{DataFrame, SQLContext}
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.functions.col

/** KIP-655's original windowed distinct(), with the worked examples from the KIP text. */
class WindowedDistinctSuite extends KStateSparkSuite {
  // "three bursts of variously ordered records", then "late arrivals" (seconds)
  private val bursts = Seq(Seq(4, 5, 6), Seq(23, 22, 24), Seq(34, 33, 32), Seq(7, 22, 35))
    .map(_.map(s => ("key", s * 1000L)))

  private def distinct(windows: Windows)(df: DataFrame): DataFrame =
    df.kstate.windowedBy(windows, col("k"), col("ts")).distinct()

  private def batch(windows: Windows): Seq[(Long, Long, Long)] = {
    val s = spark; import s.implicits._
    distinct(windows)(bursts.flatten.toDF("k", "ts").coalesce(1)).collect()
      .map(r => (r.getLong(1), r.getLong(2), r.getLong(3))).toSeq
  }

  private def streaming(windows: Windows): Seq[(Long, Long, Long)] = {
    implicit val ctx: SQLContext = spark.sqlContext
    val s = spark; import s.implicits._
    val in = MemoryStream[(String, Long)]
    val q = CollectSink.start(distinct(windows)(in.toDF().toDF("k", "ts")), tempDir("ckpt"), "append")
    try {
      bursts.foreach { b => in.addData(b); q.processAllAvailable() }
      CollectSink.rows(q).map(r => (r.getLong(1), r.getLong(2), r.getLong(3)))
    } finally q.stop()
  }

  private def both(windows: Windows, expected: Seq[(Long, Long, Long)]): Unit = {
    assert(batch(windows) === expected, "batch")
    assert(streaming(windows) === expected, "streaming")
  }

  test("tumbling 10 s: one record per epoch-aligned window (KIP example)") {
    both(
      TimeWindows.ofSize("10 seconds"),
      Seq((4000L, 0L, 10000L), (23000L, 20000L, 30000L), (34000L, 30000L, 40000L))
    )
  }

  test("session gap 10 s: all records from 23 s on stick together (KIP example)") {
    both(
      SessionWindows.withInactivityGap("10 seconds"),
      Seq((4000L, 4000L, 4000L), (23000L, 23000L, 23000L))
    )
  }

  test("session gap 9 s: three sessions (KIP example)") {
    both(
      SessionWindows.withInactivityGap("9 seconds"),
      Seq((4000L, 4000L, 4000L), (23000L, 23000L, 23000L), (34000L, 34000L, 34000L))
    )
  }

  test("late records for a closed window are dropped; grace keeps the window open") {
    val s = spark; import s.implicits._
    val df = Seq(("k", 15000L), ("k", 25000L), ("k", 5000L)).toDF("k", "ts").coalesce(1)
    val noGrace = distinct(TimeWindows.ofSize("10 seconds"))(df).collect().map(_.getLong(1))
    assert(noGrace.toSeq === Seq(15000L, 25000L)) // [0,10) closed at stream time 25 s
    val graced = distinct(TimeWindows.ofSize("10 seconds").grace("20 seconds"))(df)
      .collect().map(_.getLong(1))
    assert(graced.toSeq === Seq(15000L, 25000L, 5000L))
  }

  test("hopping windows are rejected for distinct; bad window specs are named errors") {
    val s = spark; import s.implicits._
    val df = Seq(("k", 1L)).toDF("k", "ts")
    val e = intercept[KStateException] {
      df.kstate.windowedBy(TimeWindows.ofSize("10 s").advanceBy("5 s"), col("k"), col("ts")).distinct()
    }
    assert(e.errorClass === "KSTATE_UNSUPPORTED_WINDOWS")
    assert(intercept[KStateException](TimeWindows.ofSize(0L)).errorClass === "KSTATE_INVALID_WINDOW")
    assert(intercept[KStateException](SessionWindows.withInactivityGap("-1s")).errorClass ===
      "KSTATE_INVALID_DURATION")
  }

  test("timestamp columns give TIMESTAMP window bounds") {
    val s = spark; import s.implicits._
    val df = Seq(("k", 4000L), ("k", 5000L)).toDF("k", "ms")
      .withColumn("ts", (col("ms") / 1000).cast("timestamp"))
    val out = df.kstate.windowedBy(TimeWindows.ofSize("10 seconds"), col("k"), col("ts")).distinct()
    assert(out.schema("window_start").dataType.typeName === "timestamp")
    val r = out.collect()
    assert(r.length === 1 && r.head.getAs[java.sql.Timestamp]("window_end").getTime === 10000L)
  }
}
