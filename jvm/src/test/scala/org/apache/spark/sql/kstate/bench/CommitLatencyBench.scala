package org.apache.spark.sql.kstate.bench

import java.nio.file.{Files, Paths}
import java.util.concurrent.atomic.AtomicBoolean

import scala.jdk.CollectionConverters._
import scala.util.Random

import org.apache.hadoop.conf.Configuration

import org.apache.spark.network.util.JavaUtils
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.kstate.provider.KStateStoreProvider

/**
 * Commit latency of kstate's provider, per micro-batch (issue 14: snapshots off the critical
 * path), run by `make bench` (`bin/sbt "Test/runMain ..."`).
 *
 * Shape: a state of `keys` keys (written as version 1), then `batches` micro-batches that each
 * update `perBatch` random keys and commit; Spark's default `minDeltasForSnapshot` (10), so a
 * snapshot is due every 10 versions. A second thread calls `doMaintenance` every 100 ms, as
 * Spark's maintenance thread does (its default interval is 60 s; shorter here so that the
 * snapshots due are written during the run). Only `commit()` is timed; the first `warmUp`
 * batches are not counted. Run three times: working copy on the heap (default) and in RocksDB
 * (`heapStateBytes=0`), and on the heap with no snapshot due (the commit path alone).
 *
 * Uses only the provider's public surface (init, getStore, commit, doMaintenance), so the same
 * file runs against an older checkout for a before/after comparison.
 *
 * Prints p50, p99 and max per variant with the machine's load average, and writes
 * `bench/results/commit-latency.json`; if `bench/results/commit-latency-before.json` exists (a
 * run of the code before the change, same machine), it is embedded as `before`. Args:
 * `[--quick] [--out PATH] [--label NAME] [--single]` (`--single`: write only this run's figures).
 */
object CommitLatencyBench {
  import BenchRows._

  private def loadAverage: String =
    try new String(Files.readAllBytes(Paths.get("/proc/loadavg")), "UTF-8").trim
    catch { case _: Exception => "unknown" }

  final case class Figures(
      p50Ms: Double,
      p99Ms: Double,
      maxMs: Double,
      meanMs: Double,
      batches: Int,
      snapshots: Int
  )

  private def percentile(sorted: Array[Double], p: Double): Double =
    sorted(math.min(sorted.length - 1, math.ceil(p * sorted.length).toInt - 1).max(0))

  private def run(
      keys: Int,
      perBatch: Int,
      batches: Int,
      warmUp: Int,
      heapState: String,
      snapshotEvery: Int
  ): Figures = {
    Files.createDirectories(Paths.get(System.getProperty("java.io.tmpdir")))
    val root = Files.createTempDirectory("kstate-bench-commit").toFile
    val sql = new SQLConf
    sql.setConfString("spark.sql.streaming.stateStore.minDeltasForSnapshot", snapshotEvery.toString)
    sql.setConfString("spark.sql.streaming.minBatchesToRetain", "100")
    sql.setConfString("spark.sql.streaming.stateStore.kstate.heapStateBytes", heapState)
    val p = new KStateStoreProvider
    p.init(
      StateStoreId(root.getAbsolutePath, 0, 0),
      keySchema,
      valueSchema,
      NoPrefixKeyStateEncoderSpec(keySchema),
      false,
      new StateStoreConf(sql),
      new Configuration,
      false,
      None
    )
    val stop = new AtomicBoolean(false)
    val maintenance = new Thread(
      () => {
        while (!stop.get) {
          try p.doMaintenance()
          catch { case e: Exception => e.printStackTrace() }
          try Thread.sleep(100)
          catch { case _: InterruptedException => }
        }
      },
      "bench-maintenance"
    )
    try {
      val first = p.getStore(0)
      var i = 0L
      while (i < keys) { first.put(key(i), value(i)); i += 1 }
      var version = first.commit()
      maintenance.setDaemon(true)
      maintenance.start()
      val rnd = new Random(42)
      val times = new Array[Double](batches)
      var b = 0
      while (b < warmUp + batches) {
        val s = p.getStore(version)
        var n = 0
        while (n < perBatch) { val k = rnd.nextInt(keys).toLong; s.put(key(k), value(k + b)); n += 1 }
        val t0 = System.nanoTime()
        version = s.commit()
        val ms = (System.nanoTime() - t0) / 1e6
        if (b >= warmUp) times(b - warmUp) = ms
        b += 1
      }
      stop.set(true)
      maintenance.interrupt()
      maintenance.join()
      val walk = Files.walk(root.toPath)
      val snapshots =
        try walk.iterator().asScala.count(_.getFileName.toString.endsWith(".kstate.snapshot"))
        finally walk.close()
      val sorted = times.sorted
      Figures(
        percentile(sorted, 0.5),
        percentile(sorted, 0.99),
        sorted.last,
        times.sum / batches,
        batches,
        snapshots
      )
    } finally {
      stop.set(true)
      p.close()
      JavaUtils.deleteRecursively(root)
    }
  }

  private def json(f: Figures): String =
    f"""{"p50_ms": ${f.p50Ms}%.3f, "p99_ms": ${f.p99Ms}%.3f, "max_ms": ${f.maxMs}%.3f, "mean_ms": ${f.meanMs}%.3f, "batches": ${f.batches}, "snapshot_files_at_end": ${f.snapshots}}"""

  def main(args: Array[String]): Unit = {
    val quick = args.contains("--quick")
    val out = args.sliding(2).collectFirst { case Array("--out", p) => p }
      .getOrElse(if (quick) "bench/results/commit-latency-quick.json" else "bench/results/commit-latency.json")
    val label = args.sliding(2).collectFirst { case Array("--label", l) => l }.getOrElse("current")
    val (keys, perBatch, batches, warmUp) = if (quick) (50000, 2000, 40, 10) else (500000, 5000, 200, 20)
    val loadBefore = loadAverage
    println(s"commit latency ($label): $keys keys, $perBatch updates per batch, $batches batches " +
      s"after $warmUp warm-up, snapshot due every 10 versions, maintenance every 100 ms; load $loadBefore")
    // the third variant writes no snapshot at all: the commit path alone, without a snapshot's
    // work competing for the machine (inside the commit before, on the maintenance thread after)
    val variants = Seq(("heap", "2g", 10), ("rocksdb", "0", 10), ("heap_no_snapshots", "2g", 1000000))
    val figures = variants.map { case (name, heap, every) => name -> run(keys, perBatch, batches, warmUp, heap, every) }
    val loadAfter = loadAverage
    figures.foreach { case (name, f) =>
      println(f"  $name%-17s working copy: commit p50 ${f.p50Ms}%8.2f ms  p99 ${f.p99Ms}%8.2f ms  " +
        f"max ${f.maxMs}%8.2f ms  mean ${f.meanMs}%7.2f ms")
    }
    println(s"  load average (1, 5, 15 min, runnable/total, last pid): before $loadBefore, after $loadAfter")
    val current =
      s"""{"label": "$label", "date_utc": "${java.time.Instant.now().truncatedTo(
          java.time.temporal.ChronoUnit.SECONDS
        )}", "keys": $keys, "updates_per_batch": $perBatch, "batches": $batches,
        |    "warm_up": $warmUp, "min_deltas_for_snapshot": 10, "maintenance_interval_ms": 100,
        |    "loadavg_before": "$loadBefore", "loadavg_after": "$loadAfter",
        |    "heap": ${json(figures.head._2)},
        |    "rocksdb": ${json(figures(1)._2)},
        |    "heap_no_snapshots": ${json(figures(2)._2)}}""".stripMargin
    val beforeFile = Paths.get(out).toAbsolutePath.getParent.resolve("commit-latency-before.json")
    val single = args.contains("--single") // only this run's figures (for the "before" file)
    val before = if (Files.exists(beforeFile) && !quick && !single) {
      val b = new String(Files.readAllBytes(beforeFile), "UTF-8").trim
      println(s"  before (${beforeFile.getFileName}): $b")
      Some(b)
    } else None
    val doc = before match {
      case _ if single => current + "\n"
      case Some(b) => s"""{\n  "before": $b,\n  "after": $current\n}\n"""
      case None => s"""{\n  "after": $current\n}\n"""
    }
    Files.createDirectories(Paths.get(out).toAbsolutePath.getParent)
    Files.write(Paths.get(out), doc.getBytes("UTF-8"))
    println(s"wrote $out")
  }
}
