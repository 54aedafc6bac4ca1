#!/usr/bin/env python3
"""Each kstate operator against its floor and against Spark's nearest built-in.

The floor of a keyed stateful operator is the same streaming query with the operator replaced by
a shuffle on its key (two shuffles for a regrouping aggregation, both inputs shuffled for a
table-table join) and the same no-op sink: what reading, shuffling and sinking the input costs,
so whatever kstate spends beyond it is its own. For every workload below, on the same generated
input with uniform and with skewed (zipf 1.3) keys, in one Spark session: the floor, kstate and
(where Spark has one) the built-in run as AvailableNow queries over the same parquet files, one
file per micro-batch, each variant from a fresh checkpoint; one untimed run of each warms the JIT,
then ``--reps`` rounds run every variant once, in an order rotated each round; medians.

Workloads (interval = grace = ``--interval`` s; Spark's built-ins on its RocksDB provider with
changelog checkpointing (``builtin``) and on its default HDFS provider (``builtin_hdfs``), kstate on
its own provider):

* ``dedup_key``, ``dedup_key_value``, ``dedup_id``: kstate's three deduplication modes vs
  ``withWatermark(ts, interval).dropDuplicatesWithinWatermark`` on the same columns;
* ``time_windows``: 10 s tumbling windows' count with ``until_window_closes`` vs Spark's
  append-mode windowed count;
* ``session_windows``: sessions with a 10 s inactivity gap, count, ``until_window_closes``, vs
  Spark's ``session_window`` count in append mode;
* ``sliding_windows``: Kafka's sliding windows (10 s time difference), count,
  ``until_window_closes`` (no Spark built-in: Kafka's record-driven windows have none);
* ``until_time_limit``: ``suppress(until_time_limit(interval))`` by key (no built-in);
* ``table_aggregation``: the input as a table by key, regrouped by a 1,000-value prefix of the
  key, ``count()`` (floor: a shuffle by key, then one by the prefix);
* ``table_join``: two tables of the same files by key (the second reads them again), inner join
  (floor: both inputs shuffled by key).

The stream-table join's floor (the stream-static join plus the table's updates read and
shuffled) is ``bench/enrichment.py``'s ``floor`` variant; its ratio is reported there.

``--order-cost`` compares the processing orders instead: kstate in its default order (``auto``:
event time for files) against the same query in Kafka task order (``order="task"``); both sort a
state partition's rows by one 64-bit key. ``dedup_key`` and ``time_windows`` with uniform keys, on
input already in order (no disorder, no late rows: both orders give the same result) and on input
with 5 s of disorder. Writes ``results/order-cost.json``.

The sorted floor (variant ``floor_sorted``): kstate puts every state partition's rows into its
processing order before anything else (its results must not depend on the order in which Spark
fetches shuffled rows), which the floor does not pay. The sorted floor is the floor with each
shuffled partition sorted by event time by Spark's own sorter (``sortWithinPartitions("ts")``,
on the one long key), at every place kstate sorts (once per operator; twice for the table
aggregation; once per side for the table-table join, whose merge of the two sorted sides is not
counted): a lower bound of what any operator with kstate's processing order can cost. A streaming
query cannot sort, so it runs as a batch job per micro-batch (``foreachBatch``).

``--sort-cost`` checks that shape: the floor run through ``foreachBatch`` (``floor_batch``) against
the sorted floor and the streaming floor, next to kstate, with ``dedup_key`` and ``time_windows``
and both key distributions. Writes ``results/sort-cost.json``.

Prints rows/s per variant, kstate / floor and kstate / built-in; writes ``results/floor.json``
and ``results/floor.png`` (``--quick``: ``floor-quick.*``).

    PYTHONPATH=python .venv/bin/python bench/floor.py --quick
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
    HDFS,
    PROVIDER_KEY,
    RESULTS,
    ROCKSDB,
    SCHEMA,
    TMP,
    CpuMeter,
    add_input_args,
    add_spark_args,
    environment,
    finish_args,
    finish_chart,
    generate,
    other_processes,
    save_results,
    start_spark,
    timed_noop_query,
    timed_query,
    wait_for_jar,
)

GOAL_FLOOR = 0.85
GOAL_BUILTIN = 1.5
DISTRIBUTIONS = {"uniform": 0.0, "zipf1.3": 1.3}
WORKLOADS = [
    "dedup_key",
    "dedup_key_value",
    "dedup_id",
    "time_windows",
    "session_windows",
    "sliding_windows",
    "until_time_limit",
    "table_aggregation",
    "table_join",
]
# the columns each deduplication mode compares (the first is the one its floor shuffles by)
DEDUP_COLUMNS = {"dedup_key": ["key"], "dedup_key_value": ["key", "event_id"], "dedup_id": ["event_id"]}
NO_BUILTIN = {"sliding_windows", "until_time_limit", "table_aggregation", "table_join"}


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small input, 1 round")
    p.add_argument("--reps", type=int, default=None, help="timed rounds (default 3; --quick 1)")
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--distributions", default=",".join(DISTRIBUTIONS))
    p.add_argument(
        "--variants",
        default="floor,floor_sorted,kstate,builtin,builtin_hdfs",
        help="which of floor, floor_sorted, kstate, builtin (RocksDB provider), builtin_hdfs (HDFS provider) to run "
        "(profiling: one of them with --jfr)",
    )
    p.add_argument(
        "--order-cost",
        action="store_true",
        help="kstate in event-time order against task order, on ordered and on disordered input",
    )
    p.add_argument(
        "--sort-cost",
        action="store_true",
        help="the floor with and without Spark's own sort by event time, next to the floor and kstate",
    )
    p.add_argument("--jfr", default=None, help="record the driver JVM with Java Flight Recorder into this file")
    p.add_argument("--out", default=None)
    p.add_argument("--no-save", action="store_true")
    add_input_args(p)
    add_spark_args(p)
    a = p.parse_args(argv)
    if not a.quick:  # 1M rows: 9 workloads x 2 key distributions x 3 variants x 4 runs take about 30 minutes
        a.files = a.files or 10
        a.rows_per_file = a.rows_per_file or 100_000
    if a.order_cost:
        a.workloads, a.variants, a.distributions = "dedup_key,time_windows", "kstate,kstate_task", "uniform"
    if a.sort_cost:
        a.workloads, a.variants = "dedup_key,time_windows", "floor,floor_batch,floor_sorted,kstate"
    finish_args(p, a)
    a.reps = a.reps or (1 if a.quick else 3)
    a.workload_list = [w for w in a.workloads.split(",") if w]
    a.variant_list = a.workload_list
    a.distribution_list = [d for d in a.distributions.split(",") if d]
    stem = "order-cost" if a.order_cost else "sort-cost" if a.sort_cost else "floor"
    a.out = a.out or os.path.join(RESULTS, f"{stem}-quick" if a.quick else stem)
    return a


def sources(spark, data_dir: str, n: int = 1) -> List[Any]:
    return [spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(data_dir) for _ in range(n)]


def group_of_key():
    """The table aggregation's group: "user-000" .. "user-099" x the last three digits, 1,000 groups at most."""
    from pyspark.sql import functions as F

    return F.substring("key", 1, 8)


def build(spark, workload: str, variant: str, data_dir: str, a: argparse.Namespace):
    """The query of one variant (floor, kstate, kstate_task: kstate in task order, builtin or
    builtin_hdfs: the built-in, whose provider `run` sets) of a workload, before its sink."""
    import kstate  # noqa: F401 - the DataFrame methods
    from kstate import BufferConfig, SessionWindows, SlidingWindows, Suppressed, TimeWindows
    from pyspark.sql import functions as F

    interval = f"{a.interval} seconds"
    order = "task" if variant == "kstate_task" else None  # None: the session's, auto by default
    final = Suppressed.until_window_closes(BufferConfig.unbounded())
    src = sources(spark, data_dir)[0]
    prefix = group_of_key()
    if workload.startswith("dedup_"):
        cols = DEDUP_COLUMNS[workload]
        if variant == "floor":
            return src.repartition(cols[0])
        if variant.startswith("builtin"):
            return src.withWatermark("ts", interval).dropDuplicatesWithinWatermark(cols)
        if workload == "dedup_key":
            return src.kstate.deduplicate_by_key(interval, key="key", timestamp="ts", order=order)
        if workload == "dedup_key_value":
            return src.kstate.deduplicate_by_key_value("event_id", interval, key="key", timestamp="ts")
        return src.kstate.deduplicate("event_id", interval, timestamp="ts")
    if workload in ("time_windows", "session_windows", "sliding_windows"):
        if variant == "floor":
            return src.repartition("key")
        if variant.startswith("builtin"):
            w = F.window("ts", "10 seconds") if workload == "time_windows" else F.session_window("ts", "10 seconds")
            return src.withWatermark("ts", interval).groupBy(w.alias("w"), "key").count()
        windows = {
            "time_windows": TimeWindows.of_size("10 seconds").grace(interval),
            "session_windows": SessionWindows.with_inactivity_gap("10 seconds").grace(interval),
            "sliding_windows": SlidingWindows.of_time_difference("10 seconds").grace(interval),
        }[workload]
        return src.kstate.windowed_by(windows, key="key", timestamp="ts", order=order).count().kstate.suppress(final)
    if workload == "until_time_limit":
        if variant == "floor":
            return src.repartition("key")
        return src.kstate.suppress(
            Suppressed.until_time_limit(interval, BufferConfig.unbounded()), key="key", timestamp="ts"
        )
    if workload == "table_aggregation":
        if variant == "floor":
            return src.repartition("key").withColumn("g", prefix).repartition("g")
        table = src.select("key", "ts", "value").kstate.to_table(key="key", timestamp="ts")
        return table.group_by(prefix.alias("g")).count().to_stream()
    if workload == "table_join":
        left, right = sources(spark, data_dir, 2)
        right = right.select("key", "ts", F.col("value").alias("right_value"))
        if variant == "floor":
            return left.repartition("key").unionByName(right.repartition("key"), allowMissingColumns=True)
        lt = left.select("key", "ts", "value").kstate.to_table(key="key", timestamp="ts")
        rt = right.kstate.to_table(key="key", timestamp="ts")
        return lt.join(rt).to_stream()
    raise ValueError(workload)


STATE_TIMES = ("allUpdatesTimeMs", "allRemovalsTimeMs", "commitTimeMs")


def run(spark, workload: str, variant: str, data_dir: str, ckpt: str, a, meter: CpuMeter) -> Dict[str, Any]:
    """One AvailableNow query to the no-op sink: wall time, CPU, micro-batches. The built-in's
    provider is the session's (RocksDB), or HDFS for builtin_hdfs; a new checkpoint takes it from
    the session's conf when the query starts."""
    if variant == "builtin_hdfs":
        spark.conf.set(PROVIDER_KEY, HDFS)
    try:
        if variant in ("floor_batch", "floor_sorted"):
            q, wall, cpu = timed_batch_floor(spark, workload, data_dir, ckpt, variant == "floor_sorted", meter)
        else:
            q, wall, cpu = timed_noop_query(spark, lambda: build(spark, workload, variant, data_dir, a), ckpt, meter)
    finally:
        spark.conf.set(PROVIDER_KEY, ROCKSDB)
    progress = q.recentProgress
    batches = sum(1 for p in progress if p.numInputRows > 0)
    # the state operators' own times, summed over micro-batches and operators: steadier than the
    # wall time for an A/B of one part of an operator (reading and processing rows; the
    # end-of-batch removals, such as deduplication's purge; the commit)
    ops = [o for p in progress for o in p.stateOperators]
    state_ms = {k: sum(int(getattr(o, k) or 0) for o in ops) for k in STATE_TIMES}
    return {"wall_s": round(wall, 3), "cpu": cpu, "batches": batches, "state_ms": state_ms}


def batch_floor(workload: str, df, sort: bool):
    """The workload's floor on one micro-batch ``df`` (a batch DataFrame): the streaming floor's
    shuffles, each shuffled partition sorted by event time after it when ``sort`` (the sorted
    floor). For the table-table join ``df`` holds both inputs, told apart by ``_side``."""
    from pyspark.sql import functions as F

    def shuffled(d, col: str):
        d = d.repartition(col)
        return d.sortWithinPartitions("ts") if sort else d

    if workload in DEDUP_COLUMNS:
        return shuffled(df, DEDUP_COLUMNS[workload][0])
    if workload == "table_aggregation":
        return shuffled(shuffled(df, "key").withColumn("g", group_of_key()), "g")
    if workload == "table_join":
        left = shuffled(df.filter(F.col("_side") == 0), "key")
        return left.unionByName(shuffled(df.filter(F.col("_side") == 1), "key"))
    return shuffled(df, "key")


def timed_batch_floor(spark, workload: str, data_dir: str, ckpt: str, sort: bool, meter: CpuMeter):
    """The floor (with ``sort``: the sorted floor) as a batch job per micro-batch (``foreachBatch``)
    to the no-op sink."""
    from pyspark.sql import functions as F

    def each(df, _batch_id):
        batch_floor(workload, df, sort).write.format("noop").mode("overwrite").save()

    if workload == "table_join":
        left, right = sources(spark, data_dir, 2)
        src = left.withColumn("_side", F.lit(0)).unionByName(right.withColumn("_side", F.lit(1)))
    else:
        src = sources(spark, data_dir)[0]
    shutil.rmtree(ckpt, ignore_errors=True)
    return timed_query(
        spark,
        lambda: (
            src.writeStream.foreachBatch(each).option("checkpointLocation", ckpt).trigger(availableNow=True).start()
        ),
        meter,
    )


def variants_of(workload: str, a: argparse.Namespace) -> List[str]:
    if a.sort_cost:
        return [v for v in a.variants.split(",") if v]
    names = ["floor", "floor_sorted", "kstate", "kstate_task"] + (
        [] if workload in NO_BUILTIN else ["builtin", "builtin_hdfs"]
    )
    return [v for v in names if v in a.variants.split(",")]


def measure(spark, workload: str, data_dir: str, rows: int, a, meter: CpuMeter) -> Dict[str, Any]:
    names = variants_of(workload, a)
    ckpt = os.path.join(TMP, "floor", "ckpt")
    runs: Dict[str, List[Dict[str, Any]]] = {v: [] for v in names}
    for v in names:  # warm-up, untimed
        run(spark, workload, v, data_dir, ckpt, a, meter)
    for r in range(a.reps):
        order = names[r % len(names) :] + names[: r % len(names)]
        for v in order:
            runs[v].append(run(spark, workload, v, data_dir, ckpt, a, meter))
    out: Dict[str, Any] = {"runs": runs}
    for v in names:
        wall = statistics.median(x["wall_s"] for x in runs[v])
        cpus = [x["cpu"]["own_cpu_s"] for x in runs[v] if x["cpu"].get("own_cpu_s") is not None]
        out[v] = {
            "median_wall_s": wall,
            "rows_per_s": round(rows / wall),
            # CPU of this benchmark's processes (driver JVM with its local executors, Python) per input row
            "cpu_us_per_row": round(statistics.median(cpus) * 1e6 / rows, 2) if cpus else None,
        }
    if "kstate" in out and "floor" in out:
        out["kstate_over_floor"] = round(out["kstate"]["rows_per_s"] / out["floor"]["rows_per_s"], 3)
        if out["kstate"]["cpu_us_per_row"] is not None and out["floor"]["cpu_us_per_row"] is not None:
            out["kstate_extra_cpu_us_per_row"] = round(
                out["kstate"]["cpu_us_per_row"] - out["floor"]["cpu_us_per_row"], 2
            )
    if "floor_sorted" in out and "floor" in out:  # what Spark's own sort by event time costs
        out["floor_sorted_over_floor"] = round(out["floor_sorted"]["rows_per_s"] / out["floor"]["rows_per_s"], 3)
        if "kstate" in out:
            out["kstate_over_floor_sorted"] = round(out["kstate"]["rows_per_s"] / out["floor_sorted"]["rows_per_s"], 3)
    if "floor_batch" in out and "floor_sorted" in out:
        out["sorted_over_unsorted"] = round(out["floor_sorted"]["rows_per_s"] / out["floor_batch"]["rows_per_s"], 3)
    if "kstate_task" in out and "kstate" in out:  # what the default order's sort costs
        out["kstate_over_task_order"] = round(out["kstate"]["rows_per_s"] / out["kstate_task"]["rows_per_s"], 3)
    if "builtin" in out and "kstate" in out:
        out["kstate_over_builtin"] = round(out["kstate"]["rows_per_s"] / out["builtin"]["rows_per_s"], 3)
    if "builtin_hdfs" in out and "kstate" in out:
        out["kstate_over_builtin_hdfs"] = round(out["kstate"]["rows_per_s"] / out["builtin_hdfs"]["rows_per_s"], 3)
    return out


def write_chart(path: str, result: Dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dists = list(result["distributions"])
    if not all("floor" in m for d in dists for m in result["distributions"][d].values()):
        return  # a run without the floor variant (profiling, an A/B of kstate alone): no ratios to draw
    fig, axes = plt.subplots(1, len(dists), figsize=(6 * len(dists), 4.5), squeeze=False)
    for ax, d in zip(axes[0], dists):
        ws = list(result["distributions"][d])
        ks = [result["distributions"][d][w]["kstate_over_floor"] for w in ws]
        bs = [
            result["distributions"][d][w].get("builtin", {}).get("rows_per_s", 0)
            / result["distributions"][d][w]["floor"]["rows_per_s"]
            for w in ws
        ]
        ss = [result["distributions"][d][w].get("floor_sorted_over_floor") for w in ws]
        # (label, values, colour): the sorted floor's bars only when the run measured it
        series = [("kstate / floor", ks, None), ("Spark built-in / floor", bs, None)]
        if any(v is not None for v in ss):
            series.insert(0, ("sorted floor / floor", [v or 0 for v in ss], "lightgray"))
        xs = range(len(ws))
        width = 0.8 / len(series)
        for i, (label, values, colour) in enumerate(series):
            offset = (i - (len(series) - 1) / 2) * width
            ax.bar([x + offset for x in xs], values, width, label=label, color=colour)
        ax.axhline(GOAL_FLOOR, color="gray", linestyle="--", linewidth=1, label=f"goal {GOAL_FLOOR}x")
        ax.set_xticks(list(xs))
        ax.set_xticklabels(ws, rotation=35, ha="right", fontsize=8)
        ax.set_title(f"{d} keys")
        ax.set_ylim(0, 1.2)
        ax.legend(fontsize=8)
    finish_chart(fig, path, "throughput relative to the floor (a shuffle on the key, no-op sink)")


def inputs(a: argparse.Namespace) -> List[Any]:
    """(name, the generator's settings) of each input: a key distribution each, or (--order-cost)
    uniform keys in order (no disorder, no late rows) and with the default 5 s of disorder."""
    if a.order_cost:
        return [
            ("ordered", dict(key_skew=0.0, max_disorder=0.0, late_rate=0.0)),
            ("disorder_5s", dict(key_skew=0.0, max_disorder=5.0, late_rate=0.01)),
        ]
    return [(d, dict(key_skew=DISTRIBUTIONS[d])) for d in a.distribution_list]


def main(argv: Optional[List[str]] = None) -> int:
    a = parse_args(argv)
    jar = wait_for_jar()
    spark = start_spark(
        a,
        "kstate-bench-floor",
        conf={
            "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
            "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        },
    )
    meter = CpuMeter(int(spark.sparkContext._jvm.ProcessHandle.current().pid()))
    result: Dict[str, Any] = {
        "benchmark": "floor",
        "reps": a.reps,
        "goal_kstate_over_floor": GOAL_FLOOR,
        "goal_kstate_over_builtin": GOAL_BUILTIN,
        "distributions": {},
        "inputs": {},
    }
    load_before = open("/proc/loadavg").read().split()[:3]
    others_before = other_processes()
    for dist, settings in inputs(a):
        for k, v in settings.items():
            setattr(a, k, v)
        data_dir = os.path.join(TMP, "floor", dist)
        shutil.rmtree(data_dir, ignore_errors=True)
        t0 = time.perf_counter()
        inp = generate(data_dir, a.files, a.rows_per_file, a, seed=31)
        print(
            f"\n== {dist} keys: {inp['rows']:,} rows, {inp['distinct_keys']:,} distinct keys "
            f"(generated in {time.perf_counter() - t0:.0f} s)",
            flush=True,
        )
        result["inputs"][dist] = inp
        result["distributions"][dist] = {}
        for w in a.workload_list:
            m = measure(spark, w, data_dir, inp["rows"], a, meter)
            result["distributions"][dist][w] = m
            line = f"{w:18s}" + "".join(
                f"  {v} {m[v]['rows_per_s']:>10,} rows/s"
                for v in ("floor", "kstate", "builtin", "builtin_hdfs")
                if v in m
            )
            if "kstate_over_floor" in m:
                line += f"  kstate {m['kstate_over_floor']:.2f}x floor (goal {GOAL_FLOOR})"
            if "kstate_over_builtin" in m:
                line += f", {m['kstate_over_builtin']:.2f}x built-in (goal {GOAL_BUILTIN})"
            if "kstate_over_builtin_hdfs" in m:
                line += f", {m['kstate_over_builtin_hdfs']:.2f}x built-in on HDFS"
            if "kstate_over_floor_sorted" in m:
                line += f"  floor_sorted {m['floor_sorted']['rows_per_s']:>10,} rows/s"
                line += f" ({m['floor_sorted_over_floor']:.2f}x floor), kstate {m['kstate_over_floor_sorted']:.2f}x it"
            if "sorted_over_unsorted" in m:
                line += f"  floor_batch {m['floor_batch']['rows_per_s']:>10,} rows/s"
                line += f"  sorted / unsorted batch floor {m['sorted_over_unsorted']:.3f}"
            if "kstate_over_task_order" in m:
                line += f"  kstate_task {m['kstate_task']['rows_per_s']:>10,} rows/s"
                line += f"  default order / task order {m['kstate_over_task_order']:.3f}"
            print(line, flush=True)
    result["load_before"] = load_before
    result["load_after"] = open("/proc/loadavg").read().split()[:3]
    result["others_before"], result["others_after"] = others_before, other_processes()
    result["environment"] = environment(spark, a, jar)
    spark.stop()
    if a.order_cost:
        result["benchmark"] = "order-cost"
        save_results(a, result, lambda path, r: None, "order-cost", [])
    elif a.sort_cost:
        result["benchmark"] = "sort-cost"
        save_results(a, result, lambda path, r: None, "sort-cost", [])
    else:
        save_results(a, result, write_chart, "floor", WORKLOADS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
