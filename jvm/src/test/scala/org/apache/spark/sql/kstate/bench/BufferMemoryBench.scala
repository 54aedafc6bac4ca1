package org.apache.spark.sql.kstate.bench

import java.lang.management.ManagementFactory
import java.nio.ByteBuffer
import java.nio.file.{Files, Paths}

import io.kstate.suppress.WhenFull
import org.apache.hadoop.conf.Configuration

import org.apache.spark.network.util.JavaUtils
import org.apache.spark.sql.execution.streaming.state.{NoPrefixKeyStateEncoderSpec, StateStoreConf, StateStoreId}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.kstate.provider.{KStateStore, KStateStoreProvider}
import org.apache.spark.sql.kstate.processor.suppress.BufferLimits
import org.apache.spark.sql.kstate.operatorstate.TimeOrderedBuffer
import org.apache.spark.sql.types.{LongType, StructField, StructType}

/**
 * Heap of the time-ordered buffer (issue 3's memory requirement), run by `make bench`:
 * a buffer with `max_bytes` = M takes 10x more keys than M holds, in one micro-batch, then a
 * second micro-batch evicts them all. Retained heap (after a full GC, minus the baseline taken
 * with the store open) is sampled every 1/50 of the puts and evictions; times come from a
 * separate run of the same input without sampling (full GCs would dominate them).
 *
 *  - spill: `spill_to_disk_when_full` with max_bytes = M (the bound under test);
 *  - heap: the same input with no heap bound, everything kept in the batch's write set (what a
 *    store without spilling needs; the reference the spill mode competes with).
 *
 * Prints both, the peak-to-M ratio and the time ratio, and writes
 * `bench/results/buffer-memory.json`. Args: `[--quick] [--out PATH]`.
 */
object BufferMemoryBench {
  private val schema = StructType(Seq(StructField("x", LongType)))
  private val mem = ManagementFactory.getMemoryMXBean

  private def usedHeap(): Long = {
    System.gc(); System.gc()
    mem.getHeapMemoryUsage.getUsed
  }

  final case class Run(
      mode: String,
      putSeconds: Double,
      evictSeconds: Double,
      peakPutBytes: Long,
      peakEvictBytes: Long,
      writeSetEstimateMax: Long,
      spills: Long,
      records: Long,
      recordBytes: Long
  )

  private def run(mode: String, maxBytes: Long, keys: Int, valueBytes: Int, sample: Boolean): Run = {
    val root = Files.createTempDirectory("kstate-bench-buffer").toFile
    try {
      val sql = new SQLConf
      sql.setConfString(KStateStoreProvider.TrackRowsKey, "false") // as kstate operators open stores
      sql.setConfString("spark.sql.streaming.stateStore.minDeltasForSnapshot", "1000")
      // The heap mode must not spill at all: a write-set limit above anything it can reach.
      if (mode == "heap") sql.setConfString("spark.sql.streaming.stateStore.kstate.maxWriteSetBytes", "1t")
      val p = new KStateStoreProvider
      p.init(
        StateStoreId(root.getAbsolutePath, 0, 0),
        schema,
        schema,
        NoPrefixKeyStateEncoderSpec(schema),
        useColumnFamilies = true,
        new StateStoreConf(sql),
        new Configuration,
        useMultipleValuesPerKey = false,
        None
      )
      val limits =
        if (mode == "spill") BufferLimits(maxBytes = maxBytes, whenFull = WhenFull.SpillToDisk)
        else BufferLimits()
      val value = Array.fill[Byte](valueBytes)(7)
      val every = if (sample) math.max(1, keys / 50) else Int.MaxValue

      val s0: KStateStore = p.getStore(0)
      val buf = new TimeOrderedBuffer(s0, "bench", limits)
      val base = usedHeap()
      var peakPut = 0L
      var estimateMax = 0L
      val t0 = System.nanoTime()
      var i = 0
      while (i < keys) {
        val k = ByteBuffer.allocate(16).putLong(i.toLong * 2654435761L).putLong(i).array()
        buf.put(k, value.clone(), i, i)
        buf.enforceLimits(_ => throw new IllegalStateException("strict buffer emitted early"))
        estimateMax = math.max(estimateMax, s0.changes.heapBytes)
        i += 1
        if (i % every == 0) peakPut = math.max(peakPut, usedHeap() - base)
      }
      val records = buf.numRecords
      val bytes = buf.numBytes
      s0.commit()
      val spills = s0.counters.spills
      val putS = (System.nanoTime() - t0) / 1e9

      val s1 = p.getStore(1)
      val drain = new TimeOrderedBuffer(s1, "bench", limits)
      val base1 = usedHeap()
      var peakEvict = 0L
      var evicted = 0L
      val t1 = System.nanoTime()
      drain.evictUpTo(Long.MaxValue) { _ =>
        evicted += 1
        if (evicted % every == 0) peakEvict = math.max(peakEvict, usedHeap() - base1)
      }
      s1.commit()
      val evictS = (System.nanoTime() - t1) / 1e9
      require(evicted == keys && records == keys, s"$mode: buffered $records, evicted $evicted of $keys")
      p.close()
      Run(mode, putS, evictS, peakPut, peakEvict, estimateMax, spills, records, bytes)
    } finally JavaUtils.deleteRecursively(root)
  }

  def main(args: Array[String]): Unit = {
    val quick = args.contains("--quick")
    val out = args.sliding(2).collectFirst { case Array("--out", p) => p }
      .getOrElse(if (quick) "bench/results/buffer-memory-quick.json" else "bench/results/buffer-memory.json")
    val maxBytes = if (quick) (2L << 20) else (8L << 20)
    val valueBytes = 100
    val perRecord = TimeOrderedBuffer.recordBytes(16, valueBytes)
    val fit = (maxBytes / perRecord).toInt
    val keys = 10 * fit
    def mb(b: Long) = f"${b / 1048576.0}%.1f MB"
    println(s"time-ordered buffer heap: max_bytes ${mb(maxBytes)} (fits $fit records of " +
      s"$perRecord bytes), buffering $keys keys (10x), then evicting all; " +
      s"JVM max heap ${mb(Runtime.getRuntime.maxMemory)}")
    // Heap mode first, so the spill run cannot benefit from a heap the other one grew.
    val timedHeap = run("heap", maxBytes, keys, valueBytes, sample = false)
    val timedSpill = run("spill", maxBytes, keys, valueBytes, sample = false)
    val heap = run("heap", maxBytes, keys, valueBytes, sample = true)
      .copy(putSeconds = timedHeap.putSeconds, evictSeconds = timedHeap.evictSeconds)
    val spill = run("spill", maxBytes, keys, valueBytes, sample = true)
      .copy(putSeconds = timedSpill.putSeconds, evictSeconds = timedSpill.evictSeconds)
    for (r <- Seq(spill, heap)) {
      println(f"  ${r.mode}%-5s: buffered ${r.records} records = ${mb(r.recordBytes)}; peak retained " +
        f"heap over baseline: puts ${mb(r.peakPutBytes)}, evictions ${mb(r.peakEvictBytes)}; " +
        f"write-set estimate max ${mb(r.writeSetEstimateMax)}; spills ${r.spills}; " +
        f"put ${r.putSeconds}%.2f s (${r.records / r.putSeconds / 1000}%.0fk/s), " +
        f"evict ${r.evictSeconds}%.2f s (${r.records / r.evictSeconds / 1000}%.0fk/s)")
    }
    val peak = math.max(spill.peakPutBytes, spill.peakEvictBytes)
    println(f"  spill peak / max_bytes: ${peak.toDouble / maxBytes}%.2f (bound: max_bytes + constant)")
    println(f"  heap  peak / max_bytes: ${math.max(heap.peakPutBytes, heap.peakEvictBytes).toDouble / maxBytes}%.2f")
    println(
      f"  spill / heap time: ${(spill.putSeconds + spill.evictSeconds) / (heap.putSeconds + heap.evictSeconds)}%.2fx"
    )

    def js(r: Run) =
      s"""{"put_s": ${r.putSeconds}, "evict_s": ${r.evictSeconds}, "peak_put_heap_bytes": ${r.peakPutBytes},
        |    "peak_evict_heap_bytes": ${r.peakEvictBytes}, "write_set_estimate_max_bytes": ${r.writeSetEstimateMax},
        |    "spills": ${r.spills}, "records": ${r.records}, "record_bytes": ${r.recordBytes}}""".stripMargin
    val json =
      s"""{
        |  "quick": $quick, "date_utc": "${java.time.Instant.now().truncatedTo(java.time.temporal.ChronoUnit.SECONDS)}",
        |  "max_bytes": $maxBytes, "keys": $keys, "keys_that_fit": $fit,
        |  "jvm_max_heap_bytes": ${Runtime.getRuntime.maxMemory},
        |  "spill": ${js(spill)},
        |  "heap": ${js(heap)},
        |  "spill_peak_over_max_bytes": ${peak.toDouble / maxBytes},
        |  "spill_vs_heap_time": ${(spill.putSeconds + spill.evictSeconds) / (heap.putSeconds + heap.evictSeconds)}
        |}
        |""".stripMargin
    Files.createDirectories(Paths.get(out).toAbsolutePath.getParent)
    Files.write(Paths.get(out), json.getBytes("UTF-8"))
    println(s"wrote $out")
  }
}
