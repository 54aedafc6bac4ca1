"""Processing order on catch-up micro-batches, as a benchmark.

Input: FILES parquet files of different sizes (Spark packs the largest first), file i holding
event times in its own span [i*span, (i+1)*span) in random order (disorder below the grace), keys
from a key space of KEYS. Query: windowed count per key (30-minute windows, 1-minute grace, the
issue's) suppressed until the windows close.

Runs, all in one Spark session on the same files, each one micro-batch per trigger setting:
  * kstate, default order (auto = event time for files), 1 file per trigger and all files at once:
    same final windows? late records? throughput;
  * kstate, task order, all files at once: what a catch-up batch did before the fix;
  * Spark's append-mode windowed count (watermark = grace), all files at once: the built-in it
    competes with, same input; ratio kstate / Spark.
Then kstate's deduplicate_by_key (1-minute interval) on all files in one micro-batch, once in this
session and once in a child process with a 512 MB driver (the previous in-heap ordering ended in
OutOfMemoryError there): same rows forwarded? peak heap (sum of the heap pools' peaks, an upper
bound), bytes the ordering spilled, throughput. (Dedup, because it streams its output and keeps
its state in the store; a windowed aggregation's final results of one micro-batch are collected
on the heap at the end of the batch, see docs/windows.md.)

Prints the figures and writes results/order.json (--quick: results/order-quick.json).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

MINUTE = 60_000
WINDOW_MS, GRACE_MS = 30 * MINUTE, MINUTE


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="500k events, 20 files")
    p.add_argument("--events", type=int, default=None, help="events in all (default 5M)")
    p.add_argument("--files", type=int, default=None, help="files (default 50)")
    p.add_argument("--keys", type=int, default=None, help="key space (default 1M)")
    p.add_argument("--small-heap", default="512m", help="driver memory of the bounded-heap run")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    a.events = a.events or (500_000 if a.quick else 5_000_000)
    a.files = a.files or (20 if a.quick else 50)
    a.keys = a.keys or (100_000 if a.quick else 1_000_000)
    return a


def session(driver_memory: str, partitions: int = 4):
    import kstate
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    s = (
        kstate.configure(SparkSession.builder.master("local[2]").appName("kstate-bench-order"))
        .config("spark.driver.memory", driver_memory)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(partitions))
        .config("spark.sql.streaming.numRecentProgressUpdates", "10000")
        .getOrCreate()
    )
    s.sparkContext.setLogLevel("WARN")
    return s


def generate(spark, src: str, a: argparse.Namespace) -> None:
    """FILES parquet files in src, sizes varying 0.5x..1.5x, increasing modification times."""
    from pyspark.sql import functions as F

    os.makedirs(src, exist_ok=True)
    span = 2 * MINUTE  # a file spans 2 minutes of event time: well within one 30-minute window
    sizes = [int(a.events / a.files * (0.5 + ((i * 7919) % 101) / 100)) for i in range(a.files)]
    first = 0
    for i, n in enumerate(sizes):
        tmp = src + f"_tmp{i}"
        (
            spark.range(first, first + n, numPartitions=1)
            .select(
                F.col("id").alias("seq"),
                (F.abs(F.hash(F.col("id"), F.lit(1))) % a.keys).cast("string").alias("k"),
                (F.lit(i * span) + F.abs(F.hash(F.col("id"), F.lit(2))) % span).alias("ts"),
            )
            .write.parquet(tmp)
        )
        part = [f for f in os.listdir(tmp) if f.endswith(".parquet")][0]
        dst = os.path.join(src, f"part-{i:05d}.parquet")
        shutil.move(os.path.join(tmp, part), dst)
        os.utime(dst, (1_700_000_000 + i, 1_700_000_000 + i))
        shutil.rmtree(tmp)
        first += n


def run(spark, src: str, ckpt: str, kind: str, max_files: Optional[int], order: str = "auto") -> Dict[str, Any]:
    from kstate import BufferConfig, Suppressed, TimeWindows
    from pyspark.sql import functions as F

    spark.conf.set("spark.kstate.processingOrder", order)
    reader = spark.readStream.schema("seq LONG, k STRING, ts LONG")
    if max_files:
        reader = reader.option("maxFilesPerTrigger", max_files)
    df = reader.parquet(src)
    if kind == "dedup":
        out = df.kstate.deduplicate_by_key(GRACE_MS, key="k", timestamp="ts")
    elif kind == "kstate":
        out = (
            df.kstate.windowed_by(TimeWindows.of_size(WINDOW_MS).grace(GRACE_MS), key="k", timestamp="ts")
            .count()
            .kstate.suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
        )
    else:
        t = df.withColumn("t", F.timestamp_millis("ts")).withWatermark("t", f"{GRACE_MS // 1000} seconds")
        out = t.groupBy(F.window("t", f"{WINDOW_MS // 1000} seconds"), "k").count()
    counts: List[int] = []
    q = (
        out.writeStream.outputMode("append")
        .option("checkpointLocation", ckpt)
        .foreachBatch(lambda b, _: counts.append(b.count()))
        .start()
    )
    start = time.monotonic()
    try:
        q.processAllAvailable()
        wall = time.monotonic() - start
        prog = q.recentProgress
    finally:
        q.stop()
    custom: Dict[str, int] = {}
    rows = 0
    for p in prog:
        rows += p.get("numInputRows", 0)
        for op in p.get("stateOperators", []):
            for k2, v in (op.get("customMetrics") or {}).items():
                custom[k2] = custom.get(k2, 0) + v
    return dict(
        kind=kind,
        order=order,
        max_files=max_files,
        wall_s=round(wall, 2),
        input_rows=rows,
        rows_per_s=round(rows / wall),
        output_rows=sum(counts),
        late_dropped=custom.get("lateRecordsDropped", 0),
        input_spilled_bytes=custom.get("inputSpilledBytes", 0),
    )


def child(a: argparse.Namespace) -> None:
    """The bounded-heap run (in its own JVM): prints one JSON line."""
    src, ckpt = a.child.split(",")
    spark = session(a.small_heap)
    r = run(spark, src, ckpt, "dedup", None)
    jvm = spark.sparkContext._jvm
    peak, pools = 0, {}
    for pool in jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans():
        if str(pool.getType()) == "Heap memory":
            peak += pool.getPeakUsage().getUsed()
            pools[str(pool.getName())] = round(pool.getPeakUsage().getUsed() / 2**20)
    r["heap_pool_peaks_mb"] = pools
    r["heap_max_mb"] = round(jvm.java.lang.Runtime.getRuntime().maxMemory() / 2**20)
    r["heap_peak_pools_mb"] = round(peak / 2**20)
    print("RESULT " + json.dumps(r), flush=True)
    spark.stop()


def main() -> int:
    a = parse_args()
    if a.child:
        child(a)
        return 0
    work = tempfile.mkdtemp(prefix="kstate-order-bench-")
    src = os.path.join(work, "src")
    spark = session("6g")
    t0 = time.monotonic()
    generate(spark, src, a)
    print(f"input: {a.events:,} events, {a.files} files, {a.keys:,} keys ({time.monotonic() - t0:.0f} s)", flush=True)
    runs = {}
    plan = [
        ("kstate_auto_1", "kstate", 1, "auto"),
        ("kstate_auto_all", "kstate", None, "auto"),
        ("kstate_task_all", "kstate", None, "task"),
        ("spark_all", "spark", None, "auto"),
        ("dedup_auto_all", "dedup", None, "auto"),
    ]
    for name, kind, mf, order in plan:
        runs[name] = run(spark, src, os.path.join(work, "ckpt-" + name), kind, mf, order)
        print(name, runs[name], flush=True)
    spark.stop()
    proc = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            f"{src},{os.path.join(work, 'ckpt-small')}",
            "--small-heap",
            a.small_heap,
        ],
        capture_output=True,
        text=True,
    )
    small = next((json.loads(line[7:]) for line in proc.stdout.splitlines() if line.startswith("RESULT ")), None)
    if small is None:
        small = {"error": (proc.stderr or proc.stdout)[-2000:]}
    print("small_heap", small, flush=True)
    shutil.rmtree(work, ignore_errors=True)

    ka, k1, kt, sp = runs["kstate_auto_all"], runs["kstate_auto_1"], runs["kstate_task_all"], runs["spark_all"]
    same = ka["output_rows"] == k1["output_rows"] and ka["late_dropped"] == 0 == k1["late_dropped"]
    ratio = ka["rows_per_s"] / sp["rows_per_s"] if sp["rows_per_s"] else None
    print(
        f"\ncatch-up batch, default order: {ka['output_rows']:,} final windows, {ka['late_dropped']:,} late "
        f"(1 file per trigger: {k1['output_rows']:,}, {k1['late_dropped']:,} late): "
        f"{'identical' if same else 'DIFFERENT'}"
    )
    print(f"catch-up batch, task order:    {kt['output_rows']:,} final windows, {kt['late_dropped']:,} late")
    print(
        f"throughput, one catch-up batch: kstate {ka['rows_per_s']:,} rows/s, Spark {sp['rows_per_s']:,} rows/s"
        f" -> kstate/Spark {ratio:.2f}x"
        if ratio
        else ""
    )
    dd = runs["dedup_auto_all"]
    if "heap_peak_pools_mb" in small:
        print(
            f"bounded heap (dedup): {small['input_rows']:,} rows in one micro-batch with a {small['heap_max_mb']} MB "
            f"heap, peak <= {small['heap_peak_pools_mb']} MB, {small['input_spilled_bytes'] / 2**20:.0f} MB spilled "
            f"while ordering, {small['rows_per_s']:,} rows/s, {small['output_rows']:,} rows forwarded "
            f"(6 GB heap: {dd['output_rows']:,}, {dd['rows_per_s']:,} rows/s)"
        )
    result = dict(
        date_utc=time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
        events=a.events,
        files=a.files,
        keys=a.keys,
        runs=runs,
        small_heap=small,
        identical_across_triggers=same,
        kstate_vs_spark=round(ratio, 3) if ratio else None,
    )
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    out = os.path.join(HERE, "results", "order-quick.json" if a.quick else "order.json")
    with open(out, "w") as f:
        json.dump(result, f, indent=2)
    print("wrote", out)
    ok = same and "heap_peak_pools_mb" in small and small.get("output_rows") == dd["output_rows"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
