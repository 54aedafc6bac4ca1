#!/usr/bin/env python3
"""kstate state store provider benchmark: Spark's own streaming operators and kstate's
``deduplicate_by_key`` on the HDFS, RocksDB and kstate (``io.kstate.KStateStoreProvider``)
state store providers.

Run from the repository root::

    PYTHONPATH=python .venv/bin/python bench/providers.py            # full run
    PYTHONPATH=python .venv/bin/python bench/providers.py --quick    # smoke run (~2-3 min)

Every variant runs in its own Python process with its own Spark JVM, so the provider setting
applies to a fresh session. See bench/README.md ("Provider benchmark").
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
import zipfile
from collections import defaultdict
from typing import Any, Dict, List, Optional

from common import (
    HDFS,
    KSTATE_PROVIDER_KEY,
    PROVIDER_KEY,
    RESULTS,
    ROCKSDB,
    ROOT,
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

KSTATE_STORE = "io.kstate.KStateStoreProvider"

# workload -> label, query (for the report), and what must agree across providers
WORKLOADS = {
    "window": {
        "label": "windowed count, append",
        "query": 'withWatermark("ts", "{interval} seconds").groupBy(window("ts", "{window} seconds"), '
        '"key").count()',  # append mode
        "must_match": ("rows", "sum_count", "digest"),
    },
    "dropdup": {
        "label": "dropDuplicatesWithinWatermark",
        "query": 'withWatermark("ts", "{interval} seconds").dropDuplicatesWithinWatermark(["key"])',
        "must_match": ("rows",),
    },
    "kdedup": {
        "label": "kstate deduplicate_by_key",
        "query": 'kstate.deduplicate_by_key("{interval} seconds", key="key", timestamp="ts")',
        "must_match": ("rows",),
    },
}
PROVIDER_NAMES = {"hdfs": "HDFS", "rocksdb": "RocksDB", "kstate": "kstate"}

# variant -> (workload, provider slot, the setting that selects the provider)
VARIANTS = {
    "window_hdfs": ("window", "hdfs", PROVIDER_KEY),
    "window_rocksdb": ("window", "rocksdb", PROVIDER_KEY),
    "window_kstate": ("window", "kstate", PROVIDER_KEY),
    "dropdup_hdfs": ("dropdup", "hdfs", PROVIDER_KEY),
    "dropdup_rocksdb": ("dropdup", "rocksdb", PROVIDER_KEY),
    "dropdup_kstate": ("dropdup", "kstate", PROVIDER_KEY),
    # HDFS cannot back kstate operators (KSTATE_UNSUPPORTED_STATE_PROVIDER): no kdedup_hdfs
    "kdedup_rocksdb": ("kdedup", "rocksdb", KSTATE_PROVIDER_KEY),
    "kdedup_kstate": ("kdedup", "kstate", KSTATE_PROVIDER_KEY),
}

# the issue's goals: kstate's provider vs each of Spark's, per workload
GOALS = {"rocksdb": 1.5, "hdfs": 1.0}


# ---------------------------------------------------------------------------------------------
# arguments


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: small input, 1 repetition; writes providers-quick.* and leaves docs/benchmarks.md alone",
    )
    add_input_args(p)
    p.add_argument("--window", type=int, default=60, help="tumbling window of the count, seconds")
    p.add_argument(
        "--reps",
        type=int,
        default=None,
        help="timed repetitions per variant, each in a fresh process; the variant order "
        "alternates (default 3; --quick 1)",
    )
    p.add_argument("--warmup-files", type=int, default=None, help="default 3; --quick 2")
    p.add_argument("--warmup-rows", type=int, default=None, help="rows per warm-up file (default 30000; --quick 5000)")
    p.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated subset of " + ", ".join(VARIANTS))
    p.add_argument(
        "--kstate-provider",
        default=KSTATE_STORE,
        help="class name of kstate's state store provider; its variants are skipped "
        "when the kstate jar does not contain it",
    )
    p.add_argument(
        "--no-verify",
        action="store_true",
        help="skip the untimed pass that collects each variant's output (count and "
        "digest) for the cross-provider check; the timed runs' sink row counts "
        "are still compared",
    )
    add_spark_args(p)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument(
        "--worker-timeout",
        type=int,
        default=3600,
        help="seconds before a variant's process is killed and recorded as failed",
    )
    p.add_argument(
        "--out",
        default=None,
        help="results path without extension (default bench/results/providers, --quick bench/results/providers-quick)",
    )
    p.add_argument("--no-save", action="store_true", help="print only: no JSON, PNG or docs/benchmarks.md")
    p.add_argument("--keep-tmp", action="store_true", help="keep bench/results/tmp")
    a = p.parse_args(argv)
    finish_args(p, a)
    if a.out is None:
        a.out = os.path.join(RESULTS, "providers-quick" if a.quick else "providers")
    a.variant_list = [v.strip() for v in a.variants.split(",") if v.strip()]
    bad = [v for v in a.variant_list if v not in VARIANTS]
    if bad or not a.variant_list:
        p.error(f"unknown variants {bad}; choose from {list(VARIANTS)}")
    if a.reps < 1:
        p.error("--reps must be at least 1")
    return a


def short(error: Optional[str], limit: int = 300) -> str:
    """First line of an error message and its innermost JVM cause (py4j appends the whole stack
    trace to the message)."""
    lines = [x.strip() for x in (error or "").strip().splitlines() if x.strip()]
    if not lines:
        return ""
    causes = [x for x in lines if x.startswith("Caused by:")]
    text = lines[0] + (f" ... {causes[-1]}" if causes else "")
    return text if len(text) <= limit else text[:limit] + " ..."


def provider_class(slot: str, a: argparse.Namespace) -> str:
    return {"hdfs": HDFS, "rocksdb": ROCKSDB, "kstate": a.kstate_provider}[slot]


def class_in_jar(jar: str, cls: str) -> bool:
    try:
        with zipfile.ZipFile(jar) as z:
            return cls.replace(".", "/") + ".class" in set(z.namelist())
    except (OSError, zipfile.BadZipFile):
        return False


# ---------------------------------------------------------------------------------------------
# worker: one variant in a fresh process and Spark session (warm-up, timed run, check pass)


def build_query(spark, workload: str, data_dir: str, interval_s: int, window_s: int):
    from pyspark.sql import functions as F

    src = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(data_dir)
    if workload == "window":
        return (
            src.withWatermark("ts", f"{interval_s} seconds")
            .groupBy(F.window("ts", f"{window_s} seconds"), "key")
            .count()
        )
    if workload == "dropdup":
        return src.withWatermark("ts", f"{interval_s} seconds").dropDuplicatesWithinWatermark(["key"])
    if workload == "kdedup":
        return src.kstate.deduplicate_by_key(f"{interval_s} seconds", key="key", timestamp="ts")
    raise ValueError(workload)


def output_check_columns(workload: str):
    """Output columns a row's digest covers."""
    from pyspark.sql import functions as F

    if workload == "window":
        return [F.col("window.start"), F.col("window.end"), F.col("key"), F.col("count")]
    return [F.col("key"), F.col("ts"), F.col("event_id")]


def run_query(
    spark,
    workload: str,
    data_dir: str,
    ckpt: str,
    spec: Dict[str, Any],
    check: Optional[List[Dict[str, Any]]] = None,
    meter: Optional[CpuMeter] = None,
) -> Dict[str, Any]:
    """One AvailableNow query to termination; noop sink, or with `check` a foreachBatch sink that
    appends each batch's output count and digest to `check` (one Spark job per batch)."""
    from pyspark.sql import functions as F

    shutil.rmtree(ckpt, ignore_errors=True)
    unload_state_stores(spark)
    spark.sparkContext._jvm.System.gc()
    q = None
    cpu0 = meter.snapshot() if meter else None
    t0 = time.perf_counter()
    try:
        df = build_query(spark, workload, data_dir, spec["interval"], spec["window"])
        w = df.writeStream.outputMode("append").option("checkpointLocation", ckpt).trigger(availableNow=True)
        if check is None:
            w = w.format("noop")
        else:
            cols = output_check_columns(workload)
            aggs = [
                F.count(F.lit(1)).alias("rows"),
                # order-independent digest; decimal so that the sum cannot overflow
                F.sum(F.xxhash64(*cols).cast("decimal(38,0)")).alias("digest"),
            ]
            if workload == "window":
                aggs.append(F.sum("count").alias("sum_count"))

            def check_batch(bdf, batch_id):
                r = bdf.agg(*aggs).collect()[0].asDict()
                check.append(
                    {
                        "batch": int(batch_id),
                        "rows": int(r["rows"]),
                        "digest": int(r["digest"] or 0),
                        **({"sum_count": int(r["sum_count"] or 0)} if "sum_count" in r else {}),
                    }
                )

            w = w.foreachBatch(check_batch)
        q = w.start()
        q.awaitTermination()
        wall = time.perf_counter() - t0
        error = None
    except Exception as e:  # report the exact message; the parent records it as a failure
        wall = time.perf_counter() - t0
        error = f"{type(e).__name__}: {e}"[:4000]
    cpu = CpuMeter.delta(cpu0, meter.snapshot()) if meter else {}
    progress = [json.loads(p.json) for p in q.recentProgress] if q is not None else []
    if q is not None and q.isActive:
        q.stop()
    unload_state_stores(spark)
    return {"wall_s": wall, "error": error, "progress": progress, "cpu": cpu}


def worker(spec_path: str) -> int:
    with open(spec_path) as f:
        spec = json.load(f)
    a = argparse.Namespace(**spec["spark_args"])
    variant, workload = spec["variant"], spec["workload"]
    tag = f"[{variant} rep {spec['rep']}]"
    out: Dict[str, Any] = {"variant": variant, "rep": spec["rep"], "settings": spec["settings"]}
    spark = None
    try:
        spark = start_spark(
            a, app_name=f"kstate-bench-providers-{variant}", local_dir=spec["local_dir"], conf=spec["settings"]
        )
        if spec["want_env"]:
            out["environment"] = environment(spark, a, spec["jar"], extra_conf_keys=(PROVIDER_KEY,))
        try:
            jvm_pid = int(spark.sparkContext._jvm.ProcessHandle.current().pid())
        except Exception:
            jvm_pid = None
        meter = CpuMeter(jvm_pid)
        ckpt = spec["ckpt_dir"]

        r = run_query(spark, workload, spec["warm_dir"], os.path.join(ckpt, "warmup"), spec)
        out["warmup"] = {"wall_s": round(r["wall_s"], 2), "error": r["error"]}
        print(f"{tag} warm-up {r['wall_s']:.1f} s" + (f"  ERROR {short(r['error'])}" if r["error"] else ""), flush=True)
        if r["error"]:
            return 0

        r = run_query(spark, workload, spec["data_dir"], os.path.join(ckpt, "timed"), spec, meter=meter)
        s = summarize(r, spec["rows"])
        s["progress"] = r["progress"]
        out["timed"] = s
        msg = f"{tag} timed {s['wall_s']:.1f} s  {fmt_int(s['rows_per_s'])} rows/s  {s['batches_with_data']} batches"
        c = s["cpu"]
        if c.get("own_cpu_s") is not None:
            msg += f"  cpu {c['own_cpu_s']:.0f} s"
        print(msg + (f"  ERROR {short(r['error'])}" if r["error"] else ""), flush=True)

        if spec["verify"]:
            batches: List[Dict[str, Any]] = []
            r = run_query(spark, workload, spec["data_dir"], os.path.join(ckpt, "verify"), spec, check=batches)
            total = (
                {}
                if r["error"]
                else {
                    k: sum(b[k] for b in batches)
                    for k in ("rows", "digest", "sum_count")
                    if all(k in b for b in batches)
                }
            )
            out["verify"] = {
                "wall_s": round(r["wall_s"], 2),
                "error": r["error"],
                "total": {k: str(v) if k == "digest" else v for k, v in total.items()},
                "batches": [{k: str(v) if k == "digest" else v for k, v in b.items()} for b in batches],
            }
            print(
                f"{tag} check pass {r['wall_s']:.1f} s (untimed): {fmt_int(total.get('rows'))} output "
                "rows" + (f"  ERROR {short(r['error'])}" if r["error"] else ""),
                flush=True,
            )
    except Exception as e:
        out["error"] = f"{type(e).__name__}: {e}"[:4000]
    finally:
        if spark is not None:
            try:
                spark.stop()
            except Exception:
                pass
        with open(spec["result"], "w") as f:
            json.dump(out, f)
    return 0


# ---------------------------------------------------------------------------------------------
# parent: input, one process per (repetition, variant), checks, report


def run_worker(spec: Dict[str, Any], run_tmp: str, timeout_s: int) -> Dict[str, Any]:
    name = f"{spec['variant']}-{spec['rep']}"
    spec_path = os.path.join(run_tmp, f"{name}.spec.json")
    spec["result"] = os.path.join(run_tmp, f"{name}.result.json")
    log_path = os.path.join(run_tmp, f"{name}.stderr.log")
    with open(spec_path, "w") as f:
        json.dump(spec, f)
    t0 = time.perf_counter()
    problem = None
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker", spec_path],
            stdout=None,
            stderr=log,
            start_new_session=True,
        )
        try:
            rc = proc.wait(timeout=timeout_s)
            if rc != 0:
                problem = f"worker process exited with code {rc}"
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the worker and its Spark JVM: a group this script started
            proc.wait()
            problem = f"worker process killed after {timeout_s} s"
    res: Dict[str, Any] = {}
    try:
        with open(spec["result"]) as f:
            res = json.load(f)
    except (OSError, ValueError):
        problem = problem or "worker process wrote no result"
    if problem and not res.get("error"):
        res["error"] = problem
    res["process_wall_s"] = round(time.perf_counter() - t0, 1)
    if run_error(res):
        try:
            with open(log_path) as f:
                tail = f.read().splitlines()[-25:]
            print(f"--- last lines of {os.path.relpath(log_path, ROOT)} ---\n" + "\n".join(tail) + "\n---", flush=True)
        except OSError:
            pass
    # worker-local state is not needed any more (its JVM is gone)
    shutil.rmtree(spec["ckpt_dir"], ignore_errors=True)
    shutil.rmtree(spec["local_dir"], ignore_errors=True)
    return res


def main(argv: Optional[List[str]] = None) -> int:
    a = parse_args(argv)
    t_start = time.perf_counter()
    os.makedirs(TMP, exist_ok=True)
    run_tmp = os.path.join(TMP, f"providers-{os.getpid()}")
    data_dir, warm_dir = os.path.join(run_tmp, "data"), os.path.join(run_tmp, "warmup")
    try:
        t = time.perf_counter()
        inp = generate(data_dir, a.files, a.rows_per_file, a, a.seed)
        generate(warm_dir, a.warmup_files, a.warmup_rows, a, a.seed + 1)
        print(describe_input(inp, time.perf_counter() - t, a.interval), flush=True)

        jar = wait_for_jar()
        jar_sha = sha256_file(jar)
        has_kstate = class_in_jar(jar, a.kstate_provider)
        skipped: Dict[str, str] = {}
        if not has_kstate:
            reason = f"{a.kstate_provider} is not in the kstate jar ({os.path.relpath(jar, ROOT)}) yet"
            for v in a.variant_list:
                if VARIANTS[v][1] == "kstate":
                    skipped[v] = reason
            if skipped:
                print(f"SKIPPING {', '.join(skipped)}: {reason}", flush=True)
        busy = CpuMeter(None).idle_check()
        if busy > 0.1:
            print(
                f"WARNING: other processes are using {100 * busy:.0f}% of the CPUs; "
                "the numbers will be noisy (see foreign_cpu_s per run in the JSON)",
                flush=True,
            )

        runnable = [v for v in a.variant_list if v not in skipped]
        runs: Dict[str, List[Dict[str, Any]]] = defaultdict(list)
        env: Optional[Dict[str, Any]] = None
        for rep in range(a.reps):
            order = runnable if rep % 2 == 0 else list(reversed(runnable))
            for i, v in enumerate(order):
                workload, slot, key = VARIANTS[v]
                name = f"{v}-{rep}"
                spec = {
                    "variant": v,
                    "workload": workload,
                    "rep": rep,
                    "order": i,
                    "settings": {key: provider_class(slot, a)},
                    "spark_args": {
                        "master": a.master,
                        "driver_memory": a.driver_memory,
                        "shuffle_partitions": a.shuffle_partitions,
                        "conf": a.conf,
                    },
                    "jar": jar,
                    "data_dir": data_dir,
                    "warm_dir": warm_dir,
                    "rows": inp["rows"],
                    "interval": a.interval,
                    "window": a.window,
                    "ckpt_dir": os.path.join(run_tmp, "ckpt", name),
                    "local_dir": os.path.join(run_tmp, "spark-local", name),
                    "verify": rep == 0 and not a.no_verify,
                    "want_env": env is None,
                }
                res = run_worker(spec, run_tmp, a.worker_timeout)
                if env is None and res.get("environment"):
                    env = res.pop("environment")
                if res.get("error"):
                    print(f"[{v} rep {rep}] ERROR {short(res['error'])}", flush=True)
                runs[v].append(res)

        env = env or {}
        env["spark_conf_note"] = (
            "spark_conf is read from the first variant's session; each "
            "variant's provider setting is variants.<name>.setting"
        )
        env["kstate_jar_sha256"] = env.get("kstate_jar_sha256") or jar_sha
        env["other_processes_cpu_fraction_at_start"] = round(busy, 3)
        env["loadavg_at_start"] = os.getloadavg() if hasattr(os, "getloadavg") else None
        sha_end = sha256_file(jar)
        if sha_end != jar_sha:
            env["kstate_jar_sha256_at_end"] = sha_end
            print(
                f"WARNING: the kstate jar was replaced during the run (sha256 {str(jar_sha)[:12]} "
                f"at start, {str(sha_end)[:12]} now); later variants may have used the new one",
                flush=True,
            )

        result = assemble(a, inp, env, runs, skipped, has_kstate, jar)
        result["total_wall_s"] = round(time.perf_counter() - t_start, 1)
        report(result)
        save_results(a, result, write_chart, "providers", VARIANTS)
        print(f"total {time.perf_counter() - t_start:.0f} s")
        return 1 if result["failures"] else 0
    finally:
        if not a.keep_tmp:
            shutil.rmtree(run_tmp, ignore_errors=True)
            try:
                os.rmdir(TMP)
            except OSError:
                pass


# ---------------------------------------------------------------------------------------------
# results


def run_error(r: Dict[str, Any]) -> Optional[str]:
    for where in ("error", "warmup", "timed", "verify"):
        x = r.get(where)
        e = x if where == "error" else (x or {}).get("error")
        if e:
            return e if where == "error" else f"{where}: {e}"
    return None


def check_workload(workload: str, variants: Dict[str, Any]) -> Dict[str, Any]:
    """Do the providers agree on this workload's output? Compares the check pass totals (fields
    in must_match) and the timed runs' noop-sink row counts, within and across variants."""
    must = WORKLOADS[workload]["must_match"]
    vs = {v: d for v, d in variants.items() if d["workload"] == workload and d["status"] == "ok"}
    problems: List[str] = []
    notes: List[str] = []
    values: Dict[str, Dict[str, Any]] = {}
    for v, d in vs.items():
        tot = (d.get("check_pass") or {}).get("total") or {}
        values[v] = {k: tot.get(k) for k in ("rows", "sum_count", "digest") if k in tot}
        sinks = [s for s in d["sink_output_rows_reps"] if s is not None]
        values[v]["sink_rows_timed"] = sinks
        if "rows" in tot and any(s != tot["rows"] for s in sinks):
            problems.append(f"{v}: timed runs' sink numOutputRows {sinks} != check pass rows {tot['rows']:,}")
        if len(set(sinks)) > 1:
            problems.append(f"{v}: repetitions disagree on output rows {sinks}")
    checked = [v for v in vs if "rows" in values[v]]
    for k in must:
        seen = {v: values[v].get(k) for v in checked}
        if len(set(seen.values())) > 1:
            problems.append(f"{k} differ: " + ", ".join(f"{v}={x}" for v, x in seen.items()))
    if "digest" not in must:
        seen = {v: values[v].get("digest") for v in checked}
        if len(set(seen.values())) > 1:
            notes.append(
                "row digests differ (which row of a duplicate set is kept): "
                + ", ".join(f"{v}={x}" for v, x in seen.items())
            )
    if not checked:  # --no-verify: fall back to the timed runs' sink counts
        seen = {v: (values[v]["sink_rows_timed"] or [None])[0] for v in vs}
        if len(set(x for x in seen.values() if x is not None)) > 1:
            problems.append(
                "output rows (noop sink numOutputRows) differ: " + ", ".join(f"{v}={x}" for v, x in seen.items())
            )
    if len(checked) >= 2:
        first_diff = first_batch_difference({v: vs[v]["check_pass"]["batches"] for v in checked}, must)
        if first_diff and problems:
            notes.append(first_diff)
    compared = checked if checked else list(vs)
    return {
        "ok": not problems,
        "compared": compared,
        "must_match": list(must),
        "values": values,
        "problems": problems,
        "notes": notes,
        "meaningful": len(compared) >= 2,
    }


def first_batch_difference(batches: Dict[str, List[Dict[str, Any]]], must) -> Optional[str]:
    names = list(batches)
    ref = {b["batch"]: b for b in batches[names[0]]}
    for v in names[1:]:
        other = {b["batch"]: b for b in batches[v]}
        for bid in sorted(set(ref) | set(other)):
            x, y = ref.get(bid), other.get(bid)
            if x is None or y is None or any(x.get(k) != y.get(k) for k in must):
                return f"first differing micro-batch {bid}: {names[0]}={x} {v}={y}"
    return None


def assemble(a, inp, env, runs, skipped, has_kstate, jar) -> Dict[str, Any]:
    variants: Dict[str, Any] = {}
    for v in a.variant_list:
        workload, slot, key = VARIANTS[v]
        d: Dict[str, Any] = {
            "workload": workload,
            "provider": PROVIDER_NAMES[slot],
            "label": f"{WORKLOADS[workload]['label']} ({PROVIDER_NAMES[slot]})",
            "setting": {key: provider_class(slot, a)},
        }
        if v in skipped:
            d.update(status="skipped", reason=skipped[v])
            variants[v] = d
            continue
        rs = runs.get(v, [])
        errors = [f"rep {r.get('rep')}: {run_error(r)}" for r in rs if run_error(r)]
        timed = [r.get("timed") or {} for r in rs]
        rates = [t.get("rows_per_s") for t in timed]
        ok = [x for x in rates if x]
        check = next((r["verify"] for r in rs if r.get("verify")), None)
        d.update(
            {
                "status": "error" if errors else "ok",
                "errors": errors,
                "rows_per_s_reps": rates,
                "rows_per_s_median": round(statistics.median(ok), 1) if ok and len(ok) == len(rates) else None,
                "rows_per_s_best": max(ok) if ok else None,
                "wall_s_reps": [t.get("wall_s") for t in timed],
                "own_cpu_s_reps": [(t.get("cpu") or {}).get("own_cpu_s") for t in timed],
                "foreign_cpu_s_reps": [(t.get("cpu") or {}).get("foreign_cpu_s") for t in timed],
                "sink_output_rows_reps": [t.get("sink_output_rows") for t in timed],
                "output_rows": (
                    int(check["total"]["rows"])
                    if check and "rows" in check["total"]
                    else next((s.get("sink_output_rows") for s in timed if s.get("sink_output_rows") is not None), None)
                ),
                "check_pass": check,
                "runs": rs,
            }
        )
        variants[v] = d

    checks = {w: check_workload(w, variants) for w in WORKLOADS if any(d["workload"] == w for d in variants.values())}

    ratios: Dict[str, Dict[str, Any]] = {}
    for w in checks:
        by_slot = {VARIANTS[v][1]: d for v, d in variants.items() if d["workload"] == w}
        k = by_slot.get("kstate")
        entry = {}
        for base, goal in GOALS.items():
            b = by_slot.get(base)
            if b is None:
                why = (
                    "HDFS cannot back kstate operators" if w == "kdedup" and base == "hdfs" else "variant not selected"
                )
                entry[base] = {"ratio": None, "goal": goal, "met": None, "why": why}
                continue
            km, bm = (k or {}).get("rows_per_s_median"), b.get("rows_per_s_median")
            if k is None or k["status"] == "skipped":
                why = (k or {}).get("reason", "kstate variant not selected")
            elif not km or not bm:
                why = "a run failed"
            else:
                why = None
            r = round(km / bm, 3) if km and bm else None
            rb = (
                round(k["rows_per_s_best"] / b["rows_per_s_best"], 3)
                if k and k.get("rows_per_s_best") and b.get("rows_per_s_best")
                else None
            )
            entry[base] = {
                "ratio": r,
                "ratio_best_of_reps": rb,
                "goal": goal,
                "met": (r >= goal) if r is not None else None,
                "why": why,
            }
        ratios[w] = entry

    failures: List[str] = []
    for v, d in variants.items():
        failures += [f"{v} {short(e, 1000)}" for e in d.get("errors", [])]
    for w, c in checks.items():
        failures += [f"{w} results disagree across providers: {p}" for p in c["problems"]]
    # every goal that applies must be measured and met
    applicable = [g for e in ratios.values() for g in e.values() if g["why"] != "HDFS cannot back kstate operators"]
    return {
        "benchmark": "state store providers: HDFS vs RocksDB vs kstate",
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
            "watermark_delay_s": a.interval,
            "dedup_interval_s": a.interval,
            "window_s": a.window,
            "shuffle_partitions": a.shuffle_partitions,
            "reps": a.reps,
            "warmup_files": a.warmup_files,
            "warmup_rows": a.warmup_rows,
            "seed": a.seed,
            "extra_conf": a.conf,
            "master": a.master,
            "driver_memory": a.driver_memory,
            "source": "parquet files, maxFilesPerTrigger=1, Trigger.AvailableNow",
            "isolation": "one Python process + Spark JVM per (repetition, variant), with a warm-up "
            "query on separate input before the timed one",
            "timed_sink": "noop, outputMode append",
            "check_sink": "foreachBatch: count, sum of xxhash64(output columns), sum(count); untimed, "
            "repetition 0 only",
            "rows_per_s": "input rows / wall time from start() to the end of awaitTermination()",
            "queries": {w: WORKLOADS[w]["query"].format(interval=a.interval, window=a.window) for w in WORKLOADS},
        },
        "kstate_provider": {"class": a.kstate_provider, "in_jar": has_kstate, "jar": os.path.relpath(jar, ROOT)},
        "input": inp,
        "environment": env,
        "variants": variants,
        "checks": checks,
        "ratios": ratios,
        "goals": {
            "kstate_vs_rocksdb": GOALS["rocksdb"],
            "kstate_vs_hdfs": GOALS["hdfs"],
            "all_met": bool(applicable) and all(g["met"] is True for g in applicable),
        },
        "failures": failures,
    }


def report(result: Dict[str, Any]) -> str:
    vs = result["variants"]
    head = (
        f"{'variant':16s} {'workload':30s} {'provider':8s} {'rows/s':>9s} {'reps':>20s} "
        f"{'best':>9s} {'CPU s':>9s} {'output rows':>11s}"
    )
    rows = [head, "-" * len(head)]
    for v, d in vs.items():
        wl = WORKLOADS[d["workload"]]["label"]
        if d["status"] == "skipped":
            rows.append(f"{v:16s} {wl:30s} {d['provider']:8s} SKIPPED: {d['reason']}")
            continue
        reps = "/".join(fmt_int(r) for r in d["rows_per_s_reps"])
        cpu = "/".join(fmt_int(c) for c in d["own_cpu_s_reps"])
        rows.append(
            f"{v:16s} {wl:30s} {d['provider']:8s} {fmt_int(d['rows_per_s_median']):>9s} "
            f"{reps:>20s} {fmt_int(d['rows_per_s_best']):>9s} {cpu:>9s} "
            f"{fmt_int(d['output_rows']):>11s}" + ("  ERROR" if d["status"] == "error" else "")
        )
    rows.append(
        "rows/s: median of the repetitions (best: fastest one); CPU s: CPU time of the "
        "variant's processes per repetition; output rows: untimed check pass (with --no-verify: the "
        "timed run's noop sink)"
    )
    rows.append("")
    g = result["goals"]
    h2 = (
        f"{'workload':30s} {'kstate/RocksDB':>14s} {'goal >= %.1fx' % g['kstate_vs_rocksdb']:>14s} "
        f"{'kstate/HDFS':>12s} {'goal >= %.1fx' % g['kstate_vs_hdfs']:>14s} {'results agree':>14s}"
    )
    rows += [h2, "-" * len(h2)]

    def cell(e: Dict[str, Any]):
        if e["ratio"] is not None:
            return f"{e['ratio']:.2f}x", "met" if e["met"] else "NOT met"
        return "n/a", "n/a" if e["why"] == "HDFS cannot back kstate operators" else "not measured"

    for w, e in result["ratios"].items():
        r1, m1 = cell(e["rocksdb"])
        r2, m2 = cell(e["hdfs"])
        c = result["checks"][w]
        agree = "yes" if c["ok"] and c["meaningful"] else "NO" if not c["ok"] else "(1 provider)"
        rows.append(f"{WORKLOADS[w]['label']:30s} {r1:>14s} {m1:>14s} {r2:>12s} {m2:>14s} {agree:>14s}")
    whys = sorted({x["why"] for e in result["ratios"].values() for x in e.values() if x["why"] and x["ratio"] is None})
    for why in whys:
        rows.append(f"{'n/a' if why == 'HDFS cannot back kstate operators' else 'not measured'}: {why}")
    rows.append(
        "GOALS (every applicable ratio measured and met): " + ("MET" if result["goals"]["all_met"] else "NOT MET")
    )
    table = "\n".join(rows)
    noisy = [
        f"{v} rep {i} ({f:.0f} CPU-s)"
        for v, d in vs.items()
        for i, (f, w) in enumerate(zip(d.get("foreign_cpu_s_reps", []), d.get("wall_s_reps", [])))
        if f is not None and w and f > 0.1 * w * (os.cpu_count() or 1)
    ]
    if noisy:
        table += (
            "\nWARNING: other processes used >10% of the CPUs during: "
            + ", ".join(noisy)
            + " -- rerun on an idle machine"
        )
    print("\n" + table)

    print("\nTime breakdown per variant, median rep (sums over batches; state operator times are task-time sums):")
    print(
        f"{'variant':16s} {'wall s':>7s} {'addBatch':>8s} {'planning':>8s} {'walCommit':>9s} "
        f"{'commitOff':>9s} | {'op update':>9s} {'op remove':>9s} {'op commit':>9s} "
        f"{'state rows':>10s} {'dropped late':>12s}"
    )
    for v, d in vs.items():
        ok = [r["timed"] for r in d.get("runs", []) if (r.get("timed") or {}).get("rows_per_s")]
        if not ok:
            continue
        s = sorted(ok, key=lambda s: s["wall_s"])[(len(ok) - 1) // 2]
        m, op = s["durationMs_sum"], s["state_operator"]
        print(
            f"{v:16s} {s['wall_s']:7.1f} {m.get('addBatch', 0) / 1e3:8.1f} "
            f"{m.get('queryPlanning', 0) / 1e3:8.1f} {m.get('walCommit', 0) / 1e3:9.1f} "
            f"{m.get('commitOffsets', 0) / 1e3:9.1f} | {op.get('allUpdatesTimeMs', 0) / 1e3:9.1f} "
            f"{op.get('allRemovalsTimeMs', 0) / 1e3:9.1f} {op.get('commitTimeMs', 0) / 1e3:9.1f} "
            f"{op.get('numRowsTotal_max', 0):10,d} {op.get('numRowsDroppedByWatermark', 0):12,d}"
        )

    for w, c in result["checks"].items():
        if not c["ok"]:
            bar = "!" * 100
            print(f"\n{bar}\n!!! MISMATCH: {WORKLOADS[w]['label']}: the providers' results disagree")
            for p in c["problems"] + c["notes"]:
                print(f"!!!   {p}")
            print(bar)
        else:
            for n in c["notes"]:
                print(f"note ({WORKLOADS[w]['label']}): {n}")
    if result["failures"]:
        print(f"\nFAILURES ({len(result['failures'])}):")
        for f in result["failures"]:
            print(f"  - {f}")
    if any(d["status"] == "skipped" for d in vs.values()):
        print(
            f"\nkstate provider variants were SKIPPED: {result['kstate_provider']['class']} is not "
            f"in {result['kstate_provider']['jar']}; rebuild the jar (make jar) once it exists."
        )
    return table


def write_chart(path: str, result: Dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    vs = result["variants"]
    workloads = [w for w in WORKLOADS if any(d["workload"] == w for d in vs.values())]
    slots = ["hdfs", "rocksdb", "kstate"]
    colors = {"hdfs": "#999999", "rocksdb": "#666666", "kstate": "#2a7fb8"}
    width = 0.26
    fig, ax = plt.subplots(figsize=(13, 6))
    top = max([d.get("rows_per_s_best") or 0 for d in vs.values()] + [1])
    for j, slot in enumerate(slots):
        for i, w in enumerate(workloads):
            v = next((v for v, d in vs.items() if d["workload"] == w and VARIANTS[v][1] == slot), None)
            if v is None:
                if slot == "hdfs" and w == "kdedup":
                    ax.annotate(
                        "HDFS cannot back\nkstate operators",
                        (i - width, 0),
                        ha="center",
                        va="bottom",
                        fontsize=8,
                        xytext=(0, 3),
                        textcoords="offset points",
                        color="#666666",
                    )
                continue
            d = vs[v]
            x = i + (j - 1) * width
            med = d.get("rows_per_s_median")
            if d["status"] == "skipped" or not med:
                ax.bar(x, top * 0.02, width, color="white", edgecolor=colors[slot], hatch="//")
                ax.annotate(
                    "skipped" if d["status"] == "skipped" else "failed",
                    (x, top * 0.02),
                    ha="center",
                    va="bottom",
                    fontsize=8,
                    xytext=(0, 3),
                    textcoords="offset points",
                    rotation=90,
                )
                continue
            ax.bar(x, med, width, color=colors[slot])
            reps = [r for r in d["rows_per_s_reps"] if r]
            ax.scatter([x] * len(reps), reps, color="black", s=10, zorder=3)
            note = f"{med:,.0f}"
            if slot == "kstate":
                e = result["ratios"][w]
                parts = [
                    f"{e[b]['ratio']:.2f}x {PROVIDER_NAMES[b]}"
                    for b in ("rocksdb", "hdfs")
                    if e[b]["ratio"] is not None
                ]
                if parts:
                    note += "\n" + "\n".join(parts)
            ax.annotate(
                note,
                (x, max([med] + reps)),
                ha="center",
                va="bottom",
                fontsize=8,
                xytext=(0, 3),
                textcoords="offset points",
            )
    ax.set_xticks(range(len(workloads)), [WORKLOADS[w]["label"] for w in workloads])
    ax.set_ylabel("input rows / s (median of reps; dots = reps)")
    ax.set_ylim(0, top * 1.3)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[s]) for s in slots]
    ax.legend(handles, [f"{PROVIDER_NAMES[s]} state store" for s in slots], loc="upper right", fontsize=9)
    g = result["goals"]
    ax.set_title(
        f"Streaming throughput by state store provider (AvailableNow, noop sink); goals: kstate "
        f">= {g['kstate_vs_rocksdb']}x RocksDB, >= {g['kstate_vs_hdfs']}x HDFS",
        fontsize=10,
    )
    e = result["environment"]
    fig.suptitle(
        f"{result['input']['rows']:,} rows in {result['input']['files']} micro-batches, "
        f"{result['parameters']['keys']:,} keys, watermark {result['parameters']['watermark_delay_s']} s, "
        f"window {result['parameters']['window_s']} s | Spark {e.get('spark_version', '?')}, "
        f"{e.get('cpu_count', '?')} CPUs, {str(e.get('date_utc', '?'))[:10]}",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        sys.exit(worker(sys.argv[2]))
    sys.exit(main())
