#!/usr/bin/env python3
"""kstate deduplication benchmark: KIP-655 ``deduplicate_by_key`` vs Spark's built-in
``dropDuplicatesWithinWatermark`` (HDFS and RocksDB state store providers).

Run from the repository root::

    PYTHONPATH=python .venv/bin/python bench/run.py            # full run (~5-10 min on 2 cores)
    PYTHONPATH=python .venv/bin/python bench/run.py --quick    # smoke run (~1 min)

See bench/README.md for what is measured and how to read the results.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from collections import defaultdict
from typing import Any, Dict, List, Optional

import numpy as np
from common import (
    HDFS,
    KIND_NAMES,
    PROVIDER_KEY,
    RESULTS,
    ROCKSDB,
    SCHEMA,
    TMP,
    CpuMeter,
    add_input_args,
    add_spark_args,
    describe_input,
    environment,
    finish_args,
    fmt_int,
    generate,
    save_results,
    sha256_file,
    start_spark,
    summarize,
    unload_state_stores,
    wait_for_jar,
)

# variant -> (label, session state store provider set before the query starts)
VARIANTS = {
    "kstate": ("kstate deduplicate_by_key (kstate provider)", ROCKSDB),
    "builtin_hdfs": ("Spark dropDuplicatesWithinWatermark (HDFS)", HDFS),
    "builtin_rocksdb": ("Spark dropDuplicatesWithinWatermark (RocksDB)", ROCKSDB),
}
GOAL_RATIO = 1.5


# ---------------------------------------------------------------------------------------------
# arguments


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="smoke run (~1 min): small input, 1 repetition; writes dedup-quick.* and leaves docs/benchmarks.md alone",
    )
    add_input_args(p)
    p.add_argument(
        "--reps", type=int, default=None, help="timed repetitions per variant, order alternates (default 3; --quick 1)"
    )
    p.add_argument("--warmup-files", type=int, default=None, help="default 3; --quick 2")
    p.add_argument("--warmup-rows", type=int, default=None, help="rows per warm-up file (default 30000; --quick 5000)")
    p.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated subset of " + ", ".join(VARIANTS))
    p.add_argument(
        "--no-count", action="store_true", help="skip the (untimed) pass that counts output rows with foreachBatch"
    )
    add_spark_args(p)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument(
        "--out",
        default=None,
        help="results path without extension (default bench/results/dedup, --quick bench/results/dedup-quick)",
    )
    p.add_argument("--no-save", action="store_true", help="print only: no JSON, PNG or docs/benchmarks.md")
    p.add_argument("--keep-tmp", action="store_true", help="keep bench/results/tmp")
    p.add_argument(
        "--jfr",
        default=None,
        metavar="FILE",
        help="record a Java Flight Recorder profile of the whole run into FILE (summarise with bench/jfr_top.py)",
    )
    a = p.parse_args(argv)
    finish_args(p, a)
    if a.out is None:
        a.out = os.path.join(RESULTS, "dedup-quick" if a.quick else "dedup")
    a.variant_list = [v.strip() for v in a.variants.split(",") if v.strip()]
    bad = [v for v in a.variant_list if v not in VARIANTS]
    if bad or not a.variant_list:
        p.error(f"unknown variants {bad}; choose from {list(VARIANTS)}")
    return a


# ---------------------------------------------------------------------------------------------
# Spark queries


def build_query(spark, variant: str, data_dir: str, interval_s: int):
    src = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(data_dir)
    if variant == "kstate":
        return src.kstate.deduplicate_by_key(f"{interval_s} seconds", key="key", timestamp="ts")
    return src.withWatermark("ts", f"{interval_s} seconds").dropDuplicatesWithinWatermark(["key"])


def run_query(
    spark,
    variant: str,
    data_dir: str,
    ckpt: str,
    interval_s: int,
    counter: Optional[Dict[int, int]] = None,
    meter: Optional[CpuMeter] = None,
) -> Dict[str, Any]:
    """Runs one AvailableNow query to termination; noop sink unless `counter` is given."""
    from pyspark.sql import functions as F

    shutil.rmtree(ckpt, ignore_errors=True)
    unload_state_stores(spark)
    spark.conf.set(PROVIDER_KEY, VARIANTS[variant][1])
    spark.sparkContext._jvm.System.gc()
    q = None
    cpu0 = meter.snapshot() if meter else None
    t0 = time.perf_counter()
    try:
        df = build_query(spark, variant, data_dir, interval_s)
        w = df.writeStream.option("checkpointLocation", ckpt).trigger(availableNow=True)
        if counter is None:
            w = w.format("noop")
        else:

            def count_batch(bdf, _batch_id):
                for r in bdf.groupBy("kind").agg(F.count(F.lit(1)).alias("n")).collect():
                    counter[r["kind"]] += r["n"]

            w = w.foreachBatch(count_batch)
        q = w.start()
        q.awaitTermination()
        wall = time.perf_counter() - t0
        error = None
    except Exception as e:  # keep going with the other variants; report the exact message
        wall = time.perf_counter() - t0
        error = f"{type(e).__name__}: {e}"
    cpu = CpuMeter.delta(cpu0, meter.snapshot()) if meter else {}
    progress = [json.loads(p.json) for p in q.recentProgress] if q is not None else []
    if q is not None and q.isActive:
        q.stop()
    # Close this query's state stores now; the checkpoint stays until the final cleanup, so
    # Spark's maintenance thread never works on a deleted directory.
    unload_state_stores(spark)
    return {"wall_s": wall, "error": error, "progress": progress, "cpu": cpu}


# ---------------------------------------------------------------------------------------------
# output


def write_chart(path: str, result: Dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    vs = [v for v in result["variants"] if result["variants"][v]["rows_per_s_median"]]
    if not vs:
        return
    short = {
        "kstate": "kstate\ndeduplicate_by_key\n(RocksDB)",
        "builtin_hdfs": "built-in\ndropDuplicatesWithinWatermark\n(HDFS)",
        "builtin_rocksdb": "built-in\ndropDuplicatesWithinWatermark\n(RocksDB)",
    }
    labels = [short[v] for v in vs]
    med = [result["variants"][v]["rows_per_s_median"] for v in vs]
    colors = {"kstate": "#2a7fb8", "builtin_hdfs": "#999999", "builtin_rocksdb": "#666666"}
    fig, axes = plt.subplots(1, 2, figsize=(13, 6), gridspec_kw={"width_ratios": [3, 2]})
    ax = axes[0]
    bars = ax.bar(range(len(vs)), med, color=[colors[v] for v in vs])
    for i, v in enumerate(vs):
        reps = [r for r in result["variants"][v]["rows_per_s_reps"] if r]
        ax.scatter([i] * len(reps), reps, color="black", s=12, zorder=3)
        note = f"{med[i]:,.0f} rows/s"
        ratio = result["ratios"].get(v)
        if ratio:
            note += f"\nkstate / this = {ratio:.2f}x"
        ax.annotate(
            note,
            (bars[i].get_x() + bars[i].get_width() / 2, max([med[i]] + reps)),
            ha="center",
            va="bottom",
            fontsize=9,
            xytext=(0, 3),
            textcoords="offset points",
        )
    ax.set_xticks(range(len(vs)), labels, fontsize=8)
    ax.set_ylabel("input rows / s (median of reps; dots = reps)")
    top = max(max([med[i]] + [r for r in result["variants"][v]["rows_per_s_reps"] if r]) for i, v in enumerate(vs))
    ax.set_ylim(0, top * 1.25)
    ax.set_title("Streaming dedup throughput (AvailableNow, noop sink)")

    ax = axes[1]
    counted = [v for v in vs if result["variants"][v].get("output_by_kind")]
    if counted:
        bottom = np.zeros(len(counted))
        inp = result["input"]["by_kind"]
        for name in KIND_NAMES.values():
            vals = np.array([result["variants"][v]["output_by_kind"].get(name, 0) for v in counted])
            ax.bar(range(len(counted)), vals, bottom=bottom, label=f"{name} (input {inp[name]:,})")
            bottom += vals
        ax.set_xticks(
            range(len(counted)),
            [VARIANTS[v][0].split(" (")[1].rstrip(")") if v != "kstate" else "kstate" for v in counted],
        )
        ax.set_ylabel("output rows")
        ax.set_ylim(0, result["input"]["rows"] * 1.05)
        ax.axhline(result["input"]["rows"], color="black", lw=0.8, ls="--")
        ax.set_title("Output rows by ground-truth kind (dashed: input rows)")
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=1)
    else:
        ax.axis("off")
    e = result["environment"]
    fig.suptitle(
        f"{result['input']['rows']:,} rows in {result['input']['files']} micro-batches, "
        f"{result['parameters']['keys']:,} keys, interval {result['parameters']['interval_s']} s "
        f"| Spark {e['spark_version']}, {e['cpu_count']} CPUs, {e['date_utc'][:10]}",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------


def main(argv: Optional[List[str]] = None) -> int:
    a = parse_args(argv)
    t_start = time.perf_counter()
    os.makedirs(TMP, exist_ok=True)
    run_tmp = os.path.join(TMP, f"run-{os.getpid()}")
    data_dir, warm_dir = os.path.join(run_tmp, "data"), os.path.join(run_tmp, "warmup")
    ckpt_root = os.path.join(run_tmp, "ckpt")
    spark = None
    try:
        t = time.perf_counter()
        inp = generate(data_dir, a.files, a.rows_per_file, a, a.seed)
        generate(warm_dir, a.warmup_files, a.warmup_rows, a, a.seed + 1)
        gen_s = time.perf_counter() - t
        print(describe_input(inp, gen_s, a.interval), flush=True)

        jar = wait_for_jar()
        spark = start_spark(a)
        env = environment(spark, a, jar)
        try:
            jvm_pid = int(spark.sparkContext._jvm.ProcessHandle.current().pid())
        except Exception:
            jvm_pid = None
        meter = CpuMeter(jvm_pid)
        busy = meter.idle_check()
        env["other_processes_cpu_fraction_at_start"] = round(busy, 3)
        env["loadavg_at_start"] = os.getloadavg() if hasattr(os, "getloadavg") else None
        if busy > 0.1:
            print(
                f"WARNING: other processes are using {100 * busy:.0f}% of the CPUs; "
                "the numbers will be noisy (see foreign_cpu_s per run in the JSON)",
                flush=True,
            )
        print(
            f"Spark {spark.version} ({spark.sparkContext.master}), {env['cpu_count']} CPUs, "
            f"Java {env['java_version']}, kstate jar sha256 {env['kstate_jar_sha256'][:12]}",
            flush=True,
        )

        # warm-up: every variant once on a small input (JIT, class loading, RocksDB native libs)
        warm = {}
        for v in a.variant_list:
            r = run_query(spark, v, warm_dir, os.path.join(ckpt_root, f"warmup-{v}"), a.interval)
            warm[v] = {"wall_s": round(r["wall_s"], 2), "error": r["error"]}
            print(f"warm-up {v:16s} {r['wall_s']:6.1f} s" + (f"  ERROR {r['error']}" if r["error"] else ""), flush=True)

        # timed runs: same input, fresh checkpoint each, order alternates between repetitions
        runs: Dict[str, List[Dict[str, Any]]] = defaultdict(list)
        for rep in range(a.reps):
            order = a.variant_list if rep % 2 == 0 else list(reversed(a.variant_list))
            for v in order:
                r = run_query(spark, v, data_dir, os.path.join(ckpt_root, f"{v}-{rep}"), a.interval, meter=meter)
                s = summarize(r, inp["rows"])
                s["rep"], s["order"] = rep, order.index(v)
                s["progress"] = r["progress"]
                runs[v].append(s)
                msg = (
                    f"rep {rep} {v:16s} {s['wall_s']:7.1f} s  {fmt_int(s['rows_per_s']):>9s} rows/s  "
                    f"{s['batches_with_data']} batches"
                )
                c = s["cpu"]
                if c.get("own_cpu_s") is not None:
                    msg += f"  cpu {c['own_cpu_s']:.0f} s"
                    if c["foreign_cpu_s"] > 0.1 * s["wall_s"] * (os.cpu_count() or 1):
                        msg += f"  WARNING: other processes used {c['foreign_cpu_s']:.0f} CPU-s during this run"
                if s["input_rows_in_progress"] != inp["rows"] and not r["error"]:
                    msg += f"  WARNING: progress reports {s['input_rows_in_progress']:,} input rows"
                print(msg + (f"\n  ERROR {r['error']}" if r["error"] else ""), flush=True)

        # untimed pass: output rows per ground-truth kind, via foreachBatch
        counts: Dict[str, Dict[str, Any]] = {}
        if not a.no_count:
            for v in a.variant_list:
                c: Dict[int, int] = defaultdict(int)
                r = run_query(spark, v, data_dir, os.path.join(ckpt_root, f"count-{v}"), a.interval, c)
                counts[v] = {
                    "by_kind": {KIND_NAMES[k]: int(c.get(k, 0)) for k in KIND_NAMES},
                    "total": int(sum(c.values())),
                    "error": r["error"],
                    "wall_s": round(r["wall_s"], 2),
                }
                print(
                    f"count   {v:16s} {counts[v]['total']:,} output rows ({r['wall_s']:.1f} s, untimed)"
                    + (f"  ERROR {r['error']}" if r["error"] else ""),
                    flush=True,
                )

        result = assemble(a, inp, env, warm, runs, counts)
        sha_end = sha256_file(jar)
        if sha_end != env["kstate_jar_sha256"]:
            env["kstate_jar_sha256_at_end"] = sha_end
            print(
                f"WARNING: the kstate jar was replaced during the run (now sha256 "
                f"{str(sha_end)[:12]}); this run's JVM used the jar it loaded at start "
                f"({env['kstate_jar_sha256'][:12]})",
                flush=True,
            )
        result["total_wall_s"] = round(time.perf_counter() - t_start, 1)
        report(result)
        save_results(a, result, write_chart, "dedup", VARIANTS)
        errors = [s["error"] for rs in runs.values() for s in rs if s["error"]]
        errors += [w["error"] for w in warm.values() if w["error"]]
        print(f"total {time.perf_counter() - t_start:.0f} s")
        return 1 if errors else 0
    finally:
        if spark is not None:
            spark.stop()
        if not a.keep_tmp:
            shutil.rmtree(run_tmp, ignore_errors=True)
            shutil.rmtree(os.path.join(TMP, "spark-local"), ignore_errors=True)
            try:
                os.rmdir(TMP)
            except OSError:
                pass


def assemble(a, inp, env, warm, runs, counts) -> Dict[str, Any]:
    variants: Dict[str, Any] = {}
    for v in a.variant_list:
        rs = runs.get(v, [])
        rates = [s["rows_per_s"] for s in rs]
        ok = [r for r in rates if r]
        variants[v] = {
            "label": VARIANTS[v][0],
            "session_provider": VARIANTS[v][1],
            "rows_per_s_reps": rates,
            "rows_per_s_median": round(statistics.median(ok), 1) if ok and len(ok) == len(rates) else None,
            "rows_per_s_best": max(ok) if ok else None,
            "own_cpu_s_reps": [(s.get("cpu") or {}).get("own_cpu_s") for s in rs],
            "foreign_cpu_s_reps": [(s.get("cpu") or {}).get("foreign_cpu_s") for s in rs],
            "wall_s_reps": [s["wall_s"] for s in rs],
            "output_rows": counts.get(v, {}).get("total"),
            "output_by_kind": counts.get(v, {}).get("by_kind"),
            "count_pass": counts.get(v),
            "runs": rs,
        }
    k = variants.get("kstate", {}).get("rows_per_s_median")
    ratios = {
        v: (round(k / variants[v]["rows_per_s_median"], 3) if k and variants[v]["rows_per_s_median"] else None)
        for v in variants
        if v != "kstate"
    }
    kb = variants.get("kstate", {}).get("rows_per_s_best")
    ratios_best = {
        v: (round(kb / variants[v]["rows_per_s_best"], 3) if kb and variants[v]["rows_per_s_best"] else None)
        for v in variants
        if v != "kstate"
    }
    checks = [r for r in ratios.values()]
    return {
        "benchmark": "kstate deduplicate_by_key vs Spark dropDuplicatesWithinWatermark",
        "parameters": {
            "quick": a.quick,
            "files": a.files,
            "rows_per_file": a.rows_per_file,
            "keys": a.keys,
            "dup_rate": a.dup_rate,
            "late_rate": a.late_rate,
            "max_disorder_s": a.max_disorder,
            "resend_delay_s": list(a.resend_delay),
            "event_rate_per_s": a.event_rate,
            "interval_s": a.interval,
            "watermark_delay_s": a.interval,
            "shuffle_partitions": a.shuffle_partitions,
            "reps": a.reps,
            "warmup_files": a.warmup_files,
            "warmup_rows": a.warmup_rows,
            "seed": a.seed,
            "extra_conf": a.conf,
            "master": a.master,
            "driver_memory": a.driver_memory,
            "source": "parquet files, maxFilesPerTrigger=1, Trigger.AvailableNow",
            "timed_sink": "noop",
            "count_sink": "foreachBatch (groupBy kind count), untimed",
            "rows_per_s": "input rows / wall time from start() to the end of awaitTermination()",
        },
        "input": inp,
        "environment": env,
        "warmup": warm,
        "variants": variants,
        "ratios": ratios,
        "ratios_best_of_reps": ratios_best,
        "goal": {
            "ratio": GOAL_RATIO,
            "met": bool(checks) and all(r is not None and r >= GOAL_RATIO for r in checks),
            "per_variant": {v: (r is not None and r >= GOAL_RATIO) for v, r in ratios.items()},
        },
    }


def report(result: Dict[str, Any]) -> str:
    vs = result["variants"]
    head = (
        f"{'variant':46s} {'rows/s':>9s} {'reps':>25s} {'best':>9s} {'kstate/x':>8s} {'CPU s':>9s} {'output rows':>11s}"
    )
    rows = [head, "-" * len(head)]
    for v, d in vs.items():
        reps = "/".join(fmt_int(r) for r in d["rows_per_s_reps"])
        ratio = "1.00" if v == "kstate" else (f"{result['ratios'][v]:.2f}" if result["ratios"].get(v) else "-")
        cpu = "/".join(fmt_int(c) for c in d.get("own_cpu_s_reps", []))
        rows.append(
            f"{d['label']:46s} {fmt_int(d['rows_per_s_median']):>9s} {reps:>25s} "
            f"{fmt_int(d.get('rows_per_s_best')):>9s} {ratio:>8s} {cpu:>9s} "
            f"{fmt_int(d['output_rows']):>11s}"
        )
    rows.append(
        "rows/s: median of the repetitions (best: fastest one); kstate/x: kstate's median / "
        "this median; CPU s: CPU time of the benchmark's processes per repetition"
    )
    table = "\n".join(rows)
    noisy = [
        f"{v} rep {s['rep']} ({s['cpu']['foreign_cpu_s']:.0f} CPU-s)"
        for v, d in vs.items()
        for s in d["runs"]
        if (s.get("cpu") or {}).get("foreign_cpu_s") is not None
        and s["cpu"]["foreign_cpu_s"] > 0.1 * s["wall_s"] * (os.cpu_count() or 1)
    ]
    if noisy:
        table += (
            "\nWARNING: other processes used >10% of the CPUs during: "
            + ", ".join(noisy)
            + " -- rerun on an idle machine"
        )
    print("\n" + table)
    for v, r in result["ratios"].items():
        rb = result["ratios_best_of_reps"].get(v)
        print(
            f"kstate vs {VARIANTS[v][0]}: {('%.2fx' % r) if r else 'n/a'} "
            f"(best of reps: {('%.2fx' % rb) if rb else 'n/a'}) "
            f"-> goal >= {GOAL_RATIO}x {'met' if r and r >= GOAL_RATIO else 'NOT met'}"
        )
    if result["ratios"]:
        print(
            f"GOAL (kstate >= {GOAL_RATIO}x built-in, both providers): {'MET' if result['goal']['met'] else 'NOT MET'}"
        )

    # where the time goes: progress durationMs and state operator timings, per run (summed)
    print(
        "\nTime breakdown, median rep (sums over batches; state operator times are summed over "
        "tasks, i.e. CPU-ish time across partitions):"
    )
    print(
        f"{'variant':16s} {'wall s':>7s} {'trigger':>8s} {'addBatch':>8s} {'planning':>8s} "
        f"{'latestOff':>9s} {'walCommit':>9s} {'commitOff':>9s} | {'op update':>9s} {'op remove':>9s} "
        f"{'op commit':>9s} {'state rows':>10s}"
    )
    for v, d in vs.items():
        ok = [s for s in d["runs"] if s["rows_per_s"]]
        if not ok:
            continue
        s = sorted(ok, key=lambda s: s["wall_s"])[(len(ok) - 1) // 2]
        m, op = s["durationMs_sum"], s["state_operator"]
        print(
            f"{v:16s} {s['wall_s']:7.1f} {m.get('triggerExecution', 0) / 1e3:8.1f} "
            f"{m.get('addBatch', 0) / 1e3:8.1f} {m.get('queryPlanning', 0) / 1e3:8.1f} "
            f"{m.get('latestOffset', 0) / 1e3:9.1f} {m.get('walCommit', 0) / 1e3:9.1f} "
            f"{m.get('commitOffsets', 0) / 1e3:9.1f} | {op.get('allUpdatesTimeMs', 0) / 1e3:9.1f} "
            f"{op.get('allRemovalsTimeMs', 0) / 1e3:9.1f} {op.get('commitTimeMs', 0) / 1e3:9.1f} "
            f"{op.get('numRowsTotal_last', 0):10,d}"
        )
    print("(seconds; 'op update' includes reading the shuffle input, which the operators consume lazily)")
    for v, d in vs.items():
        ok = [s for s in d["runs"] if s["rows_per_s"]]
        if ok:
            s = ok[0]
            op = s["state_operator"]
            cm = op.get("customMetrics_sum", {})
            keep = {k: cm[k] for k in ("duplicatesDropped", "lateRecordsForwarded", "nullKeysForwarded") if k in cm}
            if "storedEntries" in op.get("customMetrics_last", {}):
                keep["storedEntries (last batch)"] = op["customMetrics_last"]["storedEntries"]
            print(
                f"  {v}: operator {op.get('operatorName')}, numRowsDroppedByWatermark "
                f"{op.get('numRowsDroppedByWatermark', 0):,}, numRowsUpdated {op.get('numRowsUpdated', 0):,}, "
                f"numRowsRemoved {op.get('numRowsRemoved', 0):,}, max state rows {op.get('numRowsTotal_max', 0):,}"
                + (f", {keep}" if keep else "")
                + f", per-batch processedRowsPerSecond median {fmt_int(s['processedRowsPerSecond_median'])}"
                + (f", sink numOutputRows {s['sink_output_rows']:,}" if s["sink_output_rows"] is not None else "")
            )
            if "rocksdbGetCount" in cm:
                rows = max(s["input_rows_in_progress"], 1)
                print(
                    f"    RocksDB per input row: {cm['rocksdbGetCount'] / rows:.2f} gets, "
                    f"{cm['rocksdbPutCount'] / rows:.2f} puts; get {cm.get('rocksdbGetLatency', 0) / 1e3:.1f} s, "
                    f"put {cm.get('rocksdbPutLatency', 0) / 1e3:.1f} s, commit flush "
                    f"{cm.get('rocksdbCommitFlushLatency', 0) / 1e3:.1f} s, checkpoint "
                    f"{cm.get('rocksdbCommitCheckpointLatency', 0) / 1e3:.1f} s, file sync "
                    f"{cm.get('rocksdbCommitFileSyncLatencyMs', 0) / 1e3:.1f} s (task-time sums); "
                    f"{cm.get('rocksdbTotalBytesWritten', 0) / 1e6:.0f} MB written"
                )

    # semantic difference
    counted = {v: d for v, d in vs.items() if d["output_rows"] is not None}
    if counted:
        inp = result["input"]["by_kind"]
        print("\nOutput rows (untimed foreachBatch pass), by ground-truth kind of the input row:")
        print(f"{'':46s} " + " ".join(f"{n:>20s}" for n in KIND_NAMES.values()) + f" {'total':>10s}")
        print(
            f"{'input':46s} "
            + " ".join(f"{inp[n]:>20,}" for n in KIND_NAMES.values())
            + f" {result['input']['rows']:>10,}"
        )
        for d in counted.values():
            print(
                f"{d['label']:46s} "
                + " ".join(f"{d['output_by_kind'][n]:>20,}" for n in KIND_NAMES.values())
                + f" {d['output_rows']:>10,}"
            )
        if "kstate" in counted and len(counted) > 1:
            p = result["parameters"]
            print(
                f"SEMANTIC DIFFERENCE: kstate (KIP-655) drops a record only if the same key was "
                f"forwarded within {p['interval_s']} s of ITS timestamp (first wins, judged against each "
                f"partition's stream time, record by record) and forwards late non-duplicates; "
                f"dropDuplicatesWithinWatermark drops rows older than the watermark (max event time of "
                f"earlier batches - {p['interval_s']} s) and drops ANY later row of a key until the "
                f"watermark passes first-ts + {p['interval_s']} s, which with "
                f"{result['input']['event_time_per_file_s']:.0f} s of event time per micro-batch "
                f"also swallows genuine repeat events of the key, so the counts differ."
            )
        hv = [counted[v]["output_rows"] for v in ("builtin_hdfs", "builtin_rocksdb") if v in counted]
        if len(hv) == 2 and hv[0] != hv[1]:
            print(f"WARNING: the built-in gives different counts with HDFS ({hv[0]:,}) and RocksDB ({hv[1]:,})")
    for v, d in vs.items():
        for s in d["runs"]:
            if (
                s["sink_output_rows"] is not None
                and d["output_rows"] is not None
                and s["sink_output_rows"] != d["output_rows"]
            ):
                print(
                    f"WARNING: {v} rep {s['rep']}: noop sink numOutputRows {s['sink_output_rows']:,} != "
                    f"counted {d['output_rows']:,}"
                )
    return table


if __name__ == "__main__":
    sys.exit(main())
