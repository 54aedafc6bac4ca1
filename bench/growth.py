#!/usr/bin/env python3
"""Cost as state grows: the same micro-batches against 10x more state each time.

For every state size, one query per variant on its own checkpoint: its first micro-batch loads
the state (untimed), then ``--batches`` measured micro-batches of ``--rows`` rows each, the same
rows whatever the state size; each measured micro-batch's time is Spark's own
(``durationMs.triggerExecution``), its throughput is rows / time, and a size's figure is the
median over its measured micro-batches. One untimed run of the smallest size per variant warms
the JIT first. Variants alternate: each size runs them in an order rotated from the previous
size's.

* ``dedup``: ``deduplicate_by_key`` (1-hour interval: nothing expires while it runs) holding
  100k, 1M and 10M keys, vs Spark's ``dropDuplicatesWithinWatermark`` by key (RocksDB provider,
  changelog checkpointing, 1-hour watermark delay). A measured micro-batch: half its rows have
  keys already in the state (dropped), half new keys (stored), in event-time order after the
  loaded state.
* ``join``: the versioned stream-table join (``VersionedTable`` with a history retention that
  keeps every version; no grace) holding 1M and 10M versions (10 per key), each measured event
  an as-of lookup at a random time within the versions' span, so most lookups read history. No
  Spark built-in keeps versions (``bench/enrichment.py`` compares the join with Spark's nearest).

kstate's heap state budget is 2 GB here (``--heap-state-bytes``), so that the largest state stays
on the heap: with the default (an eighth of the heap, 768 MB of the 6 GB driver) part of the
10M-key state is kept in RocksDB, which is tiering's cost, not growth's (docs/performance.md).

The goal (docs/performance.md): at most 10% less throughput per 10x state. Prints each size's
figures and the ratio to the smallest size; writes ``results/growth.json`` and ``growth.png``
(``--quick``: 10k/100k keys, ``growth-quick.*``).

    PYTHONPATH=python .venv/bin/python bench/growth.py --quick
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from typing import Any, Dict, List, Optional

from common import (
    RESULTS,
    ROCKSDB,
    TMP,
    CpuMeter,
    add_spark_args,
    environment,
    finish_chart,
    other_processes,
    start_spark,
    timed_noop_query,
    wait_for_jar,
    write_json_and_chart,
)

GOAL_LOSS = 0.10  # at most 10% less throughput per 10x state
T0 = 1_700_000_000  # seconds: the loaded state's first event time
SPAN = 600  # seconds: the loaded state's (and the versions') event-time span
VERSIONS_PER_KEY = 10
HEAP_STATE_BYTES = "spark.sql.streaming.stateStore.kstate.heapStateBytes"


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes")
    p.add_argument("--workloads", default="dedup,join")
    p.add_argument("--dedup-sizes", default=None, help="keys in the state, comma-separated")
    p.add_argument("--join-sizes", default=None, help="versions in the table, comma-separated")
    p.add_argument("--rows", type=int, default=None, help="rows per measured micro-batch")
    p.add_argument("--batches", type=int, default=4, help="measured micro-batches per run")
    p.add_argument("--variants", default="kstate,builtin", help="which of kstate, builtin to run")
    p.add_argument("--jfr", default=None, help="record the driver JVM with Java Flight Recorder into this file")
    p.add_argument(
        "--heap-state-bytes",
        default="2g",
        help="kstate's heap state budget (spark.sql.streaming.stateStore.kstate.heapStateBytes): by default "
        "large enough for the largest state here to stay on the heap; 'default' = kstate's default",
    )
    p.add_argument("--out", default=None)
    p.add_argument("--no-save", action="store_true")
    add_spark_args(p)
    a = p.parse_args(argv)
    a.dedup_sizes = [
        int(x) for x in (a.dedup_sizes or ("10000,100000" if a.quick else "100000,1000000,10000000")).split(",")
    ]
    a.join_sizes = [int(x) for x in (a.join_sizes or ("10000,100000" if a.quick else "1000000,10000000")).split(",")]
    a.rows = a.rows or (20_000 if a.quick else 250_000)
    a.workload_list = [w for w in a.workloads.split(",") if w]
    a.out = a.out or os.path.join(RESULTS, "growth-quick" if a.quick else "growth")
    return a


def write_dedup_input(spark, root: str, keys: int, a) -> None:
    """load/: ``keys`` distinct keys over SPAN s; then ``a.batches`` files, half known keys, half new."""
    from pyspark.sql import functions as F

    shutil.rmtree(root, ignore_errors=True)
    load = spark.range(keys).select(
        F.format_string("s%d", "id").alias("key"),
        F.timestamp_seconds(F.lit(T0) + F.col("id") * SPAN / keys).alias("ts"),
    )
    load.coalesce(1).write.parquet(os.path.join(root, "f000"))
    for b in range(a.batches):
        start = T0 + SPAN + b * 60
        rows = spark.range(a.rows).select(
            F.when(F.col("id") % 2 == 0, F.format_string("s%d", (F.rand(b) * keys).cast("long")))
            .otherwise(F.format_string("n%d_%d", F.lit(b), "id"))
            .alias("key"),
            F.timestamp_seconds(F.lit(start) + F.col("id") * 60.0 / a.rows).alias("ts"),
        )
        rows.coalesce(1).write.parquet(os.path.join(root, f"f{b + 1:03d}"))


def write_join_input(spark, root: str, versions: int, a) -> None:
    """updates/: ``versions`` versions (10 per key) over SPAN s; events/: one file per micro-batch
    (the first, with the updates, holds one event), each event at a random time within SPAN."""
    from pyspark.sql import functions as F

    shutil.rmtree(root, ignore_errors=True)
    keys = versions // VERSIONS_PER_KEY
    spark.range(versions).select(
        F.format_string("k%d", F.col("id") % keys).alias("key"),
        F.timestamp_seconds(F.lit(T0) + (F.col("id") / keys).cast("long") * (SPAN // VERSIONS_PER_KEY)).alias("uts"),
        F.col("id").alias("profile"),
    ).coalesce(1).write.parquet(os.path.join(root, "updates", "f000"))
    for b in range(a.batches + 1):
        n = 1 if b == 0 else a.rows
        spark.range(n).select(
            F.col("id").alias("event_id"),
            F.format_string("k%d", (F.rand(2 * b) * keys).cast("long")).alias("key"),
            F.timestamp_seconds(F.lit(T0) + F.rand(2 * b + 1) * SPAN).alias("ts"),
        ).coalesce(1).write.parquet(os.path.join(root, "events", f"f{b:03d}"))


def files_source(spark, path: str, schema: str):
    return spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(os.path.join(path, "*"))


def build(spark, workload: str, variant: str, data: str):
    import kstate  # noqa: F401 - the DataFrame methods

    if workload == "dedup":
        src = files_source(spark, data, "key STRING, ts TIMESTAMP")
        if variant == "builtin":
            return src.withWatermark("ts", "1 hour").dropDuplicatesWithinWatermark(["key"])
        return src.kstate.deduplicate_by_key("1 hour", key="key", timestamp="ts")
    from kstate import VersionedTable

    updates = files_source(spark, os.path.join(data, "updates"), "key STRING, uts TIMESTAMP, profile BIGINT")
    events = files_source(spark, os.path.join(data, "events"), "event_id BIGINT, key STRING, ts TIMESTAMP")
    table = updates.kstate.to_table("key", "uts", versioned=VersionedTable(history_retention=10 * SPAN * 1000))
    return events.kstate.join(table, key="key", timestamp="ts", how="inner")


def run(spark, workload: str, variant: str, data: str, a, meter: CpuMeter) -> Dict[str, Any]:
    ckpt = os.path.join(TMP, "growth", "ckpt")
    q, wall, cpu = timed_noop_query(spark, lambda: build(spark, workload, variant, data), ckpt, meter)
    progress = [p for p in q.recentProgress if p.numInputRows > 0]
    load, measured = progress[0], progress[1:]
    times = [p.durationMs["triggerExecution"] / 1000 for p in measured]
    rates = [p.numInputRows / t for p, t in zip(measured, times)]
    return {
        "load_s": round(load.durationMs["triggerExecution"] / 1000, 2),
        "batch_s": [round(t, 3) for t in times],
        "rows_per_s": round(statistics.median(rates)),
        "state_rows": sum(op.numRowsTotal for op in measured[-1].stateOperators),
        "output_rows": sum(p.sink.numOutputRows for p in measured),
        "memory_used_bytes": sum(op.memoryUsedBytes for op in measured[-1].stateOperators),
        "wall_s": round(wall, 2),
        "cpu": cpu,
    }


def measure(spark, workload: str, sizes: List[int], a, meter: CpuMeter) -> Dict[str, Any]:
    variants = [v for v in (["kstate", "builtin"] if workload == "dedup" else ["kstate"]) if v in a.variants]
    out: Dict[str, Any] = {"sizes": {}}
    # warm-up, untimed: the smallest size once per variant, so that no size runs on a cold JIT
    data = os.path.join(TMP, "growth", f"{workload}-warmup")
    (write_dedup_input if workload == "dedup" else write_join_input)(spark, data, sizes[0], a)
    for v in variants:
        run(spark, workload, v, data, a, meter)
    shutil.rmtree(data, ignore_errors=True)
    for i, size in enumerate(sizes):
        data = os.path.join(TMP, "growth", f"{workload}-{size}")
        t = time.perf_counter()
        (write_dedup_input if workload == "dedup" else write_join_input)(spark, data, size, a)
        print(f"{workload} {size:,}: input written in {time.perf_counter() - t:.0f} s", flush=True)
        entry: Dict[str, Any] = {}
        for v in variants[i % len(variants) :] + variants[: i % len(variants)]:
            entry[v] = run(spark, workload, v, data, a, meter)
            r = entry[v]
            print(
                f"  {v:8s} load {r['load_s']:7.1f} s  measured {r['rows_per_s']:>10,} rows/s  "
                f"batches {r['batch_s']}  state rows {r['state_rows']:,}",
                flush=True,
            )
        if "builtin" in entry:
            entry["kstate_over_builtin"] = round(entry["kstate"]["rows_per_s"] / entry["builtin"]["rows_per_s"], 3)
        out["sizes"][str(size)] = entry
        shutil.rmtree(data, ignore_errors=True)
    derive(out)
    return out


def derive(out: Dict[str, Any]) -> None:
    """Each size against the smallest (``over_smallest``) and against the next smaller one, per
    decade (``loss_per_10x``: 1 - the ratio's decade root, so sizes 100x apart compare alike)."""
    sizes = sorted(out["sizes"], key=int)
    for prev, size in zip(sizes, sizes[1:]):
        e, p, first = out["sizes"][size], out["sizes"][prev], out["sizes"][sizes[0]]
        for v in ("kstate", "builtin"):
            if v in e and v in p:
                e[v]["over_smallest"] = round(e[v]["rows_per_s"] / first[v]["rows_per_s"], 3)
                decades = len(size) - len(prev)
                step = e[v]["rows_per_s"] / p[v]["rows_per_s"]
                e[v]["loss_per_10x"] = round(1 - step ** (1 / decades), 3) if decades else None


def write_chart(path: str, result: Dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ws = list(result["workloads"])
    fig, axes = plt.subplots(1, len(ws), figsize=(6 * len(ws), 4.5), squeeze=False)
    for ax, w in zip(axes[0], ws):
        sizes = list(result["workloads"][w]["sizes"])
        for v in ("kstate", "builtin"):
            ys = [result["workloads"][w]["sizes"][s].get(v, {}).get("rows_per_s") for s in sizes]
            if any(y is not None for y in ys):
                ax.plot([int(s) for s in sizes], ys, marker="o", label=v)
        ax.set_xscale("log")
        ax.set_ylim(bottom=0)
        ax.set_xlabel("keys in state" if w == "dedup" else "versions in the table")
        ax.set_ylabel("rows/s (median micro-batch)")
        ax.set_title(w)
        ax.legend(fontsize=8)
    finish_chart(fig, path, f"throughput as state grows (goal: at most {GOAL_LOSS:.0%} less per 10x)")


def main(argv: Optional[List[str]] = None) -> int:
    a = parse_args(argv)
    jar = wait_for_jar()
    # Spark's built-in on RocksDB with changelog checkpointing; kstate's operators keep their own provider
    conf = {
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    }
    if a.heap_state_bytes != "default":
        conf[HEAP_STATE_BYTES] = a.heap_state_bytes
    spark = start_spark(a, "kstate-bench-growth", conf=conf)
    meter = CpuMeter(int(spark.sparkContext._jvm.ProcessHandle.current().pid()))
    busy_before = other_processes()
    result: Dict[str, Any] = {
        "date_committed": time.strftime("%Y-%m-%d"),
        "rows_per_batch": a.rows,
        "measured_batches": a.batches,
        "goal_loss_per_10x": GOAL_LOSS,
        "heap_state_bytes": a.heap_state_bytes,
        "workloads": {},
    }
    for w in a.workload_list:
        sizes = a.dedup_sizes if w == "dedup" else a.join_sizes
        result["workloads"][w] = measure(spark, w, sizes, a, meter)
    result["environment"] = environment(spark, a, jar)
    result["environment"]["other_processes_at_start"] = busy_before
    result["environment"]["other_processes_at_end"] = other_processes()
    spark.stop()
    for w, r in result["workloads"].items():
        for size, e in r["sizes"].items():
            for v in ("kstate", "builtin"):
                if v in e and e[v].get("loss_per_10x") is not None:
                    ok = "met" if e[v]["loss_per_10x"] <= GOAL_LOSS else "NOT met"
                    print(
                        f"{w} {v} at {int(size):,}: {e[v]['over_smallest']}x the smallest size, "
                        f"loss per 10x from the next smaller size {e[v]['loss_per_10x']:.1%} ({ok})"
                    )
    if not a.no_save:
        write_json_and_chart(a.out, result, write_chart)
    return 0


if __name__ == "__main__":
    sys.exit(main())
