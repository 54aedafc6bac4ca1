"""Helpers shared by the kstate benchmarks (``bench/run.py``, ``bench/providers.py``).

Input generation, the Spark session, CPU accounting, progress summaries, environment capture
and saving results. Both scripts put ``bench/`` first on ``sys.path`` (they run as scripts), so
``import common`` finds this module.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from typing import Any, Dict, Iterable, Optional

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")
TMP = os.path.join(RESULTS, "tmp")

HDFS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
PROVIDER_KEY = "spark.sql.streaming.stateStore.providerClass"
KSTATE_PROVIDER_KEY = "spark.kstate.stateStore.providerClass"

# kind column of the generated events (ground truth, not used by the operators)
KIND_ORIGINAL, KIND_DUPLICATE, KIND_LATE = 0, 1, 2
KIND_NAMES = {KIND_ORIGINAL: "original (on time)", KIND_DUPLICATE: "duplicate (re-send)", KIND_LATE: "late original"}
SCHEMA = "key STRING, ts TIMESTAMP, event_id BIGINT, kind INT, value DOUBLE"


# ---------------------------------------------------------------------------------------------
# arguments

# size defaults: name -> (--quick, full)
SIZE_DEFAULTS = dict(
    files=(4, 20), rows_per_file=(30_000, 200_000), reps=(1, 3), warmup_files=(2, 3), warmup_rows=(5_000, 30_000)
)


def add_input_args(p: argparse.ArgumentParser) -> None:
    """The generated input's knobs (see :func:`generate`)."""
    p.add_argument("--files", type=int, default=None, help="parquet files = micro-batches (default 20; --quick 4)")
    p.add_argument("--rows-per-file", type=int, default=None, help="rows per file (default 200000; --quick 30000)")
    p.add_argument("--keys", type=int, default=100_000, help="key space")
    p.add_argument(
        "--dup-rate",
        type=float,
        default=0.20,
        help="fraction of rows that are re-sends of an earlier event of the same key",
    )
    p.add_argument(
        "--resend-delay",
        type=float,
        nargs=2,
        default=(1.0, 5.0),
        metavar=("MIN", "MAX"),
        help="a re-send's timestamp is the original's + U(MIN, MAX) seconds",
    )
    p.add_argument(
        "--max-disorder",
        type=float,
        default=5.0,
        help="bounded disorder: rows arrive up to this many seconds after their timestamp",
    )
    p.add_argument(
        "--late-rate",
        type=float,
        default=0.01,
        help="fraction of rows that arrive 1.5x-6x the interval after their timestamp",
    )
    p.add_argument(
        "--event-rate",
        type=float,
        default=1000.0,
        help="original events per second of event time (keys recur every keys/rate s on average)",
    )
    p.add_argument("--interval", type=int, default=10, help="dedup interval = watermark delay, seconds")


def add_spark_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--shuffle-partitions", type=int, default=4)
    p.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra Spark setting for the session (repeatable), e.g. for experiments",
    )
    p.add_argument("--master", default="local[*]")
    p.add_argument("--driver-memory", default="6g")


def finish_args(p: argparse.ArgumentParser, a: argparse.Namespace) -> None:
    """Fills the size defaults (--quick or full) and checks the shared arguments."""
    for k, (q, f) in SIZE_DEFAULTS.items():
        if getattr(a, k, "absent") is None:
            setattr(a, k, q if a.quick else f)
    if any("=" not in kv for kv in a.conf):
        p.error("--conf takes KEY=VALUE")
    if not 0 <= a.dup_rate < 1 or not 0 <= a.late_rate < 1 or a.dup_rate + a.late_rate >= 1:
        p.error("need 0 <= dup-rate, late-rate and dup-rate + late-rate < 1")


def describe_input(inp: Dict[str, Any], gen_s: float, interval_s: int) -> str:
    return (
        f"input: {inp['rows']:,} rows in {inp['files']} parquet files "
        f"({inp['bytes'] / 1e6:.1f} MB, generated in {gen_s:.1f} s): "
        + ", ".join(f"{k} {v:,}" for k, v in inp["by_kind"].items())
        + f"; {inp['distinct_keys']:,} distinct keys; event time {inp['event_time_span_s']:,.0f} s "
        f"({inp['event_time_per_file_s']:.0f} s per file); "
        f"{inp['rows_behind_max_ts_gt_0']:,} rows out of order, "
        f"{inp['rows_behind_max_ts_gt_interval']:,} more than {interval_s} s behind"
    )


# ---------------------------------------------------------------------------------------------
# input data


def generate(out_dir: str, files: int, rows_per_file: int, a: argparse.Namespace, seed: int) -> Dict[str, Any]:
    """Writes `files` parquet files of `rows_per_file` rows in arrival order; returns stats.

    Originals: uniform keys (zipf(a.key_skew) when it is set), timestamps at `event_rate` per second. A fraction `late_rate` of
    the rows are originals that arrive 1.5x-6x the interval after their timestamp; the others
    arrive up to `max_disorder` s late. A fraction `dup_rate` are re-sends of an on-time
    original: same key and event_id, timestamp a few seconds later, same disorder.
    """
    rng = np.random.default_rng(seed)
    n = files * rows_per_file
    n_dup = int(round(n * a.dup_rate))
    n_orig = n - n_dup
    n_late = min(int(round(n * a.late_rate)), n_orig)
    t0 = 1_700_000_000_000  # 2023-11-14T22:13:20Z, epoch ms
    interval_ms = a.interval * 1000
    disorder_ms = int(a.max_disorder * 1000)

    ts = t0 + ((np.arange(n_orig) + rng.random(n_orig)) * (1000.0 / a.event_rate)).astype(np.int64)
    skew = getattr(a, "key_skew", 0.0)
    if skew > 0:  # zipf(skew) over the key space: rank r has weight 1 / r**skew, ranks shuffled over keys
        weights = 1.0 / np.arange(1, a.keys + 1) ** skew
        key = rng.permutation(a.keys)[rng.choice(a.keys, n_orig, p=weights / weights.sum())]
    else:
        key = rng.integers(0, a.keys, n_orig)
    kind = np.full(n_orig, KIND_ORIGINAL, dtype=np.int32)
    late = rng.choice(n_orig, n_late, replace=False)
    kind[late] = KIND_LATE
    delay = rng.integers(0, disorder_ms + 1, n_orig)
    delay[late] = rng.integers(int(1.5 * interval_ms), 6 * interval_ms + 1, n_late)

    on_time = np.flatnonzero(kind == KIND_ORIGINAL)
    src = on_time[rng.integers(0, len(on_time), n_dup)]
    lo, hi = (int(x * 1000) for x in a.resend_delay)
    d_ts = ts[src] + rng.integers(lo, hi + 1, n_dup)
    d_delay = rng.integers(0, disorder_ms + 1, n_dup)

    all_ts = np.concatenate([ts, d_ts])
    arrival = all_ts + np.concatenate([delay, d_delay])
    all_key = np.concatenate([key, key[src]])
    all_id = np.concatenate([np.arange(n_orig, dtype=np.int64), src.astype(np.int64)])
    all_kind = np.concatenate([kind, np.full(n_dup, KIND_DUPLICATE, dtype=np.int32)])
    order = np.argsort(arrival, kind="stable")
    all_ts, all_key, all_id, all_kind = all_ts[order], all_key[order], all_id[order], all_kind[order]
    value = rng.random(n)

    names = pa.array([f"user-{i:06d}" for i in range(a.keys)], type=pa.string())
    os.makedirs(out_dir, exist_ok=True)
    mtime0 = time.time() - 10 * files
    for f in range(files):
        s = slice(f * rows_per_file, (f + 1) * rows_per_file)
        keys = pa.DictionaryArray.from_arrays(pa.array(all_key[s].astype(np.int32)), names)
        table = pa.table(
            {
                "key": keys.dictionary_decode(),
                "ts": pa.array(all_ts[s] * 1000, type=pa.timestamp("us", tz="UTC")),
                "event_id": pa.array(all_id[s]),
                "kind": pa.array(all_kind[s]),
                "value": pa.array(value[s]),
            }
        )
        path = os.path.join(out_dir, f"part-{f:04d}.parquet")
        pq.write_table(table, path)
        # The file source orders files by modification time: make it the file order.
        os.utime(path, (mtime0 + 10 * f, mtime0 + 10 * f))

    # Disorder actually present: how far behind the running max timestamp rows arrive.
    behind = np.maximum.accumulate(all_ts) - all_ts
    span_s = (all_ts.max() - all_ts.min()) / 1000.0
    return {
        "files": files,
        "rows_per_file": rows_per_file,
        "rows": n,
        "by_kind": {KIND_NAMES[k]: int((all_kind == k).sum()) for k in KIND_NAMES},
        "distinct_keys": int(len(np.unique(all_key))),
        "event_time_span_s": round(span_s, 1),
        "event_time_per_file_s": round(span_s / files, 1),
        "rows_behind_max_ts_gt_0": int((behind > 0).sum()),
        "rows_behind_max_ts_gt_interval": int((behind > interval_ms).sum()),
        "max_behind_max_ts_s": round(behind.max() / 1000.0, 1),
        "bytes": sum(os.path.getsize(os.path.join(out_dir, x)) for x in os.listdir(out_dir)),
    }


# ---------------------------------------------------------------------------------------------
# Spark


def wait_for_jar(timeout_s: int = 180) -> str:
    """The kstate jar; waits while `make jar` replaces it (rm + cp)."""
    import kstate

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            path = kstate.jar_path()
            if os.path.getsize(path) > 0:
                return path
        except (kstate.KStateError, OSError):
            if time.monotonic() > deadline:
                raise
        print("waiting for the kstate jar (make jar in progress?) ...", flush=True)
        time.sleep(5)


def start_spark(
    a: argparse.Namespace,
    app_name: str = "kstate-bench",
    local_dir: Optional[str] = None,
    conf: Optional[Dict[str, str]] = None,
):
    """A local SparkSession with the kstate jar and extension; `conf` is applied after --conf."""
    import kstate
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    local_dir = local_dir or os.path.join(TMP, "spark-local")
    os.makedirs(local_dir, exist_ok=True)
    b = (
        kstate.configure(SparkSession.builder.master(a.master).appName(app_name))
        .config("spark.driver.memory", a.driver_memory)
        .config("spark.local.dir", local_dir)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(a.shuffle_partitions))
        .config("spark.sql.session.timeZone", "UTC")
        # keep every batch's progress (default 100)
        .config("spark.sql.streaming.numRecentProgressUpdates", "10000")
    )
    for kv in a.conf:
        k, _, v = kv.partition("=")
        b = b.config(k.strip(), v.strip())
    for k, v in (conf or {}).items():
        b = b.config(k, v)
    if getattr(a, "jfr", None):
        b = b.config(
            "spark.driver.extraJavaOptions",
            f"-XX:StartFlightRecording=filename={os.path.abspath(a.jfr)},settings=profile,dumponexit=true",
        )
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def other_processes(min_cpu: float = 5.0) -> list:
    """Processes outside this one's tree using at least `min_cpu` % CPU (ps's lifetime average),
    or any JVM outside it: what else ran on the machine, for a benchmark's record."""
    mine = {os.getpid()}
    try:
        rows = subprocess.run(
            ["ps", "-eo", "pid=,ppid=,pcpu=,etime=,args="], capture_output=True, text=True, timeout=10
        ).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return []
    procs = []
    for r in rows:
        parts = r.split(None, 4)
        if len(parts) == 5:
            procs.append((int(parts[0]), int(parts[1]), float(parts[2]), parts[3], parts[4]))
    changed = True
    while changed:
        changed = False
        for pid, ppid, *_ in procs:
            if ppid in mine and pid not in mine:
                mine.add(pid)
                changed = True
    return [
        {"pid": pid, "cpu_pct": cpu, "elapsed": et, "cmd": args[:160]}
        for pid, _, cpu, et, args in procs
        if pid not in mine and (cpu >= min_cpu or "java" in args.split(" ", 1)[0])
    ]


def finish_chart(fig, path: str, title: str) -> None:
    """Titles a matplotlib figure, lays it out, writes it to `path` and closes it."""
    import matplotlib.pyplot as plt

    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def out_stem(out: str) -> str:
    """`--out` names the result files' stem; a name given with `.json` means the same stem."""
    return out[: -len(".json")] if out.endswith(".json") else out


def write_json_and_chart(stem: str, res: Dict[str, Any], write_chart, key: str = "files") -> None:
    """Writes `stem`.json (with both paths under `key`) and the chart `stem`.png; prints them."""
    stem = out_stem(stem)
    os.makedirs(os.path.dirname(os.path.abspath(stem)), exist_ok=True)
    res[key] = {"json": stem + ".json", "png": stem + ".png"}
    write_chart(res[key]["png"], res)
    with open(res[key]["json"], "w") as f:
        json.dump(res, f, indent=1)
    print(f"wrote {os.path.relpath(res[key]['json'], ROOT)} and {os.path.relpath(res[key]['png'], ROOT)}")


def timed_query(spark, start, meter: "CpuMeter"):
    """Runs one streaming query to its end from a clean JVM state and times it: unloads the state
    stores earlier queries left loaded, collects garbage, then calls `start()` (which starts the
    query) and waits for it. Returns (query, wall seconds, CPU as `CpuMeter.delta` gives it); the
    state stores are unloaded again after it."""
    unload_state_stores(spark)
    spark.sparkContext._jvm.System.gc()
    cpu0 = meter.snapshot()
    t0 = time.perf_counter()
    q = start()
    q.awaitTermination()
    wall = time.perf_counter() - t0
    cpu = CpuMeter.delta(cpu0, meter.snapshot())
    unload_state_stores(spark)
    return q, wall, cpu


def timed_noop_query(spark, build, ckpt: str, meter: "CpuMeter"):
    """`timed_query` of the AvailableNow streaming query `build()` to Spark's no-op sink, on a
    fresh checkpoint `ckpt`."""
    shutil.rmtree(ckpt, ignore_errors=True)
    return timed_query(
        spark,
        lambda: (
            build()
            .writeStream.format("noop")
            .outputMode("append")
            .option("checkpointLocation", ckpt)
            .trigger(availableNow=True)
            .start()
        ),
        meter,
    )


def unload_state_stores(spark) -> bool:
    """Closes the state store providers that finished queries left loaded in this JVM.

    Spark unloads them only in its background maintenance task (every
    spark.sql.streaming.stateStore.maintenanceInterval, 60 s), so without this each query would
    run next to the RocksDB instances and maintenance work of the previous ones.
    """
    try:
        jvm = spark.sparkContext._jvm
        cls = getattr(jvm.org.apache.spark.sql.execution.streaming.state, "StateStore$")
        getattr(cls, "MODULE$").unloadAll()
        return True
    except Exception as e:  # internal API: keep the benchmark running without it
        print(f"note: could not unload state stores between queries ({type(e).__name__}: {e})")
        return False


class CpuMeter:
    """CPU seconds used by this machine vs by this benchmark (Python + Spark JVM), from /proc.

    Other busy processes on a small machine distort the numbers; each run records how much CPU
    something else used while it ran (`foreign_cpu_s`).
    """

    def __init__(self, jvm_pid: Optional[int]):
        self.pids = [os.getpid()] + ([jvm_pid] if jvm_pid else [])
        self.tck = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def _busy(self) -> Optional[float]:
        try:
            with open("/proc/stat") as f:
                v = [int(x) for x in f.readline().split()[1:]]
            return (sum(v) - v[3] - v[4]) / self.tck  # all but idle and iowait
        except (OSError, ValueError, IndexError):
            return None

    def _own(self) -> Optional[float]:
        total = 0.0
        for pid in self.pids:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    parts = f.read().rsplit(")", 1)[1].split()
                total += (int(parts[11]) + int(parts[12]) + int(parts[13]) + int(parts[14])) / self.tck
            except (OSError, ValueError, IndexError):
                return None
        return total

    def snapshot(self):
        return (self._busy(), self._own())

    @staticmethod
    def delta(a, b) -> Dict[str, Optional[float]]:
        if None in a or None in b:
            return {"machine_cpu_s": None, "own_cpu_s": None, "foreign_cpu_s": None}
        busy, own = b[0] - a[0], b[1] - a[1]
        return {
            "machine_cpu_s": round(busy, 1),
            "own_cpu_s": round(own, 1),
            "foreign_cpu_s": round(max(busy - own, 0.0), 1),
        }

    def idle_check(self, seconds: float = 2.0) -> float:
        """Fraction of all CPUs that other processes used over `seconds`."""
        a = self.snapshot()
        time.sleep(seconds)
        d = self.delta(a, self.snapshot())
        if d["foreign_cpu_s"] is None:
            return 0.0
        return d["foreign_cpu_s"] / (seconds * (os.cpu_count() or 1))


def summarize(run: Dict[str, Any], total_rows: int) -> Dict[str, Any]:
    prog = run["progress"]
    data = [p for p in prog if p.get("numInputRows", 0) > 0]
    input_rows = sum(p.get("numInputRows", 0) for p in prog)
    dur: Dict[str, int] = defaultdict(int)
    for p in prog:
        for k, v in (p.get("durationMs") or {}).items():
            dur[k] += int(v)
    ops = [p["stateOperators"][0] for p in prog if p.get("stateOperators")]
    op_sum: Dict[str, Any] = {}
    if ops:
        for k in (
            "numRowsUpdated",
            "numRowsRemoved",
            "allUpdatesTimeMs",
            "allRemovalsTimeMs",
            "commitTimeMs",
            "numRowsDroppedByWatermark",
        ):
            op_sum[k] = sum(int(o.get(k, 0) or 0) for o in ops)
        op_sum["operatorName"] = ops[-1].get("operatorName")
        op_sum["numRowsTotal_last"] = int(ops[-1].get("numRowsTotal", 0))
        op_sum["numRowsTotal_max"] = max(int(o.get("numRowsTotal", 0)) for o in ops)
        op_sum["memoryUsedBytes_max"] = max(int(o.get("memoryUsedBytes", 0) or 0) for o in ops)
        names = sorted({k for o in ops for k in (o.get("customMetrics") or {})})
        op_sum["customMetrics_sum"] = {
            k: sum(int((o.get("customMetrics") or {}).get(k, 0)) for o in ops) for k in names
        }
        op_sum["customMetrics_last"] = {k: int((ops[-1].get("customMetrics") or {}).get(k, 0)) for k in names}
    sink_rows = [p.get("sink", {}).get("numOutputRows", -1) for p in prog]
    wall = run["wall_s"]
    return {
        "wall_s": round(wall, 3),
        "cpu": run.get("cpu", {}),
        "rows_per_s": round(total_rows / wall, 1) if wall > 0 and not run["error"] else None,
        "error": run["error"],
        "progress_entries": len(prog),
        "batches_with_data": len(data),
        "input_rows_in_progress": input_rows,
        "durationMs_sum": dict(dur),
        "processedRowsPerSecond": [round(p.get("processedRowsPerSecond", 0.0), 1) for p in data],
        "processedRowsPerSecond_median": round(
            statistics.median([p.get("processedRowsPerSecond", 0.0) for p in data]), 1
        )
        if data
        else None,
        "state_rows_per_batch": [int(o.get("numRowsTotal", 0)) for o in ops],
        "state_operator": op_sum,
        "sink_output_rows": (
            sum(sink_rows) if sink_rows and all(x is not None and x >= 0 for x in sink_rows) else None
        ),
    }


# ---------------------------------------------------------------------------------------------
# environment, output


def environment(spark, a: argparse.Namespace, jar: str, extra_conf_keys: Iterable[str] = ()) -> Dict[str, Any]:
    jvm = spark.sparkContext._jvm
    with open(jar, "rb") as f:
        jar_sha = hashlib.sha256(f.read()).hexdigest()

    def git(*args: str) -> Optional[str]:
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10).stdout.strip()
        except Exception:
            return None

    mem_gb = None
    try:
        with open("/proc/meminfo") as f:
            mem_gb = round(int(f.readline().split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass

    def conf_get(k: str) -> Optional[str]:
        try:
            return spark.conf.get(k)  # Spark's default when unset
        except Exception:
            return None

    conf = {
        k: conf_get(k)
        for k in (
            "spark.sql.shuffle.partitions",
            "spark.sql.streaming.stateStore.maintenanceInterval",
            "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled",
            "spark.sql.streaming.stateStore.stateSchemaCheck",
            "spark.sql.streaming.minBatchesToRetain",
            "spark.sql.streaming.noDataMicroBatches.enabled",
            "spark.sql.streaming.stateStore.encodingFormat",
            "spark.sql.streaming.stateStore.checkpointFormatVersion",
            "spark.sql.streaming.statefulOperator.checkCorrectness.enabled",
            "spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows",
            "spark.sql.streaming.stateStore.rocksdb.compression",
            "spark.kstate.stateStore.providerClass",
            "spark.kstate.streamTime.followWatermark",
            *extra_conf_keys,
        )
    }
    conf["spark.kstate.stateStore.providerClass (effective)"] = conf.get(
        "spark.kstate.stateStore.providerClass"
    ) or kstate_provider_default(spark)
    import kstate

    return {
        "date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "memory_gb": mem_gb,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "spark_version": spark.version,
        "java_version": str(jvm.System.getProperty("java.version")),
        "master": spark.sparkContext.master,
        "default_parallelism": spark.sparkContext.defaultParallelism,
        "driver_memory": a.driver_memory,
        "kstate_version": kstate.__version__,
        "kstate_jar": os.path.relpath(jar, ROOT),
        "kstate_jar_sha256": jar_sha,
        "kstate_jar_mtime_utc": dt.datetime.fromtimestamp(os.path.getmtime(jar), dt.timezone.utc).isoformat(
            timespec="seconds"
        ),
        "git_commit": git("rev-parse", "HEAD"),
        "git_dirty_files": len((git("status", "--porcelain") or "").splitlines()),
        "spark_conf": conf,
        "jfr": getattr(a, "jfr", None),
    }


def kstate_provider_default(spark) -> Optional[str]:
    """The jar's default for spark.kstate.stateStore.providerClass (KStateConf), or None."""
    try:
        return str(spark.sparkContext._jvm.org.apache.spark.sql.kstate.config.KStateConf.StateStoreProvider().default())
    except Exception:
        return None


def fmt_int(x: Optional[float]) -> str:
    return "-" if x is None else f"{x:,.0f}"


def sha256_file(path: str) -> Optional[str]:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def save_results(a, result: Dict[str, Any], write_chart, default_name: str, all_variants) -> None:
    """Writes `result` as <a.out>.json and its chart as <a.out>.png (unless --no-save); on a full
    default run (all variants, default output, no extra --conf) also rewrites docs/benchmarks.md
    from every result file (bench/report.py), the one page that shows the figures."""
    if a.no_save:
        return
    a.out = out_stem(a.out)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    result["files"] = {"json": a.out + ".json", "png": a.out + ".png"}
    write_chart(result["files"]["png"], result)
    with open(result["files"]["json"], "w") as f:
        json.dump(result, f, indent=1)
    print(
        f"\nwrote {os.path.relpath(result['files']['json'], ROOT)} and {os.path.relpath(result['files']['png'], ROOT)}"
    )
    default_full = (
        not a.quick
        and os.path.abspath(a.out) == os.path.join(RESULTS, default_name)
        and set(a.variant_list) == set(all_variants)
        and not a.conf
    )
    if default_full:
        import report

        report.main([])
