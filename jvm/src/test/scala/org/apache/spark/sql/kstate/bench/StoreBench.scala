package org.apache.spark.sql.kstate.bench

import java.io.File
import java.nio.ByteBuffer
import java.nio.file.{Files, Paths}

import org.apache.hadoop.conf.Configuration
import org.rocksdb.{Options, RocksDB, WriteOptions}

import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.kstate.operatorstate.VersionedKeyValueStore
import org.apache.spark.sql.kstate.provider.{KStateStore, KStateStoreProvider}
import org.apache.spark.sql.types._
import org.apache.spark.network.util.JavaUtils

/**
 * Store-level benchmarks of issue 3, run by `make bench` (`bin/sbt "Test/runMain ..."`):
 *
 *  1. restore: 1M keys written in 10 versions (snapshot at version 5, changelogs after it), then
 *     the time a fresh provider takes to open the latest version — kstate's provider vs Spark's
 *     RocksDB provider with changelog checkpointing, same rows;
 *  2. versioned store: puts and as-of gets per second vs raw RocksDB puts and gets of the same
 *     bytes through the same JNI (the floor; the goal's pair runs once untimed to warm up, then
 *     alternately, medians of the repetitions), in three shapes: one micro-batch (store version)
 *     per round of puts with the working copy on the heap (an operator's shape; heap state
 *     budget 2g), the same with the working copy in RocksDB (budget 0), and every round in one
 *     micro-batch with the default limits (the version outgrows the write-set limit and spills to
 *     RocksDB as it goes).
 *
 * Prints a table and writes `bench/results/store.json`. Args: `[--quick] [--out PATH]
 * [--only versioned]` (the last for profiling: prints, writes nothing).
 */
object StoreBench {
  import BenchRows._

  private def conf(extra: (String, String)*): StateStoreConf = {
    val sql = new SQLConf
    sql.setConfString("spark.sql.streaming.stateStore.minDeltasForSnapshot", "5")
    sql.setConfString("spark.sql.streaming.minBatchesToRetain", "100")
    sql.setConfString("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
    extra.foreach { case (k, v) => sql.setConfString(k, v) }
    new StateStoreConf(sql)
  }

  private def provider(cls: String, root: String, extra: Map[String, String] = Map.empty): StateStoreProvider = {
    val sql = new SQLConf
    conf().sqlConfs.foreach { case (k, v) => sql.setConfString(k, v) }
    extra.foreach { case (k, v) => sql.setConfString(k, v) }
    sql.setConfString(SQLConf.STATE_STORE_PROVIDER_CLASS.key, cls)
    // createAndInit also records a query run id, which Spark's RocksDB provider requires.
    StateStoreProvider.createAndInit(
      StateStoreProviderId(StateStoreId(root, 0, 0), java.util.UUID.randomUUID()),
      keySchema,
      valueSchema,
      NoPrefixKeyStateEncoderSpec(keySchema),
      false,
      new StateStoreConf(sql),
      new Configuration,
      false,
      None
    )
  }

  private def timed[T](f: => T): (T, Double) = {
    val t0 = System.nanoTime(); val r = f; (r, (System.nanoTime() - t0) / 1e9)
  }

  private val threads = java.lang.management.ManagementFactory.getThreadMXBean

  /** The last [[restoreRun]]'s restore: CPU seconds of the restoring thread, snapshot it started from. */
  private var lastRestoreCpuS = 0.0
  private var lastRestoreSnapshot = -1L

  /** Writes `keys` keys in `versions` versions; returns (write s, restore s, restored numKeys). */
  private def restoreRun(
      cls: String,
      keys: Int,
      versions: Int,
      extra: Map[String, String] = Map.empty
  ): (Double, Double, Long) = {
    val root = Files.createTempDirectory("kstate-bench-restore").toFile
    try {
      val perVersion = keys / versions
      val p = provider(cls, root.getAbsolutePath, extra)
      val (_, writeS) = timed {
        for (v <- 0 until versions) {
          val s = p.getStore(v)
          var i = v.toLong * perVersion
          while (i < (v + 1).toLong * perVersion) { s.put(key(i), value(i)); i += 1 }
          s.commit()
          if (v + 1 == versions / 2) p.doMaintenance() // Spark's RocksDB uploads snapshots here
        }
        p.doMaintenance()
      }
      p.close()
      val q = provider(cls, root.getAbsolutePath, extra)
      val cpu0 = threads.getCurrentThreadCpuTime
      val (n, restoreS) = timed {
        val s = q.getStore(versions)
        val n = s.iterator().size.toLong // forces the restored state to be readable end to end
        s.abort(); n
      }
      lastRestoreCpuS = (threads.getCurrentThreadCpuTime - cpu0) / 1e9
      lastRestoreSnapshot = q match {
        case k: KStateStoreProvider => k.lastRestore.flatMap(_.snapshotVersion).getOrElse(-1L)
        case _ => -1L
      }
      q.close()
      (writeS, restoreS, n)
    } finally JavaUtils.deleteRecursively(root)
  }

  /**
   * `rounds` rounds of one put per key (timestamps rising by round), committed after every round
   * (`batchPerRound`) or once at the end; then as-of gets. Returns (puts/s, gets/s).
   */
  private def versionedRun(keys: Int, rounds: Int, batchPerRound: Boolean, heapState: String)
      : (Double, Double) = {
    val root = Files.createTempDirectory("kstate-bench-vs").toFile
    try {
      val p = new KStateStoreProvider
      p.init(
        StateStoreId(root.getAbsolutePath, 0, 0),
        keySchema,
        valueSchema,
        NoPrefixKeyStateEncoderSpec(keySchema),
        useColumnFamilies = true,
        // As kstate's operators open their stores: no row counting (they count entries themselves).
        conf(
          "spark.sql.streaming.stateStore.minDeltasForSnapshot" -> "1000",
          KStateStoreProvider.TrackRowsKey -> "false",
          org.apache.spark.sql.kstate.config.KStateConf.HeapStateBytes.key -> heapState
        ),
        new Configuration,
        useMultipleValuesPerKey = false,
        None
      )
      val v = new Array[Byte](48)
      var version = 0L
      val (_, putS) = timed {
        var s: KStateStore = p.getStore(version)
        var vs = new VersionedKeyValueStore(s, "bench", 1000000L, 1000000L)
        var r = 0
        while (r < rounds) {
          var i = 0
          while (i < keys) { vs.put(longBytes(i), v, r * 1000L + (i % 1000)); i += 1 }
          r += 1
          if (batchPerRound || r == rounds) {
            version = s.commit()
            if (r < rounds) {
              s = p.getStore(version)
              vs = new VersionedKeyValueStore(s, "bench", 1000000L, 1000000L)
            }
          }
        }
      }
      val s2 = p.getStore(version)
      val vs2 = new VersionedKeyValueStore(s2, "bench", 1000000L, 1000000L)
      val (_, getS) = timed {
        var i = 0
        while (i < keys * rounds) { vs2.get(longBytes(i % keys), (i % rounds) * 1000L + 500); i += 1 }
      }
      p.close()
      ((keys.toLong * rounds) / putS, (keys.toLong * rounds) / getS)
    } finally JavaUtils.deleteRecursively(root)
  }

  /** The floor: raw RocksDB puts/gets of the same number of entries and value size. */
  private def rawRun(keys: Int, rounds: Int): (Double, Double) = {
    RocksDB.loadLibrary()
    val root = Files.createTempDirectory("kstate-bench-raw").toFile
    val opts = new Options().setCreateIfMissing(true)
    val wo = new WriteOptions().setDisableWAL(true)
    val db = RocksDB.open(opts, root.getAbsolutePath)
    try {
      val v = new Array[Byte](48)
      val (_, putS) = timed {
        var r = 0
        while (r < rounds) {
          var i = 0
          while (i < keys) { db.put(wo, versionKey(i, r), v); i += 1 }
          r += 1
        }
      }
      val (_, getS) = timed {
        var i = 0
        while (i < keys * rounds) { db.get(versionKey(i % keys, i % rounds)); i += 1 }
      }
      ((keys.toLong * rounds) / putS, (keys.toLong * rounds) / getS)
    } finally {
      db.close(); wo.close(); opts.close(); JavaUtils.deleteRecursively(root)
    }
  }

  /**
   * The goal's pair (heap copy, batch per round, vs the raw floor): one untimed warm-up run of
   * each (JIT), then `reps` runs of each, alternating which goes first. Returns
   * ((puts/s, gets/s) of kstate, (puts/s, gets/s) raw) per repetition.
   */
  private def versionedGoal(keys: Int, rounds: Int, reps: Int): Seq[((Double, Double), (Double, Double))] = {
    versionedRun(keys, rounds, batchPerRound = true, heapState = "2g"); rawRun(keys, rounds)
    (0 until reps).map { r =>
      if (r % 2 == 0) {
        val v = versionedRun(keys, rounds, batchPerRound = true, heapState = "2g"); (v, rawRun(keys, rounds))
      } else {
        val raw = rawRun(keys, rounds); (versionedRun(keys, rounds, batchPerRound = true, heapState = "2g"), raw)
      }
    }
  }

  private def median(xs: Seq[Double]): Double = xs.sorted.apply(xs.size / 2)

  private def longBytes(i: Long): Array[Byte] = ByteBuffer.allocate(8).putLong(i).array()
  private def versionKey(i: Long, r: Int): Array[Byte] = ByteBuffer.allocate(16).putLong(i).putLong(r).array()

  def main(args: Array[String]): Unit = {
    val quick = args.contains("--quick")
    val out = args.sliding(2).collectFirst { case Array("--out", p) => p }
      .getOrElse(if (quick) "bench/results/store-quick.json" else "bench/results/store.json")
    val keys = if (quick) 100000 else 1000000
    val kstate = "io.kstate.KStateStoreProvider"
    val rocks = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

    val reps = if (quick) 1 else 3
    val (vk, vr) = if (quick) (20000, 5) else (100000, 10)
    if (args.sliding(2).exists(_.sameElements(Seq("--only", "restore")))) {
      // the restore figure alone, kstate's heap working copy, for before/after comparisons
      // the restoring thread's CPU time as well: less disturbed than wall time by other load
      // --keys N: another state size (default 1M)
      val n = args.sliding(2).collectFirst { case Array("--keys", k) => k.toInt }.getOrElse(keys)
      val reps = args.sliding(2).collectFirst { case Array("--reps", k) => k.toInt }.getOrElse(8)
      val runs = (1 to reps).map { _ =>
        val r = restoreRun(kstate, n, 10); (r._1, r._2, lastRestoreCpuS, lastRestoreSnapshot)
      }
      println(s"restore only, kstate heap copy, $n keys: write s ${runs.map(r => f"${r._1}%.2f").mkString("/")}; " +
        s"restore s ${runs.map(r => f"${r._2}%.3f").mkString("/")}; " +
        s"restore thread cpu s ${runs.map(r => f"${r._3}%.3f").mkString("/")}; " +
        s"from snapshot ${runs.map(_._4).mkString("/")}")
      return
    }
    if (args.sliding(2).exists(_.sameElements(Seq("--only", "versioned")))) {
      val pairs = versionedGoal(vk, vr, reps)
      println(s"heap copy puts/s per run: ${pairs.map(p => f"${p._1._1 / 1000}%.1fk").mkString("/")}; " +
        s"raw RocksDB puts/s: ${pairs.map(p => f"${p._2._1 / 1000}%.1fk").mkString("/")}")
      println(
        f"medians: puts ${median(pairs.map(_._1._1)) / 1000}%.1fk vs ${median(pairs.map(_._2._1)) / 1000}%.1fk, " +
          f"as-of gets ${median(pairs.map(_._1._2)) / 1000}%.1fk vs ${median(pairs.map(_._2._2)) / 1000}%.1fk"
      )
      return
    }
    println(s"restore: $keys keys in 10 versions (snapshot at 5, changelogs 6..10), " +
      s"median of $reps runs, order alternating")
    // kstate's provider twice: working copy on the heap (default) and in RocksDB (budget 0)
    val kstateDb = "kstate, RocksDB working copy"
    def run(variant: String) =
      if (variant == kstateDb)
        restoreRun(kstate, keys, 10, Map(org.apache.spark.sql.kstate.config.KStateConf.HeapStateBytes.key -> "0"))
      else restoreRun(variant, keys, 10)
    val runs = (0 until reps).map { r =>
      val order = if (r % 2 == 0) Seq(kstate, kstateDb, rocks) else Seq(rocks, kstateDb, kstate)
      order.map(v => v -> run(v)).toMap
    }
    runs.foreach(m => require(m.values.forall(_._3 == keys), s"restored key counts: $m"))
    val (kw, kr) = (median(runs.map(_(kstate)._1)), median(runs.map(_(kstate)._2)))
    val (dw, dr) = (median(runs.map(_(kstateDb)._1)), median(runs.map(_(kstateDb)._2)))
    val (rw, rr) = (median(runs.map(_(rocks)._1)), median(runs.map(_(rocks)._2)))
    println(s"  restore seconds per run: kstate ${runs.map(m => f"${m(kstate)._2}%.2f").mkString("/")}, " +
      s"kstate RocksDB copy ${runs.map(m => f"${m(kstateDb)._2}%.2f").mkString("/")}, " +
      s"RocksDB ${runs.map(m => f"${m(rocks)._2}%.2f").mkString("/")}")
    println(f"  kstate provider : write $kw%7.2f s, restore $kr%6.2f s (heap working copy)")
    println(f"  same, RocksDB   : write $dw%7.2f s, restore $dr%6.2f s (working copy in RocksDB)")
    println(f"  Spark RocksDB   : write $rw%7.2f s, restore $rr%6.2f s")
    println(f"  restore speed-up kstate vs RocksDB: ${rr / kr}%.2fx")

    println(s"versioned store: $vk keys x $vr versions, then as-of gets")
    val pairs = versionedGoal(vk, vr, reps)
    println(s"  heap copy puts/s per run: ${pairs.map(p => f"${p._1._1 / 1000}%.1fk").mkString("/")}; " +
      s"raw RocksDB puts/s: ${pairs.map(p => f"${p._2._1 / 1000}%.1fk").mkString("/")}")
    val (vPut, vGet) = (median(pairs.map(_._1._1)), median(pairs.map(_._1._2)))
    val (rPut, rGet) = (median(pairs.map(_._2._1)), median(pairs.map(_._2._2)))
    val (dPut, dGet) = versionedRun(vk, vr, batchPerRound = true, heapState = "0")
    val (oPut, oGet) = versionedRun(
      vk,
      vr,
      batchPerRound = false,
      heapState = org.apache.spark.sql.kstate.engine.HeapStateBudget.defaultLimit.toString
    )
    println(f"  batch per round, heap copy    : ${vPut / 1000}%8.1fk puts/s  ${vGet / 1000}%8.1fk as-of gets/s")
    println(f"  batch per round, RocksDB copy : ${dPut / 1000}%8.1fk puts/s  ${dGet / 1000}%8.1fk as-of gets/s")
    println(f"  all in one batch (spills)     : ${oPut / 1000}%8.1fk puts/s  ${oGet / 1000}%8.1fk as-of gets/s")
    println(f"  raw RocksDB                   : ${rPut / 1000}%8.1fk puts/s  ${rGet / 1000}%8.1fk gets/s")
    println(f"  ratio to floor (batch per round, heap; medians of $reps): puts ${rPut / vPut}%.2fx slower, " +
      f"gets ${rGet / vGet}%.2fx slower (goal <= 2x)")

    val json =
      s"""{
        |  "quick": $quick, "date_utc": "${java.time.Instant.now().truncatedTo(java.time.temporal.ChronoUnit.SECONDS)}",
        |  "restore": {"keys": $keys, "versions": 10, "snapshot_version": 5, "reps": $reps,
        |    "kstate_restore_s_reps": [${runs.map(_(kstate)._2).mkString(", ")}],
        |    "rocksdb_restore_s_reps": [${runs.map(_(rocks)._2).mkString(", ")}],
        |    "kstate": {"write_s": $kw, "restore_s": $kr},
        |    "kstate_rocksdb_copy": {"write_s": $dw, "restore_s": $dr},
        |    "rocksdb": {"write_s": $rw, "restore_s": $rr},
        |    "restore_speedup_kstate_vs_rocksdb": ${rr / kr}},
        |  "versioned": {"keys": $vk, "versions_per_key": $vr, "reps": $reps,
        |    "kstate_puts_per_s_reps": [${pairs.map(_._1._1).mkString(", ")}],
        |    "raw_rocksdb_puts_per_s_reps": [${pairs.map(_._2._1).mkString(", ")}],
        |    "kstate_puts_per_s": $vPut, "kstate_asof_gets_per_s": $vGet,
        |    "kstate_rocksdb_copy_puts_per_s": $dPut, "kstate_rocksdb_copy_asof_gets_per_s": $dGet,
        |    "kstate_one_batch_puts_per_s": $oPut, "kstate_one_batch_asof_gets_per_s": $oGet,
        |    "raw_rocksdb_puts_per_s": $rPut, "raw_rocksdb_gets_per_s": $rGet,
        |    "put_slowdown_vs_floor": ${rPut / vPut}, "get_slowdown_vs_floor": ${rGet / vGet}, "goal_max_slowdown": 2.0}
        |}
        |""".stripMargin
    Files.createDirectories(Paths.get(out).toAbsolutePath.getParent)
    Files.write(Paths.get(out), json.getBytes("UTF-8"))
    println(s"wrote $out")
  }
}
