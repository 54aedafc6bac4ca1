#!/usr/bin/env python3
"""Windowed count with final results: kstate vs Spark, same input, same run.

* ``spark``: Spark's windowed count in append mode, ``withWatermark(ts, grace)`` +
  ``groupBy(window(ts, size), key).count()``: one row per window once the watermark passes its
  end (Spark's provider setting as the session has it: HDFS by default);
* ``kstate``: ``windowed_by(TimeWindows.of_size(size).grace(grace)).count()`` +
  ``suppress(until_window_closes(unbounded))``: one row per window once stream time passes its
  end + grace (kstate's provider).

The input has bounded disorder below the grace period and no late rows, so neither drops a
record and both must give the same final counts. They emit at different times (Spark's
watermark is global and applies one micro-batch later; kstate's stream time is per partition),
so the check compares every window that both have surely closed by the end: window end <= max
event time - grace - one window. Timed runs write to the noop sink; a separate untimed pass per
variant digests the output (``--no-verify`` skips it).

    PYTHONPATH=python .venv/bin/python bench/windows.py [--quick] [--reps N]

Prints both throughputs and their ratio (goal >= 1.5x) and writes ``bench/results/windows.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from typing import Any, Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import (  # noqa: E402
    RESULTS,
    ROOT,
    SCHEMA,
    TMP,
    CpuMeter,
    add_input_args,
    add_spark_args,
    describe_input,
    finish_args,
    generate,
    start_spark,
    unload_state_stores,
    wait_for_jar,
)

GOAL = 1.5
VARIANTS = ("spark", "kstate")


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="small input, 1 repetition")
    add_input_args(p)
    add_spark_args(p)
    p.add_argument("--window", type=int, default=10, help="window size, seconds")
    p.add_argument("--reps", type=int, default=None, help="timed repetitions per variant (default 3; --quick 1)")
    p.add_argument("--warmup-files", type=int, default=None)
    p.add_argument("--warmup-rows", type=int, default=None)
    p.add_argument("--no-verify", action="store_true", help="skip the untimed output check")
    p.add_argument("--out", default=None, help="results file without extension")
    p.add_argument("--no-save", action="store_true")
    p.set_defaults(late_rate=0.0)  # no record later than the grace period: nothing is dropped
    a = p.parse_args(argv)
    finish_args(p, a)
    if a.max_disorder >= a.interval:
        p.error("--max-disorder must stay below --interval (the grace): the check needs no drops")
    a.out = a.out or os.path.join(RESULTS, "windows-quick" if a.quick else "windows")
    return a


def build(spark, variant: str, data_dir: str, a: argparse.Namespace):
    from kstate import BufferConfig, Suppressed, TimeWindows
    from pyspark.sql import functions as F

    src = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(data_dir)
    if variant == "spark":
        return (
            src.withWatermark("ts", f"{a.interval} seconds")
            .groupBy(F.window("ts", f"{a.window} seconds"), "key")
            .count()
            .select(
                "key", F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"), "count"
            )
        )
    windows = TimeWindows.of_size(a.window * 1000).grace(a.interval * 1000)
    return (
        src.kstate.windowed_by(windows, key="key", timestamp="ts")
        .count()
        .kstate.suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
        .select("key", "window_start", "window_end", "count")
    )


def run(
    spark, variant: str, data_dir: str, ckpt: str, a, cutoff_us: Optional[int] = None, meter: Optional[CpuMeter] = None
) -> Dict[str, Any]:
    """One AvailableNow query; with `cutoff_us`, digests the output windows ending by then."""
    from pyspark.sql import functions as F

    shutil.rmtree(ckpt, ignore_errors=True)
    unload_state_stores(spark)
    spark.sparkContext._jvm.System.gc()
    check: List[Dict[str, int]] = []
    cpu0 = meter.snapshot() if meter else None
    t0 = time.perf_counter()
    w = (
        build(spark, variant, data_dir, a)
        .writeStream.outputMode("append")
        .option("checkpointLocation", ckpt)
        .trigger(availableNow=True)
    )
    if cutoff_us is None:
        w = w.format("noop")
    else:

        def digest(bdf, batch_id):
            cols = [F.col("window_start"), F.col("window_end"), F.col("key"), F.col("count")]
            closed = bdf.where(F.col("window_end") <= F.timestamp_micros(F.lit(cutoff_us)))
            r = closed.agg(
                F.count(F.lit(1)).alias("rows"),
                F.sum("count").alias("records"),
                F.sum(F.xxhash64(*cols).cast("decimal(38,0)")).alias("digest"),
            ).collect()[0]
            check.append({"rows": int(r["rows"]), "records": int(r["records"] or 0), "digest": int(r["digest"] or 0)})

        w = w.foreachBatch(digest)
    q = w.start()
    q.awaitTermination()
    wall = time.perf_counter() - t0
    cpu = CpuMeter.delta(cpu0, meter.snapshot()) if meter else {}
    progress = [json.loads(p.json) for p in q.recentProgress]
    unload_state_stores(spark)
    out = {"wall_s": wall, "cpu": cpu, "batches": sum(1 for p in progress if p.get("numInputRows", 0) > 0)}
    if cutoff_us is not None:
        out["check"] = {k: sum(c[k] for c in check) for k in ("rows", "records", "digest")}
    return out


def main(argv: Optional[List[str]] = None) -> int:
    a = parse_args(argv)
    wait_for_jar()
    tmp = os.path.join(TMP, f"windows-{os.getpid()}")
    data, warm = os.path.join(tmp, "data"), os.path.join(tmp, "warmup")
    t0 = time.perf_counter()
    inp = generate(data, a.files, a.rows_per_file, a, seed=7)
    generate(warm, a.warmup_files, a.warmup_rows, a, seed=8)
    print(describe_input(inp, time.perf_counter() - t0, a.interval))
    spark = start_spark(a, "kstate-bench-windows", os.path.join(tmp, "spark-local"))
    meter = CpuMeter(int(spark.sparkContext._jvm.ProcessHandle.current().pid()))
    try:
        for v in VARIANTS:
            run(spark, v, warm, os.path.join(tmp, f"ckpt-warm-{v}"), a)
        times: Dict[str, List[float]] = {v: [] for v in VARIANTS}
        cpus: Dict[str, List[Any]] = {v: [] for v in VARIANTS}
        for r in range(a.reps):
            for v in VARIANTS if r % 2 == 0 else VARIANTS[::-1]:
                res = run(spark, v, data, os.path.join(tmp, f"ckpt-{v}-{r}"), a, meter=meter)
                times[v].append(res["wall_s"])
                cpus[v].append(res["cpu"])
                print(
                    f"[{v} rep {r}] {res['wall_s']:.1f} s  {inp['rows'] / res['wall_s']:,.0f} rows/s  "
                    f"{res['batches']} batches  cpu {res['cpu'].get('own_cpu_s')} s",
                    flush=True,
                )
        checks = {}
        if not a.no_verify:
            max_ts_us = spark.read.parquet(data).selectExpr("unix_micros(max(ts))").first()[0]
            cutoff = max_ts_us - (a.interval + a.window) * 1_000_000
            for v in VARIANTS:
                checks[v] = run(spark, v, data, os.path.join(tmp, f"ckpt-check-{v}"), a, cutoff_us=cutoff)["check"]
                print(f"[{v} check] {checks[v]}")
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    rate = {v: inp["rows"] / statistics.median(times[v]) for v in VARIANTS}
    ratio = rate["kstate"] / rate["spark"]
    agree = None if not checks else checks["spark"] == checks["kstate"] and checks["spark"]["rows"] > 0
    print(
        f"\nwindowed count, final results ({a.window} s windows, grace = watermark delay {a.interval} s, "
        f"{inp['rows']:,} rows, {a.reps} reps, medians):"
    )
    print(f"  Spark append (watermark, {spark_provider(a)}) : {rate['spark']:12,.0f} rows/s")
    print(f"  kstate count + until_window_closes        : {rate['kstate']:12,.0f} rows/s")
    print(
        f"  ratio kstate / Spark: {ratio:.2f}x (goal >= {GOAL}x: {'met' if ratio >= GOAL else 'NOT met'}); "
        f"final results agree: {agree}"
    )
    result = {
        "benchmark": "windows",
        "quick": a.quick,
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
        "input": inp,
        "parameters": {
            "window_s": a.window,
            "grace_s": a.interval,
            "reps": a.reps,
            "shuffle_partitions": a.shuffle_partitions,
            "conf": a.conf,
        },
        "wall_s": times,
        "cpu": cpus,
        "rows_per_s": rate,
        "ratio_kstate_vs_spark": ratio,
        "goal": GOAL,
        "goal_met": ratio >= GOAL,
        "checks": checks,
        "results_agree": agree,
    }
    if not a.no_save:
        os.makedirs(os.path.dirname(a.out), exist_ok=True)
        with open(a.out + ".json", "w") as f:
            json.dump(result, f, indent=1)
        print(f"wrote {os.path.relpath(a.out + '.json', ROOT)}")
    return 0 if agree is not False else 1


def spark_provider(a: argparse.Namespace) -> str:
    for kv in a.conf:
        if kv.startswith("spark.sql.streaming.stateStore.providerClass="):
            return kv.split("=", 1)[1].rsplit(".", 1)[-1]
    return "HDFSBackedStateStoreProvider"


if __name__ == "__main__":
    sys.exit(main())
