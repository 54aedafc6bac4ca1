"""Driver process of the executor-loss tests (run as ``python _executor_loss_driver.py CONFIG.json``).

Starts a ``local-cluster`` (``cluster.LocalCluster``: separate executor JVMs) and runs ONE kstate
``deduplicate_by_key`` query over JSON-lines files in ``src``, one file per micro-batch
(``processAllAvailable`` after each file), into an exactly-once sink: foreachBatch writes each
batch's rows as parquet to ``out/batch=<id>`` (overwriting, so a replayed batch rewrites its own
directory). The batches are ``batches`` of the config.

``kills`` lists when to kill and whom: ``{"after": b, "targets": [...]}`` kills, after batch ``b``
(0-based), the executor JVM(s) named by ``targets``: ``"active"`` (the executor Spark's state store
coordinator names for state partition 0) and/or ``"standby"`` (the executor holding partition 0's
standby, from ``kstate.replica_status``). With ``wait_warm`` it first waits until three
executors are registered and every state partition has a standby at the newest committed
version (standby runs), so each kill finds warm standbys. The old ``kill_after`` means
``[{"after": kill_after, "targets": ["active"]}]``.

``start_executors`` (fewer than ``executors``) scales the cluster down to that many before the
query starts (``LocalCluster.remove_executor``: the Master does not replace them). ``add``,
``{"after": b, "kill_warming": bool}``, scales it back up to ``executors`` after batch ``b``
(as when a worker joins); with ``kill_warming`` it ``kill -9``s, after batch ``b + 1`` (the batch
that planned the warm-ups, before any store moved), each added executor that holds a warm-up,
and waits for the Master's replacement. After every batch from ``b + 1`` on it waits until the
planned warm-ups are within ``spark.kstate.acceptableRecoveryLag`` (default 1), so the next batch
moves their stores. ``add`` is recorded in the result with the replica status and state
locations around it, and the final state locations.

Writes ``result`` (JSON): per kill the executors killed and their pids, the executors before
and after, the replica status before each kill, and per batch its id, input rows and state
operator's custom metrics.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))  # the kstate package (python/)


def main(config_path: str) -> int:
    with open(config_path) as f:
        cfg = json.load(f)

    from _streaming import (
        CHECKPOINT_FILE_MANAGER,
        LOCAL_DISK_FILE_MANAGER,
        SCHEMA,
        STREAM_ORDER,
        file_name,
        write_json_lines,
    )
    from cluster import LocalCluster

    conf: Dict[str, Any] = {
        "spark.sql.shuffle.partitions": cfg["partitions"],
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.streaming.stateStore.maintenanceInterval": "600s",
        # as every test driver: checkpoints through Hadoop's FileSystem API (no `readlink` process
        # per path on the local disk; docs/contributing.md, "Test time"), and the executors, which
        # live for one test, on the C1 compiler only
        CHECKPOINT_FILE_MANAGER: LOCAL_DISK_FILE_MANAGER,
        "spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=1",
        **STREAM_ORDER,
        **cfg.get("conf", {}),
    }
    t0 = time.monotonic()
    cluster = LocalCluster(executors=cfg["executors"]).start(conf)
    spark = cluster.spark
    if cfg.get("start_executors"):
        ids = cluster.executor_ids()
        for e in sorted(ids, key=int)[cfg["start_executors"] :]:
            cluster.remove_executor(e)
    out: Dict[str, Any] = {"executors_before": cluster.executors(), "cluster_start_s": round(time.monotonic() - t0, 1)}
    add = cfg.get("add")
    lag = int(cfg.get("conf", {}).get("spark.kstate.acceptableRecoveryLag", 1))
    try:
        import kstate  # noqa: F401  (adds df.kstate)

        src = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(cfg["src"])
        deduped = src.kstate.deduplicate_by_key(cfg["interval"], key="k", timestamp="ts")

        def sink(df: Any, batch_id: int) -> None:
            df.write.mode("overwrite").parquet(os.path.join(cfg["out"], f"batch={batch_id}"))

        q = (
            deduped.writeStream.outputMode("append")
            .option("checkpointLocation", cfg["checkpoint"])
            .foreachBatch(sink)
            .start()
        )
        kills = cfg["kills"] if "kills" in cfg else [{"after": cfg["kill_after"], "targets": ["active"]}]
        out["kills"] = []
        for i, records in enumerate(cfg["batches"]):
            write_json_lines(cfg["src"], file_name(i), records)
            q.processAllAvailable()
            for k in (k for k in kills if k["after"] == i):
                out["kills"].append(kill(cluster, q, k["targets"], cfg, out))
            if add:
                scale_up(cluster, q, add, i, cfg, lag, out)
        out["progress"] = [batch_summary(json.loads(p.json)) for p in q.recentProgress]
        if add:
            out["add"]["locations_at_end"] = cluster.state_locations(q, cfg["partitions"])
        q.stop()
        out["query_s"] = round(time.monotonic() - t0 - out["cluster_start_s"], 1)
        # The Master replaces a lost executor; a slow JVM start on a busy machine may still be
        # under way when the last batch ends.
        lost = [e for k in out["kills"] for e in k["executors"]] + (out.get("add") or {}).get("killed", [])
        out["executors_after"] = cluster.wait_for_replacement(lost)
        if out["kills"]:
            out["killed"] = out["kills"][0] | {"executor": out["kills"][0]["executors"][0]}
    finally:
        cluster.stop()
    with open(cfg["result"], "w") as f:
        json.dump(out, f, indent=1)
    return 0


def kill(cluster: Any, q: Any, targets: List[str], cfg: Dict[str, Any], out: Dict[str, Any]) -> Dict[str, Any]:
    """Kills the executors named by ``targets`` (see the module doc); returns what it did."""
    import kstate

    # without wait_warm, what the coordinator knew at the kill (standbys may lag)
    status: List[Dict[str, Any]] = wait_warm(cluster, q, cfg) if cfg.get("wait_warm") else kstate.replica_status(q)
    pids = cluster.executors()
    victims = []
    for t in targets:
        if t == "active":
            victims.append(state_holder(cluster, q))
        elif t == "standby":
            row = next(r for r in (status or kstate.replica_status(q)) if r["partition"] == 0)
            victims.append(row["standbys"][0]["executor"])
        else:
            raise ValueError(f"unknown kill target {t}")
    locations = cluster.state_locations(q, cfg["partitions"])
    done = {
        "executors": victims,
        "pids": [cluster.kill(v, pids) for v in victims],
        "after_batch": q.lastProgress["batchId"],
        "replica_status": status,
        "locations": locations,
    }
    print(f"killed {done}", flush=True)
    return done


def scale_up(
    cluster: Any, q: Any, add: Dict[str, Any], i: int, cfg: Dict[str, Any], lag: int, out: Dict[str, Any]
) -> None:
    """The ``add`` steps after batch ``i`` (see the module doc)."""
    import kstate

    if i == add["after"]:
        before = set(cluster.executor_ids())
        out["add"] = {
            "after_batch": q.lastProgress["batchId"],
            "executors_before": sorted(before),
            "locations_before": cluster.state_locations(q, cfg["partitions"]),
            "killed": [],
        }
        out["add"]["added"] = sorted(set(cluster.add_executors(cfg["executors"])) - before)
        print(f"added {out['add']['added']}", flush=True)
    elif i > add["after"]:
        if i == add["after"] + 1 and add.get("kill_warming"):
            status = kstate.replica_status(q)
            warming = sorted(
                {r["warmup"]["executor"] for r in status if r["warmup"] is not None} & set(out["add"]["added"])
            )
            out["add"]["status_before_kill"] = status
            out["add"]["locations_before_kill"] = cluster.state_locations(q, cfg["partitions"])
            pids = cluster.executors()
            for e in warming:
                cluster.kill(e, pids)
            out["add"]["killed"] = warming
            print(f"killed warming {warming}", flush=True)
            cluster.wait_for_followers(cluster.wait_for_replacement(warming))
        cluster.wait_warmups_ready(q, lag)


def wait_warm(cluster: Any, q: Any, cfg: Dict[str, Any], timeout_s: float = 120) -> List[Dict[str, Any]]:
    """Waits for a full cluster and warm standbys of every state partition; returns the status."""
    cluster.wait_for_executors(cfg["executors"], timeout_s)
    return cluster.wait_standbys_warm(q, cfg["partitions"], timeout_s)


def state_holder(cluster: Any, q: Any) -> str:
    """An executor that ran the last batch's stateful tasks: the one Spark's state store
    coordinator names for state partition 0 of operator 0 (``executor_<host>_<id>``)."""
    locations = cluster.state_locations(q, partitions=int(cluster.spark.conf.get("spark.sql.shuffle.partitions")))
    if 0 not in locations:
        raise RuntimeError(f"Spark's coordinator has no location for state partition 0: {locations}")
    print(f"state locations: {locations}", flush=True)
    return locations[0]


def batch_summary(p: Dict[str, Any]) -> Dict[str, Any]:
    ops: List[Dict[str, Any]] = p.get("stateOperators") or []
    return {
        "batchId": p["batchId"],
        "numInputRows": p["numInputRows"],
        "triggerExecutionMs": (p.get("durationMs") or {}).get("triggerExecution"),
        "customMetrics": (ops[0].get("customMetrics") or {}) if ops else {},
    }


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
