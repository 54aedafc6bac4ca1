#!/usr/bin/env python3
"""Executor loss with and without a standby replica.

On ``local-cluster[3,1,M]`` (three executor JVMs, ``python/tests/cluster.py``), a kstate
``deduplicate_by_key`` whose interval outlives the run builds a state of ``--keys`` keys
(default 5M; ``--quick`` 200k) over ``--load-batches`` micro-batches. Then, ``--kills`` times
(default 3): a steady micro-batch, ``kill -9`` of the executor JVM that Spark's coordinator names
for state partition 0, the next file at once, and a wait for the replacement executor. Per kill:

  (a) kill -> end of the first micro-batch completed after it (progress timestamp + its
      triggerExecution, minus the wall-clock time of the kill);
  (b) that micro-batch's duration (triggerExecution);
  (c) its restore figures from the provider's metrics (sums over the partitions restored):
      kstate: ``kstateStoreRestoreMs``, ``kstateStoreRestoreRecordsReplayed``;
      RocksDB: ``rocksdbLoadLatencyMs``, ``rocksdbReplayChangeLogLatencyMs``,
      ``rocksdbNumReplayChangelogFiles``.

The same input runs, in the same cluster, on kstate's provider and on Spark's RocksDB provider
(changelog checkpointing on, as kstate's provider always does), both restoring cold, and on
kstate's provider with one standby per state partition (``spark.kstate.standbyReplicas=1``,
run ``kstate-standby``): before each of its kills the benchmark runs steady micro-batches until
placement has settled (no move or warm-up pending, every executor running a partition: the
steady state of a query whose last loss is long past; ``--kill-when warm`` skips this and kills
while the previous loss's replacement may still hold no partition), then waits until every
partition's standby holds the newest committed version (``kstate.replica_status``), so the
recovery batch adopts warm copies. Medians over the kills and the ratios (RocksDB / kstate, kstate cold /
kstate with a standby) are printed and saved with a chart, with the standby goal: the recovery
micro-batch with a warm standby at most 1.3x the steady micro-batch before it, on every store.
The steady-state cost of the standby: the load phase's time and its micro-batches with and
without it, and the changelog bytes each standby reads (one standby reads every changelog
once).

With ``--store hdfs`` (or ``s3``) the checkpoints are on Hadoop's in-process HDFS cluster (or on
s3proxy through S3A), started by the benchmark (``python/tests/checkpoint_stores.py``), where a
cold restore reads the state over the network, so the cold restore's cost (saved beside the
goal) is what the standby saves.

    PYTHONPATH=python .venv/bin/python bench/recovery.py --quick
    PYTHONPATH=python .venv/bin/python bench/recovery.py --store hdfs
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import statistics
import sys
import time
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python", "tests"))  # cluster.py

from common import KSTATE_PROVIDER_KEY, RESULTS, ROCKSDB, TMP, other_processes, wait_for_jar, write_json_and_chart  # noqa: E402

KSTATE = "io.kstate.KStateStoreProvider"
PROVIDERS = {"kstate": KSTATE, "rocksdb": ROCKSDB, "kstate-standby": KSTATE, "no-state": KSTATE}
# The control: the same micro-batches shuffled by key to the no-op sink, no operator and no state,
# so what an executor loss costs a micro-batch whatever the state (the cores lost until the
# replacement registers, the lost task's rerun, the scheduler's reaction).
STATELESS = {"no-state"}
STANDBYS = {"kstate-standby": 1}
# A recovery batch that restored nothing measured no cold restore (the killed executor held no
# state it needed): these metrics tell, per provider.
RESTORED = {
    "kstate": lambda r: r["kstateStoreRestoreRecordsReplayed"] > 0 or r["kstateStoreRestoredFromSnapshot"] > 0,
    # with a standby, the recovery batch must have adopted one (and then replays little or nothing)
    "kstate-standby": lambda r: r["kstateStoreRestoredFromStandby"] > 0,
    "rocksdb": lambda r: r["rocksdbNumReplayChangelogFiles"] > 0 or r["rocksdbLoadFromSnapshotLatencyMs"] > 0,
    "no-state": lambda r: False,
}
RESTORE_METRICS = {
    "kstate": ("kstateStoreRestoreMs", "kstateStoreRestoreRecordsReplayed", "kstateStoreRestoredFromSnapshot"),
    "kstate-standby": (
        "kstateStoreRestoreMs",
        "kstateStoreRestoreRecordsReplayed",
        "kstateStoreRestoredFromSnapshot",
        "kstateStoreRestoredFromStandby",
    ),
    "rocksdb": (
        "rocksdbLoadLatencyMs",
        "rocksdbReplayChangeLogLatencyMs",
        "rocksdbNumReplayChangelogFiles",
        "rocksdbLoadFromSnapshotLatencyMs",
    ),
    "no-state": (),
}
SCHEMA = "k STRING, ts LONG"


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="200k keys")
    p.add_argument("--keys", type=int, default=None, help="keys in state before the first kill (default 5M)")
    p.add_argument("--kills", type=int, default=3, help="executor kills per provider")
    p.add_argument("--load-batches", type=int, default=5, help="micro-batches that build the state")
    p.add_argument(
        "--batch-rows",
        type=int,
        default=None,
        help="rows of each steady and recovery micro-batch, half of them re-sends (default keys / 100)",
    )
    p.add_argument("--shuffle-partitions", type=int, default=6)
    p.add_argument(
        "--executor-mb",
        type=int,
        default=None,
        help="memory of each worker and its executor, MB (default 3072; --quick 1024)",
    )
    p.add_argument("--providers", default="kstate,rocksdb,kstate-standby,no-state")
    p.add_argument(
        "--settle-batches",
        type=int,
        default=3,
        help="steady micro-batches after a replacement executor registered, before the next kill",
    )
    p.add_argument(
        "--kill-when",
        choices=("settled", "warm"),
        default="settled",
        help="kstate-standby: kill once placement settled (standbys warm, no move or warm-up "
        "pending, every executor running a partition: a production steady state; at most "
        "--season-batches steady micro-batches), or as soon as the standbys are warm (a loss "
        "soon after the previous one, its replacement still young)",
    )
    p.add_argument("--season-batches", type=int, default=40)
    p.add_argument(
        "--store",
        choices=("local", "hdfs", "s3"),
        default="local",
        help="where the checkpoint is: the local disk, HDFS (Hadoop's in-process cluster) or S3 "
        "(s3proxy through S3A), python/tests/checkpoint_stores.py",
    )
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--out", default=None)
    p.add_argument("--no-save", action="store_true")
    a = p.parse_args(argv)
    a.keys = a.keys or (200_000 if a.quick else 5_000_000)
    a.batch_rows = a.batch_rows or max(a.keys // 100, 1000)
    a.executor_mb = a.executor_mb or (1024 if a.quick else 3072)
    a.provider_list = [x for x in a.providers.split(",") if x]
    if set(a.provider_list) - set(PROVIDERS):
        p.error(f"--providers takes {','.join(PROVIDERS)}")
    suffix = "" if a.store == "local" else f"-{a.store}"
    if a.keys != 5_000_000 and not a.quick and a.store != "local":
        suffix += f"-{a.keys // 1_000_000}m" if a.keys % 1_000_000 == 0 else f"-{a.keys}"
    a.out = a.out or os.path.join(RESULTS, ("recovery-quick" if a.quick else "recovery") + suffix)
    return a


# --- input ---------------------------------------------------------------------------------


def write_batch(directory: str, index: int, keys: List[str], ts_s: int) -> None:
    """One parquet file = one micro-batch; files sort (and are modified) in index order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tmp = os.path.join(os.path.dirname(directory), f"_staging-{index:04d}.parquet")
    pq.write_table(
        pa.table({"k": pa.array(keys, pa.string()), "ts": pa.array([ts_s * 1000] * len(keys), pa.int64())}), tmp
    )
    os.rename(tmp, os.path.join(directory, f"part-{index:04d}.parquet"))


class Input:
    """Load batches (new keys only), then steady/recovery batches: half re-sends of keys in
    state (dropped by the dedup), half new keys. Deterministic, the same for every provider."""

    def __init__(self, a: argparse.Namespace) -> None:
        self.a, self.next_key, self.index = a, 0, 0

    def _new(self, n: int) -> List[str]:
        keys = [f"key-{i:09d}" for i in range(self.next_key, self.next_key + n)]
        self.next_key += n
        return keys

    def load(self, directory: str) -> int:
        per = -(-self.a.keys // self.a.load_batches)
        n = min(per, self.a.keys - self.next_key)
        return self._write(directory, self._new(n))

    def steady(self, directory: str) -> int:
        half = self.a.batch_rows // 2
        step = max(self.next_key // half, 1)
        resent = [f"key-{i:09d}" for i in range(0, self.next_key, step)][:half]
        return self._write(directory, resent + self._new(self.a.batch_rows - len(resent)))

    def _write(self, directory: str, keys: List[str]) -> int:
        write_batch(directory, self.index, keys, ts_s=10 * self.index)
        self.index += 1
        return len(keys)


# --- one provider --------------------------------------------------------------------------


def epoch_s(iso: str) -> float:
    return dt.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


class ReplacementClock:
    """Seconds from the kill until an executor not in ``before`` registers (None: not during the
    recovery batch). A replacement that registers while the lost partitions wait for their dead
    executor is idle, so they run on it: a fresh JVM that first fetches the kstate jar."""

    def __init__(self, cluster: Any, before: set, t_kill: float) -> None:
        import threading

        self.after_s: Optional[float] = None
        self._done = threading.Event()

        def poll() -> None:
            while not self._done.is_set() and self.after_s is None:
                if set(cluster.executor_ids()) - before:
                    self.after_s = round(time.time() - t_kill, 2)
                self._done.wait(0.2)

        self._thread = threading.Thread(target=poll, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


def run_provider(cluster: Any, name: str, a: argparse.Namespace, tmp: str, ckpt_root: str) -> Dict[str, Any]:
    import kstate  # noqa: F401  (adds df.kstate)

    spark = cluster.spark
    src, ckpt = os.path.join(tmp, f"src-{name}"), f"{ckpt_root}/ckpt-{name}"
    os.makedirs(src)
    spark.conf.set(KSTATE_PROVIDER_KEY, PROVIDERS[name])
    spark.conf.set("spark.kstate.standbyReplicas", str(STANDBYS.get(name, 0)))
    inp = Input(a)
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(src)
    query = (
        df.repartition("k") if name in STATELESS else df.kstate.deduplicate_by_key("3650 days", key="k", timestamp="ts")
    )
    q = query.writeStream.format("noop").option("checkpointLocation", ckpt).start()
    try:
        t0 = time.perf_counter()
        load_batches, changelog_bytes = [], 0
        for _ in range(a.load_batches):
            inp.load(src)
            q.processAllAvailable()
            load_batches.append(q.lastProgress["durationMs"]["triggerExecution"] / 1000)
            ops = q.lastProgress["stateOperators"]
            changelog_bytes += int(ops[0]["customMetrics"].get("kstateStoreChangelogBytes", 0)) if ops else 0
        load_s = time.perf_counter() - t0
        print(f"[{name}] state of {inp.next_key:,} keys built in {load_s:.1f} s", flush=True)
        kills = []
        for k in range(a.kills):
            seasoned = None
            if STANDBYS.get(name) and a.kill_when == "settled":
                seasoned = season(cluster, q, inp, src, a)
            inp.steady(src)  # the steady micro-batch the recovery one is compared with
            q.processAllAvailable()
            steady = q.lastProgress
            warm_s = None
            if STANDBYS.get(name):
                t_warm = time.perf_counter()
                cluster.wait_standbys_warm(q, a.shuffle_partitions, timeout_s=600)
                warm_s = round(time.perf_counter() - t_warm, 2)
            status = None
            if STANDBYS.get(name):
                import kstate

                status = kstate.replica_status(q)  # where each partition's active and copies are
            pids = cluster.executors()
            # no state: the executor with the smallest id (each runs its share of the tasks)
            victim = min(pids, key=int) if name in STATELESS else cluster.state_locations(q, a.shuffle_partitions)[0]
            t_kill = time.time()
            cluster.kill(victim, pids)
            replaced = ReplacementClock(cluster, set(pids), t_kill)
            inp.steady(src)
            q.processAllAvailable()
            rec = q.lastProgress
            replaced.stop()
            locations_after = None if name in STATELESS else cluster.state_locations(q, a.shuffle_partitions)
            end = epoch_s(rec["timestamp"]) + rec["durationMs"]["triggerExecution"] / 1000
            ops, steady_ops = rec["stateOperators"], steady["stateOperators"]
            custom = ops[0]["customMetrics"] if ops else {}
            kill = {
                "executor": victim,
                "batch": rec["batchId"],
                "kill_to_batch_end_s": round(end - t_kill, 3),
                "batch_s": rec["durationMs"]["triggerExecution"] / 1000,
                "batch_durationMs": rec["durationMs"],
                "replacement_registered_s": replaced.after_s,
                "standbys_warm_after_s": warm_s,
                "settled_after_batches": seasoned,
                "steady_batch_s": steady["durationMs"]["triggerExecution"] / 1000,
                "state_rows": ops[0]["numRowsTotal"] if ops else 0,
                "replica_status_before": status,
                "locations_after": locations_after,
                "restore": {m: int(custom.get(m, 0)) for m in RESTORE_METRICS[name]},
                "steady_restore": {
                    m: int(steady_ops[0]["customMetrics"].get(m, 0)) for m in RESTORE_METRICS[name] if steady_ops
                },
            }
            # what the loss added to a micro-batch: the recovery batch minus the steady one before it
            kill["extra_s"] = round(kill["batch_s"] - kill["steady_batch_s"], 3)
            kill["restored"] = RESTORED[name](kill["restore"])
            kills.append(kill)
            print(
                f"[{name}] kill {k + 1}/{a.kills}: executor {victim}; kill -> batch end "
                f"{kill['kill_to_batch_end_s']:.1f} s, batch {kill['batch_s']:.1f} s (steady "
                f"{kill['steady_batch_s']:.1f} s), replacement registered after {replaced.after_s} s, "
                f"restore {kill['restore']}",
                flush=True,
            )
            cluster.wait_for_replacement(victim)
            if k + 1 < a.kills:
                for _ in range(a.settle_batches):  # the replacement JVM compiles its hot code
                    inp.steady(src)
                    q.processAllAvailable()
        return {
            "provider": PROVIDERS[name],
            "standby_replicas": STANDBYS.get(name, 0),
            "load_s": round(load_s, 1),
            "load_batch_s": load_batches,
            "load_changelog_bytes": changelog_bytes,
            "keys": inp.next_key,
            "kills": kills,
            "median": {
                m: statistics.median(x[m] for x in kills)
                for m in ("kill_to_batch_end_s", "batch_s", "steady_batch_s", "extra_s")
            },
            "median_restore": {m: statistics.median(x["restore"][m] for x in kills) for m in RESTORE_METRICS[name]},
        }
    finally:
        q.stop()
        spark.sparkContext._jvm.System.gc()


def settled(status: List[Dict[str, Any]], executors: List[str]) -> bool:
    """Placement at rest: no move or warm-up pending, and every executor runs a partition (none is
    young, docs/replicas.md section 2, rule 4)."""
    if any(r["moving_to"] is not None or r["warmup"] is not None for r in status):
        return False
    return set(executors) <= {r["active"] for r in status}


def season(cluster: Any, q: Any, inp: "Input", src: str, a: argparse.Namespace) -> Optional[int]:
    """Steady micro-batches until placement settled (:func:`settled`); how many it took, or None
    when it did not within ``--season-batches``."""
    import kstate

    for n in range(a.season_batches + 1):
        if settled(kstate.replica_status(q), list(cluster.executors())):
            return n
        if n < a.season_batches:
            inp.steady(src)
            q.processAllAvailable()
    return None


# --- output --------------------------------------------------------------------------------


def report(res: Dict[str, Any]) -> str:
    runs = res["runs"]
    lines = [
        f"executor kill -> recovery, {res['keys']:,} keys in state, {res['kills']} kills per "
        f"run, medians ({'QUICK' if res['quick'] else 'full size'}):",
        f"{'':34}" + "".join(f"{n:>16}" for n in runs),
    ]
    for m, label in (
        ("kill_to_batch_end_s", "(a) kill -> end of next batch, s"),
        ("batch_s", "(b) recovery batch, s"),
        ("steady_batch_s", "    steady batch before, s"),
        ("extra_s", "    (b) minus steady, s"),
    ):
        lines.append(f"{label:34}" + "".join(f"{r['median'][m]:>16.2f}" for r in runs.values()))
    lines.append(f"{'    load phase, s':34}" + "".join(f"{r['load_s']:>16.1f}" for r in runs.values()))
    for n, r in runs.items():
        lines.append(f"(c) {n} restore: " + ", ".join(f"{k} {v:,.0f}" for k, v in r["median_restore"].items()))
    for name, ratios in res["ratios"].items():
        for m, v in ratios.items():
            lines.append(f"ratio {name}, {m}: {v:.2f}x")
    if "kstate-standby" in runs:
        r = runs["kstate-standby"]
        lines.append(
            f"standby cost: each standby read {r['load_changelog_bytes']:,} changelog bytes during the load "
            f"phase (as many as the active wrote)"
        )
    return "\n".join(lines)


def write_chart(path: str, res: Dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    names = list(res["runs"])
    metrics = [
        ("kill_to_batch_end_s", "kill -> end of next batch"),
        ("batch_s", "recovery batch"),
        ("steady_batch_s", "steady batch"),
    ]
    w = 0.8 / len(metrics)
    for j, (m, label) in enumerate(metrics):
        ax.bar([i + j * w for i in range(len(names))], [res["runs"][n]["median"][m] for n in names], w, label=label)
    kinds = {n: "no state" if n in STATELESS else "standby" if STANDBYS.get(n) else "cold restore" for n in names}
    ax.set_xticks([i + w for i in range(len(names))], [f"{n} ({kinds[n]})" for n in names])
    ax.set_ylabel("seconds (median)")
    ax.set_title(f"executor kill, {res['keys']:,} keys{' (quick)' if res['quick'] else ''}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def start_store(kind: str, tmp: str):
    """(the started server or None, the checkpoints' root URL, the Spark settings it needs)."""
    if kind == "local":
        return None, tmp, {}
    import kstate
    from checkpoint_stores import HdfsCluster, S3Server, s3a_jars

    if kind == "hdfs":
        h = HdfsCluster().start()
        return h, f"{h.url}/recovery", {}
    s3 = S3Server()

    def spawn(cmd: List[str], orig=s3._spawn) -> None:  # its in-memory store holds the state
        orig(["-Xmx6g" if c == "-Xmx768m" else c for c in cmd])

    s3._spawn = spawn
    s3.start()
    b = f"spark.hadoop.fs.s3a.bucket.{s3.bucket}."
    return (
        s3,
        f"s3a://{s3.bucket}/recovery",
        {
            "spark.jars": ",".join([kstate.jar_path()] + s3a_jars()),
            **{"spark.hadoop." + k: v for k, v in s3.settings().items()},
            b + "multiobjectdelete.enable": "false",
        },
    )


def main(argv: Optional[List[str]] = None) -> int:
    a = parse_args(argv)
    wait_for_jar()
    from cluster import LocalCluster

    tmp = os.path.join(TMP, f"recovery-{os.getpid()}")
    os.makedirs(tmp)
    load_before = open("/proc/loadavg").read().strip()
    others_before = other_processes()
    store, ckpt_root, store_conf = start_store(a.store, tmp)
    conf = {
        "spark.sql.shuffle.partitions": str(a.shuffle_partitions),
        "spark.sql.session.timeZone": "UTC",
        "spark.local.dir": os.path.join(tmp, "spark-local"),
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        # Spark's default, written down: the lost executor's partitions wait this long for
        # their (dead) preferred executor before running elsewhere; (a) and (b) include it.
        "spark.locality.wait": "3s",
        **store_conf,
        **dict(kv.split("=", 1) for kv in a.conf),
    }
    runs: Dict[str, Any] = {}
    spark_version = master = None
    try:
        for name in a.provider_list:
            # A cluster per run: no run inherits another's replaced (young) executor JVMs or its
            # heap, and each load phase starts from the same cold start.
            cluster = LocalCluster(
                executors=3,
                worker_mb=a.executor_mb,
                executor_memory=f"{a.executor_mb}m",
                app_name=f"kstate-bench-recovery-{name}",
            )
            try:
                t0 = time.perf_counter()
                cluster.start(conf)
                print(
                    f"[{name}] {cluster.master} up in {time.perf_counter() - t0:.1f} s: executors "
                    f"{cluster.executors()}",
                    flush=True,
                )
                runs[name] = run_provider(cluster, name, a, tmp, ckpt_root)
                spark_version, master = cluster.spark.version, cluster.master
            finally:
                cluster.stop()
    finally:
        if store is not None:
            store.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    def ratio(slow: str, fast: str) -> Dict[str, float]:
        return {m: runs[slow]["median"][m] / runs[fast]["median"][m] for m in ("kill_to_batch_end_s", "batch_s")}

    ratios = {}
    if {"kstate", "rocksdb"} <= set(runs):
        ratios["rocksdb / kstate"] = ratio("rocksdb", "kstate")
    if {"kstate", "kstate-standby"} <= set(runs):
        ratios["kstate cold / kstate standby"] = ratio("kstate", "kstate-standby")
    # the goal: a recovery micro-batch with a warm standby at most 1.3x the steady one before it
    goal = {}
    if "kstate-standby" in runs:
        ks = runs["kstate-standby"]["kills"]
        per_kill = [k["batch_s"] / k["steady_batch_s"] for k in ks if k["steady_batch_s"]]
        goal = {
            "recovery_over_steady_median": statistics.median(per_kill) if per_kill else None,
            "recovery_over_steady": [round(x, 2) for x in per_kill],
            "restored_records": [k["restore"].get("kstateStoreRestoreRecordsReplayed") for k in ks],
            "max": 1.3,
        }
        goal["met"] = goal["recovery_over_steady_median"] is not None and goal["recovery_over_steady_median"] <= 1.3
        if "no-state" in runs:  # the same ratio without any state: what the loss itself costs
            goal["no_state_over_steady_median"] = statistics.median(
                k["batch_s"] / k["steady_batch_s"] for k in runs["no-state"]["kills"] if k["steady_batch_s"]
            )
        if "kstate" in runs:
            goal["cold_extra_s"] = runs["kstate"]["median"]["extra_s"]
            goal["cold_over_steady_median"] = statistics.median(
                k["batch_s"] / k["steady_batch_s"] for k in runs["kstate"]["kills"] if k["steady_batch_s"]
            )
    res = {
        "benchmark": "recovery",
        "store": a.store,
        "standby_goal": goal,
        "loadavg_before": load_before,
        "loadavg_after": open("/proc/loadavg").read().strip(),
        "others_before": others_before,
        "others_after": other_processes(),
        "quick": a.quick,
        "keys": a.keys,
        "kills": a.kills,
        "load_batches": a.load_batches,
        "batch_rows": a.batch_rows,
        "master": master,
        "settle_batches": a.settle_batches,
        "kill_when": a.kill_when,
        "season_batches": a.season_batches,
        "executor_mb": a.executor_mb,
        "shuffle_partitions": a.shuffle_partitions,
        "conf": {k: v for k, v in conf.items() if k != "spark.jars"},
        "spark_version": spark_version,
        "date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "runs": runs,
        "ratios": ratios,
    }
    print("\n" + report(res))
    if goal:
        print(
            f"standby goal: recovery batch / steady batch {goal['recovery_over_steady_median']:.2f}x (per kill "
            f"{goal['recovery_over_steady']}, goal <= 1.3x): {'met' if goal['met'] else 'NOT met'}; records "
            f"replayed {goal['restored_records']}"
            + (
                f"; a cold restore: {goal['cold_over_steady_median']:.2f}x, +{goal['cold_extra_s']:.2f} s"
                if 'cold_extra_s' in goal
                else ""
            )
            + (
                f"; no state at all: {goal['no_state_over_steady_median']:.2f}x"
                if "no_state_over_steady_median" in goal
                else ""
            )
        )
    print(f"store {a.store}; load average before {res['loadavg_before']}, after {res['loadavg_after']}")
    cold = all(k["restored"] for n, r in runs.items() if n not in STATELESS for k in r["kills"])
    if not cold:
        print(
            "FAILED: a recovery batch restored nothing cold, or adopted no standby (see 'restored' per "
            "kill in the JSON): not the measurement it claims"
        )
    if not a.no_save:
        write_json_and_chart(a.out, res, write_chart)
    return 0 if cold else 1


if __name__ == "__main__":
    sys.exit(main())
