#!/usr/bin/env python3
"""Enrichment: a stream of events joined with a versioned table of profiles.

The workload: ``--events`` stream events (default 4M) over ``--keys`` keys (1M), joined with a
table of those keys' profiles, ``--versions`` versions per key (10) whose updates arrive
interleaved with the events, both with bounded disorder and a fraction of late rows. Each event
asks "the key's profile as it was at the event's time". Three ways to answer it, same input,
same run, each written to a parquet sink (the sink is part of every variant's work):

* ``static``: Spark's stream–static join with the table's final versions (a batch DataFrame):
  no time semantics at all, the cost floor (goal: kstate >= 0.7x its throughput);
* ``floor``: the stream-static join, plus the table updates read and shuffled by key, then
  dropped (a filter on the partition id Spark cannot push down): the work any stream-table join
  that reads the table as a stream does before it stores a single version;
* ``kstate``: ``updates.kstate.to_table(versioned=VersionedTable(retention))`` and
  ``events.kstate.join(table, grace=...)``: KIP-914 as-of lookups after KIP-923's grace;
* ``spark``: what a Spark user builds today: a stream–stream inner join with watermarks on both
  sides and the time range ``ts - range <= uts <= ts`` (range: two mean gaps between versions),
  then the latest match per event (``max_by`` over ``(event_id, ts)``, append mode) (goal:
  kstate >= 2x its throughput). Profiles change at random times, so a key's last version can be
  older than any fixed range: such events find nothing; and Spark emits an event only once its
  watermark, held back by the range, passes it.

Throughput is stream events per second of wall time (table updates are extra input for kstate
and ``spark``; ``static`` reads the final table once). Each variant's output is compared with
the exact as-of answer computed from the generated input (the profile version valid at the
event's time): events answered right, answered with another version, and not answered.

Footprint: kstate again with other history retentions (``--footprint-retentions``); reported:
the join's state store heap bytes at the end, the versions its versioned store holds then
(computed from the input with Kafka's retention rule) and bytes per version.

    PYTHONPATH=python .venv/bin/python bench/enrichment.py [--quick] [--variants kstate,static,spark]

Writes ``bench/results/enrichment.json`` and ``.png`` (``enrichment-quick`` with ``--quick``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from typing import Any, Dict, List, Optional

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import RESULTS, ROOT, TMP, CpuMeter, add_spark_args, start_spark, unload_state_stores, wait_for_jar  # noqa: E402

GOAL_VS_STATIC = 0.7
GOAL_VS_FLOOR = 0.7  # the stream-static join plus the table's updates read and shuffled
GOAL_VS_SPARK = 2.0
VARIANTS = ("static", "floor", "kstate", "spark")
T0_MS = 1_700_000_000_000
EVENTS_SCHEMA = "key BIGINT, ts TIMESTAMP, event_id BIGINT, amount DOUBLE"
UPDATES_SCHEMA = "key BIGINT, uts TIMESTAMP, profile BIGINT"
JOIN_OPERATOR = "kstate_stream_table_join"
TABLE_OPERATOR = "kstate_table"


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="small input (200k events, 50k keys, 4 batches)")
    p.add_argument("--events", type=int, default=None, help="stream events (default 4M; --quick 200k)")
    p.add_argument("--keys", type=int, default=None, help="table keys (default 1M; --quick 50k)")
    p.add_argument("--versions", type=int, default=10, help="profile versions per key")
    p.add_argument("--files", type=int, default=None, help="micro-batches (default 20; --quick 4)")
    p.add_argument("--span", type=int, default=4000, help="event time covered, seconds")
    p.add_argument("--disorder", type=float, default=5.0, help="rows arrive up to this many s after their time")
    p.add_argument(
        "--late-rate",
        type=float,
        default=0.01,
        help="fraction of events and of updates arriving 30-120 s after their time",
    )
    p.add_argument("--grace", type=int, default=10, help="kstate join grace = Spark watermark delay, s")
    p.add_argument("--retention", type=int, default=None, help="kstate history retention, s (default: the whole span)")
    p.add_argument(
        "--footprint-retentions",
        default=None,
        help="comma-separated further retentions (s) for the footprint runs "
        "(default: span/10, span/3; 'none' skips them)",
    )
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--out", default=None, help="results file without extension")
    p.add_argument("--no-save", action="store_true")
    p.add_argument("--jfr", default=None, help="record the Spark JVM with Java Flight Recorder into this file")
    add_spark_args(p)
    p.add_argument(
        "--heap-state-bytes",
        default="4g",
        help="kstate's heap state budget (spark.sql.streaming.stateStore.kstate.heapStateBytes): "
        "the default (an eighth of the heap) does not hold 10M versions twice (the table "
        "source's and the join's), which then work in local RocksDB",
    )
    p.set_defaults(driver_memory="12g")  # every variant gets the same
    a = p.parse_args(argv)
    a.events = a.events or (200_000 if a.quick else 4_000_000)
    a.keys = a.keys or (50_000 if a.quick else 1_000_000)
    a.files = a.files or (4 if a.quick else 20)
    a.retention = a.retention or a.span
    if a.footprint_retentions is None:
        a.footprint_list = [a.span // 10, a.span // 3]
    elif a.footprint_retentions == "none":
        a.footprint_list = []
    else:
        a.footprint_list = [int(x) for x in a.footprint_retentions.split(",")]
    a.variant_list = [v.strip() for v in a.variants.split(",") if v.strip()]
    bad = set(a.variant_list) - set(VARIANTS)
    if bad:
        p.error(f"unknown variants {sorted(bad)}; choose from {VARIANTS}")
    if any(r < a.grace for r in [a.retention] + a.footprint_list):
        p.error("every history retention must be >= --grace (kstate: grace <= retention)")
    a.out = a.out or os.path.join(RESULTS, "enrichment-quick" if a.quick else "enrichment")
    return a


# ---------------------------------------------------------------------------------------------
# input


def generate(out: str, a: argparse.Namespace, seed: int = 15) -> Dict[str, Any]:
    """Writes events/ and updates/ (``a.files`` parquet files each, file i of both = micro-batch
    i) and truth.npy (per event: the profile valid at its time, -1 if none); returns stats."""
    rng = np.random.default_rng(seed)
    span_ms, v, k = a.span * 1000, a.versions, a.keys
    slot = span_ms / v
    # each key's first version early (in the first slot), the others at random times over the
    # span, in time order per key: profiles change at irregular intervals, so some gaps between
    # versions exceed any fixed range a range join looks back over
    first = rng.random((k, 1)) * slot
    later = np.sort(rng.random((k, v - 1)) * span_ms, axis=1)
    vts = (
        T0_MS
        + np.maximum(
            np.concatenate([first, later], axis=1), np.concatenate([first, first.repeat(v - 1, axis=1)], axis=1)
        )
    ).astype(np.int64)
    vts = np.maximum.accumulate(vts, axis=1) + np.arange(v)[None, :]  # strictly increasing per key
    ukey = np.repeat(np.arange(k, dtype=np.int64), v)
    uts = vts.reshape(-1)
    profile = ukey * v + np.tile(np.arange(v, dtype=np.int64), k)
    ekey = rng.integers(0, k, a.events).astype(np.int64)
    ets = (T0_MS + rng.random(a.events) * span_ms).astype(np.int64)

    def arrival(ts: np.ndarray) -> np.ndarray:
        delay = rng.integers(0, int(a.disorder * 1000) + 1, len(ts))
        late = rng.random(len(ts)) < a.late_rate
        delay[late] = rng.integers(30_000, 120_001, int(late.sum()))
        return ts + delay

    e_arr, u_arr = arrival(ets), arrival(uts)
    # the exact as-of answer: the key's last version at or before the event's time
    j = (vts[ekey] <= ets[:, None]).sum(axis=1) - 1
    truth = np.where(j >= 0, ekey * v + j, -1)
    bounds = np.quantile(np.concatenate([e_arr, u_arr]), np.linspace(0, 1, a.files + 1))
    bounds[-1] += 1
    os.makedirs(os.path.join(out, "events"))
    os.makedirs(os.path.join(out, "updates"))
    mtime0 = time.time() - 10 * a.files
    for name, arr, cols in (
        (
            "events",
            e_arr,
            {"key": ekey, "ts": ets, "event_id": np.arange(a.events, dtype=np.int64), "amount": rng.random(a.events)},
        ),
        ("updates", u_arr, {"key": ukey, "uts": uts, "profile": profile}),
    ):
        order = np.argsort(arr, kind="stable")
        arr = arr[order]
        for f in range(a.files):
            lo, hi = np.searchsorted(arr, [bounds[f], bounds[f + 1]], side="left")
            sel = order[lo:hi]
            table = pa.table(
                {
                    c: (
                        pa.array(x[sel] * 1000, type=pa.timestamp("us", tz="UTC"))
                        if c in ("ts", "uts")
                        else pa.array(x[sel])
                    )
                    for c, x in cols.items()
                }
            )
            path = os.path.join(out, name, f"part-{f:04d}.parquet")
            pq.write_table(table, path)
            os.utime(path, (mtime0 + 10 * f, mtime0 + 10 * f))
    np.save(os.path.join(out, "truth.npy"), truth)
    np.save(os.path.join(out, "event_times.npy"), ets)
    # final versions, for the stream-static join
    pq.write_table(
        pa.table(
            {
                "key": pa.array(np.arange(k, dtype=np.int64)),
                "profile": pa.array(np.arange(k, dtype=np.int64) * v + v - 1),
            }
        ),
        os.path.join(out, "final_profiles.parquet"),
    )
    behind_e = np.maximum.accumulate(ets[np.argsort(e_arr, kind="stable")])
    return {
        "events": a.events,
        "keys": k,
        "versions_per_key": v,
        "table_updates": int(len(uts)),
        "files": a.files,
        "span_s": a.span,
        "disorder_s": a.disorder,
        "late_rate": a.late_rate,
        "events_without_version": int((truth < 0).sum()),
        "events_behind_stream_time_gt_grace": int(
            ((behind_e - ets[np.argsort(e_arr, kind="stable")]) > a.grace * 1000).sum()
        ),
        "stream_time_end_ms": int(max(ets.max(), uts.max())),
        "update_times": vts,
    }


def versions_held(vts: np.ndarray, end_ms: int, retention_s: int) -> int:
    """Versions a Kafka versioned store holds at stream time `end_ms`: the latest of each key,
    and every older one whose validity (until the next version) reaches end - retention."""
    valid_to = np.concatenate([vts[:, 1:], np.full((vts.shape[0], 1), np.iinfo(np.int64).max)], axis=1)
    return int((valid_to >= end_ms - retention_s * 1000).sum())


# ---------------------------------------------------------------------------------------------
# the three variants


def build(spark, variant: str, data: str, a: argparse.Namespace, retention_s: int):
    from pyspark.sql import functions as F

    events = (
        spark.readStream.schema(EVENTS_SCHEMA).option("maxFilesPerTrigger", 1).parquet(os.path.join(data, "events"))
    )
    if variant == "static":
        final = spark.read.parquet(os.path.join(data, "final_profiles.parquet"))
        return events.join(final, "key", "inner").select("event_id", "key", "ts", "profile")
    updates = (
        spark.readStream.schema(UPDATES_SCHEMA).option("maxFilesPerTrigger", 1).parquet(os.path.join(data, "updates"))
    )
    if variant == "floor":
        final = spark.read.parquet(os.path.join(data, "final_profiles.parquet"))
        answers = events.join(final, "key", "inner").select("event_id", "key", "ts", "profile")
        dropped = (
            updates.repartition("key")
            .where(F.spark_partition_id() < 0)
            .select(F.lit(-1).cast("bigint").alias("event_id"), "key", F.col("uts").alias("ts"), "profile")
        )
        return answers.unionByName(dropped)
    if variant == "kstate":
        from kstate import VersionedTable

        table = updates.kstate.to_table("key", "uts", versioned=VersionedTable(history_retention=retention_s * 1000))
        return events.kstate.join(table, key="key", timestamp="ts", how="inner", grace=a.grace * 1000).select(
            "event_id", "key", "ts", "profile"
        )
    # Spark today: a time-range stream-stream join, then the latest match per event
    rng_s = 2 * a.span // a.versions  # two version slots: the last version before ts is in range
    e = events.withWatermark("ts", f"{a.grace} seconds")
    u = updates.withColumnRenamed("key", "ukey").withWatermark("uts", f"{a.grace} seconds")
    joined = e.join(
        u,
        (F.col("key") == F.col("ukey"))
        & (F.col("uts") <= F.col("ts"))
        & (F.col("uts") >= F.col("ts") - F.expr(f"INTERVAL {rng_s} SECONDS")),
        "inner",
    )
    return joined.groupBy("event_id", "key", "ts").agg(F.max_by("profile", "uts").alias("profile"))


def run(
    spark, variant: str, data: str, work: str, a: argparse.Namespace, retention_s: int, meter: Optional[CpuMeter]
) -> Dict[str, Any]:
    shutil.rmtree(work, ignore_errors=True)
    unload_state_stores(spark)
    spark.sparkContext._jvm.System.gc()
    out = os.path.join(work, "out")
    cpu0 = meter.snapshot() if meter else None
    t0 = time.perf_counter()
    q = (
        build(spark, variant, data, a, retention_s)
        .writeStream.outputMode("append")
        .format("parquet")
        .option("path", out)
        .option("checkpointLocation", os.path.join(work, "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    wall = time.perf_counter() - t0
    cpu = CpuMeter.delta(cpu0, meter.snapshot()) if meter else {}
    progress = [json.loads(p.json) for p in q.recentProgress]
    ops: Dict[str, Dict[str, Any]] = {}
    if progress:
        for op in progress[-1].get("stateOperators", []):
            name = op.get("operatorName", "?")
            ops[name] = {
                "memoryUsedBytes": op.get("memoryUsedBytes"),
                "numRowsTotal": op.get("numRowsTotal"),
                "customMetrics": op.get("customMetrics", {}),
            }
    unload_state_stores(spark)
    return {
        "wall_s": wall,
        "cpu": cpu,
        "out": out,
        "state_at_end": ops,
        "batches": sum(1 for p in progress if p.get("numInputRows", 0) > 0),
    }


def check(spark, out: str, truth: np.ndarray, settled: np.ndarray) -> Dict[str, Any]:
    """The variant's answers against the exact as-of ones: over all events, and over the
    `settled` ones (time at least range + 2 x grace before the input's end), which every variant
    has had the chance to emit: at the end of the input each still holds the last events back
    (kstate for its grace, Spark's aggregation until its watermark, delayed by the join's range,
    passes them)."""
    got = spark.read.parquet(out).select("event_id", "profile").toPandas()
    ids = got["event_id"].to_numpy()
    dup = int(len(ids) - len(np.unique(ids)))
    answer = np.full(len(truth), -2, dtype=np.int64)  # -2: no output row
    answer[ids] = got["profile"].to_numpy()

    def counts(sel: np.ndarray) -> Dict[str, int]:
        has = (truth >= 0) & sel
        return {
            "events": int(sel.sum()),
            "with_a_version": int(has.sum()),
            "right": int((answer == truth)[has].sum()),
            "wrong_version": int(((answer != truth) & (answer != -2))[has].sum()),
            "missing": int((answer == -2)[has].sum()),
            "answered_without_a_version": int((answer != -2)[sel & (truth < 0)].sum()),
        }

    return {
        "output_rows": int(len(ids)),
        "duplicate_event_rows": dup,
        "all": counts(np.ones(len(truth), dtype=bool)),
        "settled": counts(settled),
    }


# ---------------------------------------------------------------------------------------------


def main(argv: Optional[List[str]] = None) -> int:
    a = parse_args(argv)
    jar = wait_for_jar()
    tmp = os.path.join(TMP, f"enrichment-{os.getpid()}")
    data = os.path.join(tmp, "data")
    t0 = time.perf_counter()
    inp = generate(data, a)
    vts = inp.pop("update_times")
    truth = np.load(os.path.join(data, "truth.npy"))
    settled_before_ms = inp["stream_time_end_ms"] - (2 * a.span // a.versions + 2 * a.grace) * 1000
    settled = np.load(os.path.join(data, "event_times.npy")) <= settled_before_ms
    inp["settled_events"] = int(settled.sum())
    print(
        f"input: {inp['events']:,} events, {inp['table_updates']:,} table updates ({inp['keys']:,} keys x "
        f"{inp['versions_per_key']} versions) in {a.files} micro-batches, generated in "
        f"{time.perf_counter() - t0:.0f} s; {inp['events_behind_stream_time_gt_grace']:,} events more than "
        f"the grace ({a.grace} s) behind stream time",
        flush=True,
    )
    warm = os.path.join(tmp, "warm")
    generate(warm, argparse.Namespace(**{**vars(a), "events": 20_000, "keys": 5_000, "files": 2}), seed=16)
    spark = start_spark(
        a,
        "kstate-bench-enrichment",
        os.path.join(tmp, "spark-local"),
        conf={
            "spark.kstate.stateStore.providerClass": "io.kstate.KStateStoreProvider",
            "spark.sql.streaming.stateStore.kstate.heapStateBytes": a.heap_state_bytes,
        },
    )
    meter = CpuMeter(int(spark.sparkContext._jvm.ProcessHandle.current().pid()))
    runs: Dict[str, Dict[str, Any]] = {}
    footprint: List[Dict[str, Any]] = []
    try:
        for v in a.variant_list:
            run(spark, v, warm, os.path.join(tmp, f"warm-{v}"), a, a.retention, None)
        for v in a.variant_list:
            r = run(spark, v, data, os.path.join(tmp, f"run-{v}"), a, a.retention, meter)
            r["check"] = check(spark, r.pop("out"), truth, settled)
            r["events_per_s"] = a.events / r["wall_s"]
            runs[v] = r
            print(
                f"[{v}] {r['wall_s']:.1f} s, {r['events_per_s']:,.0f} events/s, {r['batches']} batches, "
                f"cpu {r['cpu'].get('own_cpu_s')} s (other processes {r['cpu'].get('foreign_cpu_s')} s); "
                f"answers {r['check']}",
                flush=True,
            )
        if "kstate" in runs:
            for ret in [a.retention] + a.footprint_list:
                r = (
                    runs["kstate"]
                    if ret == a.retention
                    else run(spark, "kstate", data, os.path.join(tmp, f"fp-{ret}"), a, ret, None)
                )
                footprint.append(footprint_row(r, ret, vts, inp["stream_time_end_ms"]))
                print(f"[footprint] retention {ret} s: {footprint[-1]}", flush=True)
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    rate = {v: r["events_per_s"] for v, r in runs.items()}
    ratios = {}
    if "kstate" in rate and "static" in rate:
        ratios["kstate_vs_static"] = rate["kstate"] / rate["static"]
    if "floor" in rate and "static" in rate:
        ratios["floor_vs_static"] = rate["floor"] / rate["static"]
    if "kstate" in rate and "floor" in rate:
        ratios["kstate_vs_floor"] = rate["kstate"] / rate["floor"]
    if "kstate" in rate and "spark" in rate:
        ratios["kstate_vs_spark_stream_stream"] = rate["kstate"] / rate["spark"]
    print(
        f"\nenrichment: {a.events:,} events x table of {a.keys:,} keys x {a.versions} versions "
        f"(grace {a.grace} s, history retention {a.retention} s):"
    )
    labels = {
        "static": "Spark stream-static join (final table, no time)",
        "floor": "stream-static + table updates read, shuffled",
        "kstate": "kstate versioned stream-table join (as-of)",
        "spark": "Spark stream-stream range join + max_by",
    }
    for v in a.variant_list:
        c = runs[v]["check"]["settled"]
        print(
            f"  {labels[v]:<50}: {rate[v]:10,.0f} events/s; of {c['with_a_version']:,} settled events with a "
            f"version: right {c['right']:,}, wrong version {c['wrong_version']:,}, missing {c['missing']:,}"
        )
    goals = {}
    if "floor_vs_static" in ratios:
        print(
            f"  floor / stream-static: {ratios['floor_vs_static']:.2f}x (what reading and shuffling the "
            f"table updates alone costs)"
        )
    if "kstate_vs_static" in ratios:
        goals["vs_static"] = ratios["kstate_vs_static"] >= GOAL_VS_STATIC
        print(
            f"  kstate / stream-static: {ratios['kstate_vs_static']:.2f}x (goal >= {GOAL_VS_STATIC}x: "
            f"{'met' if goals['vs_static'] else 'NOT met'})"
        )
    if "kstate_vs_floor" in ratios:
        goals["vs_floor"] = ratios["kstate_vs_floor"] >= GOAL_VS_FLOOR
        print(
            f"  kstate / floor: {ratios['kstate_vs_floor']:.2f}x (goal >= {GOAL_VS_FLOOR}x: "
            f"{'met' if goals['vs_floor'] else 'NOT met'})"
        )
    if "kstate_vs_spark_stream_stream" in ratios:
        goals["vs_spark"] = ratios["kstate_vs_spark_stream_stream"] >= GOAL_VS_SPARK
        print(
            f"  kstate / stream-stream: {ratios['kstate_vs_spark_stream_stream']:.2f}x (goal >= {GOAL_VS_SPARK}x: "
            f"{'met' if goals['vs_spark'] else 'NOT met'})"
        )
    for f in footprint:
        print(
            f"  footprint, retention {f['retention_s']:>6} s: {f['versions_held']:,} versions, "
            f"join store heap {f['join_heap_bytes']:,} B = {f['bytes_per_version']:.0f} B/version"
        )
    result = {
        "benchmark": "enrichment",
        "quick": a.quick,
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
        "jar": os.path.basename(jar),
        "input": inp,
        "parameters": {
            "grace_s": a.grace,
            "retention_s": a.retention,
            "shuffle_partitions": a.shuffle_partitions,
            "spark_range_s": 2 * a.span // a.versions,
            "conf": a.conf,
            "driver_memory": a.driver_memory,
            "kstate_heap_state_bytes": a.heap_state_bytes,
        },
        "runs": runs,
        "events_per_s": rate,
        "ratios": ratios,
        "goals": {
            "kstate_vs_static": GOAL_VS_STATIC,
            "kstate_vs_floor": GOAL_VS_FLOOR,
            "kstate_vs_spark": GOAL_VS_SPARK,
            "met": goals,
        },
        "footprint": footprint,
    }
    if not a.no_save:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out + ".json", "w") as f:
            json.dump(result, f, indent=1)
        write_chart(a.out + ".png", result)
        print(f"wrote {os.path.relpath(a.out + '.json', ROOT)} and .png")
    return 0


def footprint_row(r: Dict[str, Any], retention_s: int, vts: np.ndarray, end_ms: int) -> Dict[str, Any]:
    ops = r["state_at_end"]
    join = ops.get(JOIN_OPERATOR, {})
    heap = int(join.get("customMetrics", {}).get("kstateStoreHeapBytes", 0) or 0)
    held = versions_held(vts, end_ms, retention_s)
    return {
        "retention_s": retention_s,
        "versions_held": held,
        "join_heap_bytes": heap,
        "join_memory_used_bytes": join.get("memoryUsedBytes"),
        "table_source_heap_bytes": int(
            ops.get(TABLE_OPERATOR, {}).get("customMetrics", {}).get("kstateStoreHeapBytes", 0) or 0
        ),
        "bytes_per_version": heap / held if held else float("nan"),
    }


def write_chart(path: str, result: Dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    names = list(result["events_per_s"])
    ax1.bar(names, [result["events_per_s"][n] for n in names], color=["#999", "#bbb", "#2a7", "#c63"][: len(names)])
    ax1.set_ylabel("stream events / s")
    ax1.set_title("enrichment throughput")
    for i, n in enumerate(names):
        c = result["runs"][n]["check"]["settled"]
        ax1.annotate(
            f"as-of right {c['right'] / max(1, c['with_a_version']):.2%}", (i, 0), ha="center", va="bottom", fontsize=8
        )
    fp = result["footprint"]
    if fp:
        ax2.plot([f["retention_s"] for f in fp], [f["bytes_per_version"] for f in fp], "o-")
        ax2.set_xlabel("history retention, s")
        ax2.set_ylabel("join store heap bytes / version held")
        ax2.set_title("versioned store footprint")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
