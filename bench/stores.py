#!/usr/bin/env python3
"""Commit and restore cost of kstate's provider and Spark's RocksDB provider on local disk, HDFS
and S3 (``make bench``; bench/README.md, "Checkpoint stores").

Same queries, same run, same Spark session (``local[2]``): kstate's operators with their state in
kstate's provider (``io.kstate.KStateStoreProvider``; ``kstate``: its default, the working copy on
the heap within the heap state budget; ``kstate_db``: ``heapStateBytes=0``, the working copy in
its local RocksDB, whose snapshots are table files) or in Spark's RocksDB provider with
changelog checkpointing (``spark.kstate.stateStore.providerClass``), the checkpoint on

* ``local``: the local disk;
* ``hdfs``: Hadoop's in-process cluster (a NameNode and two DataNodes on loopback,
  ``python/tests/checkpoint_stores.HdfsCluster``);
* ``s3``: s3proxy on loopback reached through Hadoop's S3A connector (``S3Server``).

Measured, variants alternating, medians over ``--reps``:

1. Streaming (``--files`` micro-batches of ``--rows-per-file`` rows, 4 state partitions):
   ``deduplicate_by_key`` and a windowed count + ``suppress(until_window_closes)``.
   Commit latency per micro-batch, p50 and p99 of the query progress's ``commitTimeMs`` of the
   stateful operator (the time the operator spent in ``store.commit()``, summed over the batch's
   state partitions: the one figure both providers report the same way, measured by kstate's
   operator around the provider's commit); throughput, input rows / the micro-batches' time
   (``triggerExecution``, the first ``--warmup-batches`` left out); files written per commit:
   the files under the checkpoint's ``state/`` directory at the end of the run (nothing is
   deleted: 100 versions are kept), divided by the micro-batches. On S3 each file is one PUT of
   S3A (small files are single-part uploads); the HEAD/LIST requests S3A makes around them are
   not counted.
2. Cold restore of one state partition holding ``--restore-keys`` keys (default 1M and 10M):
   a 1-partition ``deduplicate_by_key`` builds the state, maintenance writes a snapshot, the
   query stops and its providers are unloaded, then the query restarts with a 1,000-row
   micro-batch. Restore time = that micro-batch's duration (the restore plus 1,000 rows; the
   next, steady micro-batch's beside it), with the providers' own restore figures
   (``kstateStoreRestoreMs``; RocksDB's ``rocksdbLoadLatencyMs``: download, open, replay);
   ``--restore-reps`` restarts per provider, the providers in turns (each provider's state is
   built first; the order reverses every round).

    PYTHONPATH=python:python/tests .venv/bin/python bench/stores.py --quick
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import sys
import time
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python", "tests"))  # checkpoint_stores.py

from common import (  # noqa: E402
    KSTATE_PROVIDER_KEY,
    RESULTS,
    ROCKSDB,
    SCHEMA,
    TMP,
    add_input_args,
    finish_args,
    generate,
    other_processes,
    start_spark,
    unload_state_stores,
    wait_for_jar,
    write_json_and_chart,
)

KSTATE = "io.kstate.KStateStoreProvider"
PROVIDERS = {"kstate": KSTATE, "kstate_db": KSTATE, "rocksdb": ROCKSDB}
# kstate_db: kstate's provider with its working copy in its local RocksDB (no heap state budget),
# where a snapshot is one table file that a restore ingests whole
PROVIDER_CONF = {"kstate_db": {"spark.sql.streaming.stateStore.kstate.heapStateBytes": "0"}}
HEAP_STATE_KEY = "spark.sql.streaming.stateStore.kstate.heapStateBytes"


def family(provider: str) -> str:
    """Which provider's metrics and files a variant has: kstate's or RocksDB's."""
    return "rocksdb" if provider == "rocksdb" else "kstate"


def use_provider(spark, provider: str) -> None:
    """Sets the session's state store provider and the variant's settings (unsets the others')."""
    spark.conf.set(KSTATE_PROVIDER_KEY, PROVIDERS[provider])
    conf = PROVIDER_CONF.get(provider, {})
    if HEAP_STATE_KEY in conf:
        spark.conf.set(HEAP_STATE_KEY, conf[HEAP_STATE_KEY])
    else:
        spark.conf.unset(HEAP_STATE_KEY)


WORKLOADS = {"dedup": "deduplicate_by_key", "window": "windowed count + suppress(until_window_closes)"}
STORES = ("local", "hdfs", "s3")
# kstate's figure / RocksDB's that the goal asks for, and which way is better
# The restore goal is judged on the restoring micro-batch's execution (Spark's `addBatch`: its
# tasks, among them the restore, the operator and the state commit), not on the whole micro-batch:
# the rest is the driver's offset and commit log writes, the same for every provider, and on HDFS
# each of them at times waits out the client's 400-ms retry of a file's close (docs/state-store.md).
GOALS = {"commit_p99_ms": "lower", "restore_exec_s": "lower", "rows_per_s": "higher"}


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="small sizes, 1 rep (a few minutes)")
    add_input_args(p)
    p.add_argument("--reps", type=int, default=None, help="runs of each streaming variant (default 3; --quick 1)")
    p.add_argument("--warmup-batches", type=int, default=2)
    p.add_argument("--stores", default=",".join(STORES))
    p.add_argument("--providers", default=",".join(PROVIDERS))
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument(
        "--restore-keys",
        default=None,
        help="comma-separated state sizes of the restore measurement (default 1000000,10000000; "
        "--quick 100000); empty: none",
    )
    p.add_argument("--restore-reps", type=int, default=3)
    p.add_argument(
        "--restart-batches",
        type=int,
        default=10,
        help="micro-batches after each restore's, at --restart-interval-ms (the steady figure: the last three)",
    )
    p.add_argument("--restart-interval-ms", type=int, default=500, help="trigger interval of the restarts")
    p.add_argument("--window", type=int, default=10, help="window size, seconds")
    p.add_argument("--shuffle-partitions", type=int, default=4)
    p.add_argument("--driver-memory", default="8g")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--out", default=None)
    p.add_argument("--no-save", action="store_true")
    a = p.parse_args(argv)
    finish_args(p, a)
    if a.quick:
        a.files = a.files if "--files" in (argv or sys.argv) else 6
        a.rows_per_file = a.rows_per_file if "--rows-per-file" in (argv or sys.argv) else 20_000
    else:
        a.files = a.files if "--files" in (argv or sys.argv) else 12
        a.rows_per_file = a.rows_per_file if "--rows-per-file" in (argv or sys.argv) else 100_000
    a.reps = a.reps or (1 if a.quick else 3)
    if a.quick and "--restore-reps" not in (argv or sys.argv):
        a.restore_reps = 2
    keys = a.restore_keys if a.restore_keys is not None else ("100000" if a.quick else "1000000,10000000")
    a.restore_key_list = [int(k) for k in keys.split(",") if k.strip()]
    a.store_list = [s for s in a.stores.split(",") if s]
    a.provider_list = [s for s in a.providers.split(",") if s]
    a.workload_list = [s for s in a.workloads.split(",") if s]
    for what, chosen, allowed in (
        ("--stores", a.store_list, STORES),
        ("--providers", a.provider_list, PROVIDERS),
        ("--workloads", a.workload_list, WORKLOADS),
    ):
        if set(chosen) - set(allowed):
            p.error(f"{what} takes {','.join(allowed)}")
    a.out = a.out or os.path.join(RESULTS, "stores-quick" if a.quick else "stores")
    return a


# --- checkpoint stores ---------------------------------------------------------------------


class Stores:
    """The remote stores of this run, started once: store -> checkpoint root URL."""

    def __init__(self, wanted: List[str], tmp: str) -> None:
        self.wanted, self.tmp = wanted, tmp
        self.hdfs = self.s3 = None
        self.roots: Dict[str, str] = {}

    def __enter__(self) -> "Stores":
        from checkpoint_stores import HdfsCluster

        if "local" in self.wanted:
            self.roots["local"] = "file://" + os.path.join(self.tmp, "ckpt")
        if "hdfs" in self.wanted:
            self.hdfs = HdfsCluster().start()
            self.roots["hdfs"] = f"{self.hdfs.url}/bench"
        if "s3" in self.wanted:
            self.s3 = BigS3Server().start()
            self.roots["s3"] = f"s3a://{self.s3.bucket}/bench"
        return self

    def __exit__(self, *exc: Any) -> None:
        for s in (self.s3, self.hdfs):
            if s is not None:
                s.stop()

    def session_conf(self) -> Dict[str, str]:
        if self.s3 is None:
            return {}
        import kstate
        from checkpoint_stores import s3a_jars

        # s3proxy's in-memory store answers S3A's bulk delete (DeleteObjects) with 501: one DELETE
        # per object instead (Spark's and kstate's cleanup, and this benchmark's)
        b = f"spark.hadoop.fs.s3a.bucket.{self.s3.bucket}."
        return {
            "spark.jars": ",".join([kstate.jar_path()] + s3a_jars()),
            **{"spark.hadoop." + k: v for k, v in self.s3.settings().items()},
            b + "multiobjectdelete.enable": "false",
        }


def BigS3Server():  # noqa: N802  (a class made on demand: checkpoint_stores is imported lazily)
    """s3proxy with a heap for the restore measurement's objects (its in-memory store holds them)."""
    from checkpoint_stores import S3Server

    class _Big(S3Server):
        def _spawn(self, cmd: List[str]) -> None:
            super()._spawn(["-Xmx6g" if c == "-Xmx768m" else c for c in cmd])

    return _Big()


def list_files(spark, url: str) -> List[Dict[str, Any]]:
    """Every file under `url` (recursively) as {path, bytes}, through Hadoop's file system."""
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(url)
    fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    if not fs.exists(path):
        return []
    # a file written meanwhile (a snapshot's temporary file, renamed when done) can vanish
    # between the listing and its status on the local file system: list again
    for attempt in range(5):
        try:
            it = fs.listFiles(path, True)
            out = []
            while it.hasNext():
                st = it.next()
                out.append({"path": st.getPath().toString(), "bytes": st.getLen()})
            return out
        except Exception as e:  # py4j's error carries Hadoop's
            if "No such file or directory" not in str(e) or attempt == 4:
                raise
            time.sleep(0.5)
    return []


def delete(spark, url: str) -> None:
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(url)
    path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).delete(path, True)


# --- queries -------------------------------------------------------------------------------


def build(spark, workload: str, src: str, a: argparse.Namespace):
    import kstate  # noqa: F401  (adds df.kstate)
    from kstate import BufferConfig, Suppressed, TimeWindows

    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(src)
    if workload == "dedup":
        return df.kstate.deduplicate_by_key(f"{a.interval} seconds", key="key", timestamp="ts")
    windows = TimeWindows.of_size(a.window * 1000).grace(a.interval * 1000)
    return (
        df.kstate.windowed_by(windows, key="key", timestamp="ts")
        .count()
        .kstate.suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
    )


def state_op(p: Dict[str, Any]) -> Dict[str, Any]:
    ops = p.get("stateOperators") or []
    return ops[0] if ops else {}


def pct(xs: List[float], q: float) -> float:
    s = sorted(xs)
    if not s:
        return float("nan")
    i = min(len(s) - 1, max(0, int(round(q / 100 * (len(s) - 1)))))
    return float(s[i])


def stream_run(
    spark, store: str, root: str, workload: str, provider: str, rep: int, src: str, a: argparse.Namespace
) -> Dict[str, Any]:
    ckpt = f"{root}/{workload}-{provider}-{rep}"
    delete(spark, ckpt)
    use_provider(spark, provider)
    q = (
        build(spark, workload, src, a)
        .writeStream.format("noop")
        .option("checkpointLocation", ckpt)
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    progress = [json.loads(p.json) for p in q.recentProgress]
    batches = [p for p in progress if p["numInputRows"] > 0]
    measured = batches[a.warmup_batches :]
    commit = [float(state_op(p).get("commitTimeMs", 0)) for p in measured]
    secs = sum(p["durationMs"]["triggerExecution"] for p in measured) / 1000
    rows = sum(p["numInputRows"] for p in measured)
    files = list_files(spark, f"{ckpt}/state")
    unload_state_stores(spark)
    delete(spark, ckpt)
    return {
        "store": store,
        "workload": workload,
        "provider": provider,
        "rep": rep,
        "batches": len(batches),
        "commit_ms": commit,
        "commit_p50_ms": pct(commit, 50),
        "commit_p99_ms": pct(commit, 99),
        "rows_per_s": rows / secs if secs else None,
        "measured_rows": rows,
        "measured_s": round(secs, 3),
        "state_files": len(files),
        "state_bytes": sum(f["bytes"] for f in files),
        "files_per_commit": len(files) / len(batches) if batches else None,
        "bytes_per_commit": sum(f["bytes"] for f in files) / len(batches) if batches else None,
    }


# --- restore -------------------------------------------------------------------------------


def write_keys(directory: str, index: int, start: int, n: int, ts_ms: int) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    keys = pa.array(np.char.add("k", np.arange(start, start + n).astype("U10")).tolist(), pa.string())
    t = pa.table(
        {
            "key": keys,
            "ts": pa.array(np.full(n, ts_ms * 1000), pa.timestamp("us", tz="UTC")),
            "event_id": pa.array(np.arange(start, start + n), pa.int64()),
            "kind": pa.array(np.zeros(n, np.int32)),
            "value": pa.array(np.zeros(n)),
        }
    )
    tmp = os.path.join(os.path.dirname(directory), f"_staging-{index:04d}.parquet")
    pq.write_table(t, tmp)
    os.rename(tmp, os.path.join(directory, f"part-{index:04d}.parquet"))


RESTORE_METRICS = {
    "kstate": ("kstateStoreRestoreMs", "kstateStoreRestoreRecordsReplayed", "kstateStoreRestoredFromSnapshot"),
    "rocksdb": (
        "rocksdbLoadLatencyMs",
        "rocksdbLoadFromSnapshotLatencyMs",
        "rocksdbReplayChangeLogLatencyMs",
        "rocksdbNumReplayChangelogFiles",
        "rocksdbFilesCopied",
        "rocksdbBytesCopied",
        "rocksdbFilesReused",
    ),
}
# the snapshot of version v: kstate's `<v>.kstate.snapshot`, RocksDB's `<v>.zip`
SNAPSHOT = {
    "kstate": lambda p, v: p.rsplit("/", 1)[-1] == f"{v}.kstate.snapshot",
    "rocksdb": lambda p, v: p.rsplit("/", 1)[-1] == f"{v}.zip",
}


def wait_heap_released(spark, timeout_s: float = 120.0) -> Optional[float]:
    """Waits until no kstate store of this JVM holds heap state (seconds waited; None: timed out).

    A finished query's providers are closed by Spark's maintenance thread when it has claimed
    them (a snapshot under way), after `unload_state_stores` returns; until then their heap copies
    count against the executor's heap state budget, which a restore on a fresh executor would
    not see."""
    budget = spark.sparkContext._jvm.org.apache.spark.sql.kstate.engine.HeapStateBudget
    t0 = time.monotonic()
    while budget.reserved() > 0:
        if time.monotonic() - t0 > timeout_s:
            print(f"note: {budget.reserved():,} bytes of kstate heap state still held after {timeout_s:.0f} s")
            return None
        unload_state_stores(spark)
        time.sleep(0.5)
    return round(time.monotonic() - t0, 1)


class RestoreCase:
    """One provider's restore measurement at one state size: `build` makes one partition of `keys`
    keys and waits for a snapshot of it, each `restart` restarts the query cold (providers
    unloaded) with a 1,000-row micro-batch and a steady one, `result` sums them up, `close` drops
    the checkpoint. The cases of one size restart in turns (see `restore_all`)."""

    def __init__(self, spark, store: str, root: str, provider: str, keys: int, a: argparse.Namespace, tmp: str):
        self.spark, self.store, self.provider, self.keys, self.a = spark, store, provider, keys, a
        self.src = os.path.join(tmp, f"restore-src-{store}-{provider}-{keys}")
        self.ckpt = f"{root}/restore-{provider}-{keys}"
        self.index, self.start = 0, 0
        self.restores: List[Dict[str, Any]] = []
        self.ok = True  # False once its build or a restart failed (reported, then left out)

    def run_once(self, batches: int = 0) -> List[Dict[str, Any]]:
        """Every input file, one per micro-batch: back to back (`batches` 0), or `batches` of them
        at the restart's trigger interval (`--restart-interval-ms`), as a running query takes them."""
        import kstate  # noqa: F401

        use_provider(self.spark, self.provider)
        df = self.spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(self.src)
        w = (
            df.kstate.deduplicate_by_key("36500 days", key="key", timestamp="ts")
            .writeStream.format("noop")
            .option("checkpointLocation", self.ckpt)
        )
        if not batches:
            q = w.trigger(availableNow=True).start()
            q.awaitTermination()
        else:
            q = w.trigger(processingTime=f"{self.a.restart_interval_ms} milliseconds").start()
            deadline = time.monotonic() + 600
            while q.isActive and time.monotonic() < deadline:
                if sum(1 for p in q.recentProgress if json.loads(p.json)["numInputRows"] > 0) >= batches:
                    break
                time.sleep(0.05)
            q.stop()
        return [json.loads(p.json) for p in q.recentProgress if json.loads(p.json)["numInputRows"] > 0]

    def build(self) -> None:
        spark = self.spark
        shutil.rmtree(self.src, ignore_errors=True)
        os.makedirs(self.src)
        delete(spark, self.ckpt)
        spark.conf.set("spark.sql.shuffle.partitions", "1")
        spark.conf.set("spark.sql.streaming.stateStore.minDeltasForSnapshot", "1")
        try:
            t0 = time.perf_counter()
            while self.start < self.keys:
                n = min(2_000_000, self.keys - self.start)
                write_keys(self.src, self.index, self.start, n, ts_ms=1_700_000_000_000 + self.index)
                self.index, self.start = self.index + 1, self.start + n
            load = self.run_once()
            self.load_s = time.perf_counter() - t0
            # a snapshot of the newest version, by maintenance (every 10 s here, due after every
            # version while the state is built): a production restore starts from one
            self.newest = len(load)
            deadline = time.monotonic() + 300
            while True:
                found = list_files(spark, f"{self.ckpt}/state")
                self.snaps = [f for f in found if SNAPSHOT[family(self.provider)](f["path"], self.newest)]
                if self.snaps or time.monotonic() > deadline:
                    break
                time.sleep(2)
            self.state = list_files(spark, f"{self.ckpt}/state")
        finally:
            unload_state_stores(spark)
            # the restarts write no snapshot meanwhile (Spark's default: one every 10 versions)
            spark.conf.unset("spark.sql.streaming.stateStore.minDeltasForSnapshot")

    def restart(self) -> None:
        # the restore's micro-batch, then the following ones at the trigger interval
        batches = 1 + self.a.restart_batches
        for _ in range(batches):
            write_keys(self.src, self.index, self.start, 1000, ts_ms=1_700_000_000_000 + self.index)
            self.index, self.start = self.index + 1, self.start + 1000
        self.spark.conf.set("spark.sql.shuffle.partitions", "1")
        self.released_s = wait_heap_released(self.spark)
        try:
            ps = self.run_once(batches)
        finally:
            unload_state_stores(self.spark)
        first = ps[0]
        took = [p["durationMs"]["triggerExecution"] / 1000 for p in ps]
        steady_s = statistics.median(took[-3:])  # the last three: after any catching up
        custom = state_op(first).get("customMetrics", {})
        # kstate: the first micro-batch that ran on the heap copy (a large state's restore lands in
        # RocksDB and moves to the heap once its heap copy is built in the background)
        heap = [state_op(p).get("customMetrics", {}).get("kstateStoreHeapBytes", 0) or 0 for p in ps]
        on_heap_at = next((i + 1 for i, b in enumerate(heap) if b > 0), None)
        self.restores.append(
            {
                "batch_s": took[0],
                "steady_s": steady_s,
                "restore_s": took[0] - steady_s,
                "batches_s": took,
                "waited_for_heap_release_s": self.released_s,
                "on_heap_from_batch": on_heap_at if family(self.provider) == "kstate" else None,
                "following_max_s": max(took[1:]) if len(took) > 1 else None,
                "rows_total": state_op(first).get("numRowsTotal"),
                "metrics": {m: custom.get(m) for m in RESTORE_METRICS[family(self.provider)]},
                # where the restore's micro-batch spent its time (Spark's phases), and the operator's
                "durations_ms": first["durationMs"],
                "operator_ms": {
                    k: state_op(first).get(k) for k in ("allUpdatesTimeMs", "allRemovalsTimeMs", "commitTimeMs")
                },
            }
        )
        last = self.restores[-1]
        print(
            f"  [{self.store} {self.provider} {self.keys:,}] restore {len(self.restores)}: {last['restore_s']:.2f} s "
            f"(batch {last['batch_s']:.2f} s, steady {last['steady_s']:.2f} s, next batches up to "
            f"{last['following_max_s'] or 0:.2f} s, heap from batch {last['on_heap_from_batch']}) {last['metrics']}",
            flush=True,
        )

    def result(self) -> Dict[str, Any]:
        restores = self.restores
        return {
            "store": self.store,
            "provider": self.provider,
            "keys": self.keys,
            "load_s": round(self.load_s, 1),
            "load_batches": self.newest,
            "snapshot_of_newest": bool(self.snaps),
            "state_files": len(self.state),
            "state_bytes": sum(f["bytes"] for f in self.state),
            "restores": restores,
            "restore_s": statistics.median(x["batch_s"] for x in restores),
            "restore_minus_steady_s": statistics.median(x["restore_s"] for x in restores),
            "batch_s": statistics.median(x["batch_s"] for x in restores),
            "steady_s": statistics.median(x["steady_s"] for x in restores),
            "following_max_s": statistics.median(x.get("following_max_s") or 0 for x in restores),
            "on_heap_from_batch": [x.get("on_heap_from_batch") for x in restores],
            "provider_restore_ms": statistics.median(
                (
                    x["metrics"].get("kstateStoreRestoreMs")
                    if family(self.provider) == "kstate"
                    else x["metrics"].get("rocksdbLoadLatencyMs")
                )
                or 0
                for x in restores
            ),
        }

    def close(self) -> None:
        self.spark.conf.set("spark.sql.shuffle.partitions", str(self.a.shuffle_partitions))
        unload_state_stores(self.spark)
        delete(self.spark, self.ckpt)
        shutil.rmtree(self.src, ignore_errors=True)


def restore_all(spark, store: str, root: str, keys: int, a: argparse.Namespace, tmp: str, res: Dict[str, Any]) -> None:
    """Builds every provider's state of `keys` keys, then restarts them in turns, the order
    reversed every other round (so that no provider always goes first), `--restore-reps` rounds."""
    built: List[RestoreCase] = []
    try:
        for prov in a.provider_list:
            case = RestoreCase(spark, store, root, prov, keys, a, tmp)
            built.append(case)
            try:
                case.build()
            except Exception as e:  # report what failed, keep the rest of the run
                failed(res, store, prov, keys, e)
                case.ok = False
        for r in range(a.restore_reps):
            for case in built if r % 2 == 0 else list(reversed(built)):
                if not case.ok:
                    continue
                try:
                    case.restart()
                except Exception as e:
                    failed(res, store, case.provider, keys, e)
                    case.ok = False
        res["restore"].extend(c.result() for c in built if c.ok)
    finally:
        for c in built:
            c.close()


def failed(res: Dict[str, Any], store: str, prov: str, keys: int, e: Exception) -> None:
    print(f"[{store}] restore {prov} {keys:,}: FAILED {type(e).__name__}: {str(e)[:400]}", flush=True)
    res.setdefault("failures", []).append(
        {"store": store, "provider": prov, "keys": keys, "error": f"{type(e).__name__}: {str(e)[:400]}"}
    )


# --- summary -------------------------------------------------------------------------------


def restore_exec_s(restores: List[Dict[str, Any]]) -> Optional[float]:
    """The median execution (`addBatch`) of the restoring micro-batches, seconds (None for runs
    that did not record Spark's phases)."""
    if not restores or any("durations_ms" not in x for x in restores):
        return None
    return statistics.median(x["durations_ms"]["addBatch"] / 1000 for x in restores)


def summarize(res: Dict[str, Any]) -> Dict[str, Any]:
    """Per store and workload: medians per provider, kstate / RocksDB ratios, the goals."""
    out: Dict[str, Any] = {}
    for store in res["stores"]:
        s: Dict[str, Any] = {}
        for w in res["workloads"]:
            per = {}
            for prov in res["providers"]:
                runs = [
                    r for r in res["stream"] if r["store"] == store and r["workload"] == w and r["provider"] == prov
                ]
                if runs:
                    per[prov] = {
                        m: statistics.median(r[m] for r in runs)
                        for m in (
                            "commit_p50_ms",
                            "commit_p99_ms",
                            "rows_per_s",
                            "files_per_commit",
                            "bytes_per_commit",
                        )
                    }
            s[w] = per
        for keys in res["restore_keys"]:
            per = {
                r["provider"]: {
                    "restore_s": r["restore_s"],
                    "restore_exec_s": restore_exec_s(r["restores"]),
                    "batch_s": r["batch_s"],
                    "steady_s": r["steady_s"],
                    "provider_restore_ms": r["provider_restore_ms"],
                }
                for r in res["restore"]
                if r["store"] == store and r["keys"] == keys
            }
            s[f"restore_{keys}"] = per
        goals = {}
        for name, per in s.items():
            for variant in [p for p in per if family(p) == "kstate"] if "rocksdb" in per else []:
                for m, better in GOALS.items():
                    k, r = per[variant].get(m), per["rocksdb"].get(m)
                    if k is None or r is None:
                        continue
                    met = k < r if better == "lower" else k > r
                    # the default configuration's goals keep their names; a variant's are suffixed
                    goals[f"{name}.{m}" + ("" if variant == "kstate" else f".{variant}")] = {
                        "variant": variant,
                        "kstate": k,
                        "rocksdb": r,
                        "rocksdb_over_kstate" if better == "lower" else "kstate_over_rocksdb": (
                            r / k if better == "lower" else k / r
                        )
                        if k
                        else None,
                        "met": met,
                    }
        s["goals"] = goals
        out[store] = s
    return out


def report(res: Dict[str, Any]) -> str:
    lines = [
        f"checkpoint stores, kstate vs RocksDB ({'QUICK' if res['quick'] else 'full size'}; "
        f"medians of {res['reps']} streaming runs, {res['restore_reps']} restores)"
    ]
    for store, s in res["summary"].items():
        lines.append(f"\n== {store}")
        for w in res["workloads"]:
            for prov, m in s[w].items():
                lines.append(
                    f"  {w:7} {prov:8} commit p50 {m['commit_p50_ms']:8.1f} ms  p99 {m['commit_p99_ms']:8.1f} ms  "
                    f"{m['rows_per_s']:>10,.0f} rows/s  {m['files_per_commit']:6.1f} files/commit  "
                    f"{m['bytes_per_commit'] / 1e3:8.1f} kB/commit"
                )
        for keys in res["restore_keys"]:
            for prov, m in s[f"restore_{keys}"].items():
                lines.append(
                    f"  restore {keys:>10,} keys {prov:8} first micro-batch {m['restore_s']:7.2f} s, its execution "
                    f"{m['restore_exec_s']:.2f} s (the next {m['steady_s']:.2f} s; the provider's own restore "
                    f"figure {m['provider_restore_ms']:,.0f} ms)"
                )
        for g, v in s["goals"].items():
            r = v.get("rocksdb_over_kstate", v.get("kstate_over_rocksdb"))
            lines.append(
                f"  goal {g}: {v.get('variant', 'kstate')} {v['kstate']:.3g}, RocksDB {v['rocksdb']:.3g}, "
                f"ratio {r:.2f}x -> {'met' if v['met'] else 'NOT met'}"
            )
    return "\n".join(lines)


def write_chart(path: str, res: Dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stores = list(res["summary"])
    panels = (
        [(f"{w}.commit_p99_ms", "commit p99, ms (lower is better)") for w in res["workloads"]]
        + [(f"{w}.rows_per_s", "rows/s (higher is better)") for w in res["workloads"]]
        + [
            (f"restore_{k}.restore_exec_s", f"restore {k:,} keys: the micro-batch's execution, s (lower is better)")
            for k in res["restore_keys"]
        ]
    )
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 3.6))
    axes = axes if len(panels) > 1 else [axes]
    for ax, (key, title) in zip(axes, panels):
        group, metric = key.split(".")
        w = 0.8 / max(1, len(res["providers"]))
        for j, prov in enumerate(res["providers"]):
            vals = [res["summary"][s].get(group, {}).get(prov, {}).get(metric) or 0 for s in stores]
            ax.bar([i + j * w for i in range(len(stores))], vals, w, label=prov)
        ax.set_xticks([i + w * (len(res["providers"]) - 1) / 2 for i in range(len(stores))], stores)
        ax.set_title(f"{group}: {title}" if not group.startswith("restore") else title, fontsize=8)
        ax.tick_params(labelsize=7)
    axes[0].legend(fontsize=7)
    fig.suptitle(f"kstate vs RocksDB by checkpoint store{' (quick)' if res['quick'] else ''}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return f.read().strip()


def main(argv: Optional[List[str]] = None) -> int:
    a = parse_args(argv)
    wait_for_jar()
    tmp = os.path.join(TMP, f"stores-{os.getpid()}")
    os.makedirs(tmp)
    load_before = loadavg()
    t_start = time.perf_counter()
    res: Dict[str, Any] = {
        "benchmark": "stores",
        "quick": a.quick,
        "reps": a.reps,
        "restore_reps": a.restore_reps,
        "files": a.files,
        "rows_per_file": a.rows_per_file,
        "keys_space": a.keys,
        "shuffle_partitions": a.shuffle_partitions,
        "stores": a.store_list,
        "providers": a.provider_list,
        "workloads": a.workload_list,
        "restore_keys": a.restore_key_list,
        "master": a.master,
        "loadavg_before": load_before,
        "others_before": other_processes(),
        "stream": [],
        "restore": [],
    }
    try:
        with Stores(a.store_list, tmp) as stores:
            conf = {
                "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
                # both providers: snapshots in the background every 10 s, 100 versions kept
                "spark.sql.streaming.stateStore.maintenanceInterval": "10s",
                **stores.session_conf(),
            }
            spark = start_spark(
                a, app_name="kstate-bench-stores", local_dir=os.path.join(tmp, "spark-local"), conf=conf
            )
            res["spark_version"], res["conf"] = spark.version, conf | {"--conf": a.conf}
            res["conf"].pop("spark.jars", None)
            src = os.path.join(tmp, "src")
            t0 = time.perf_counter()
            res["input"] = {
                k: v
                for k, v in generate(src, a.files, a.rows_per_file, a, seed=42).items()
                if k in ("rows", "files", "bytes", "distinct_keys")
            }
            print(f"input: {res['input']} in {time.perf_counter() - t0:.1f} s", flush=True)
            for store in a.store_list:
                root = stores.roots[store]
                for rep in range(a.reps):
                    order = a.provider_list if rep % 2 == 0 else list(reversed(a.provider_list))
                    for w in a.workload_list:
                        for prov in order:
                            r = stream_run(spark, store, root, w, prov, rep, src, a)
                            res["stream"].append(r)
                            print(
                                f"[{store}] {w} {prov} rep {rep + 1}: commit p50 {r['commit_p50_ms']:.0f} ms "
                                f"p99 {r['commit_p99_ms']:.0f} ms, {r['rows_per_s']:,.0f} rows/s, "
                                f"{r['files_per_commit']:.1f} files/commit",
                                flush=True,
                            )
                for keys in a.restore_key_list:
                    restore_all(spark, store, root, keys, a, tmp, res)
            spark.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    res["loadavg_after"] = loadavg()
    res["others_after"] = other_processes()
    res["elapsed_s"] = round(time.perf_counter() - t_start, 1)
    res["date_utc"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    res["summary"] = summarize(res)
    print("\n" + report(res))
    print(
        f"load average before {load_before}, after {res['loadavg_after']}; other processes before "
        f"{res['others_before']}, after {res['others_after']}"
    )
    if not a.no_save:
        write_json_and_chart(a.out, res, write_chart, key="files_written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
