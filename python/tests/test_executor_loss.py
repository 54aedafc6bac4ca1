"""Executor loss and added executors on a real multi-executor Spark (issue 16 §3): with one
standby per state partition, failover to the standby; an added executor takes partitions only
after their warm-up copies there caught up; without standbys, a cold restore.

A child process (``_executor_loss_driver.py``) runs ``local-cluster[3,1,1024]``: three executor
JVMs next to the driver. Its kstate ``deduplicate_by_key`` query reads one file per micro-batch,
over 6 state partitions (about two per executor), into a foreachBatch parquet sink. After batch
``KILL_AFTER`` it ``kill -9``s the executor JVM that Spark's state store coordinator names for
state partition 0, then feeds the remaining files, one per micro-batch (see each test for its
kills and scale-ups).

Every batch after the first re-sends keys of earlier batches: their output is right only if the
state written before the kill is there after it. Asserted: the query finishes, the sink holds
per batch exactly what the reference model forwards (``models.dedup_model``, one model per state
partition, i.e. what an uninterrupted run outputs, see ``test_dedup_restart``), and the first
batch after the kill restored state from the checkpoint (the provider's restore metrics).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from typing import Any, Dict, List

from _streaming import model_forwarded, partitioner

HERE = os.path.dirname(os.path.abspath(__file__))
S = 1000
INTERVAL = "1000 seconds"  # nothing expires: every re-send depends on state of an earlier batch
INTERVAL_MS = 1000 * S
PARTITIONS = 6
BATCHES = 6
KILL_AFTER = 2  # the driver's default kill: after batch 2 (0-based)
KEYS_PER_BATCH = 40
TIMEOUT_S = 420  # about 3 minutes at a load average of 7

CONF = {
    # Spark prefers to run a state partition's task on the executor that last loaded its store,
    # but gives up after spark.locality.wait (3 s) with a free core elsewhere. Before the kill no
    # partition may move (the test asserts that no batch before the kill restored state), and on
    # this 2-core machine a busy executor can hold a task back past 3 s: 6 s keeps placement
    # sticky. After the kill, the lost executor's partitions wait this long once before they
    # run elsewhere (their only preferred location is dead): the recovery batch takes about
    # 6 s longer, so the wait cannot be raised much within the test's time.
    "spark.locality.wait": "6s",
}


def batches(n: int = BATCHES) -> List[List[Dict[str, Any]]]:
    """Batch b: keys of batch b (new), and a re-send of every key of batches b-1 and b-3."""
    out, seq = [], 0
    for b in range(n):
        recs = []
        for src in (b, b - 1, b - 3):
            if src < 0:
                continue
            for i in range(KEYS_PER_BATCH):
                seq += 1
                recs.append(dict(seq=seq, k=f"k{src}-{i}", id=f"i{seq}", ts=(100 * b + i % 7) * S))
        out.append(recs)
    return out


def expected(spark: Any, data: List[List[Dict[str, Any]]]) -> Dict[int, List[int]]:
    keys = sorted({r["k"] for b in data for r in b})
    part = partitioner(spark, "by_key", PARTITIONS, keys, [])
    fwd = set(model_forwarded([r for b in data for r in b], INTERVAL_MS, "by_key", part))
    return {i: sorted(r["seq"] for r in b if r["seq"] in fwd) for i, b in enumerate(data)}


def sink_batches(spark: Any, out: str) -> Dict[int, List[int]]:
    rows = spark.read.parquet(out).select("batch", "seq").collect()
    got: Dict[int, List[int]] = {}
    for r in rows:
        got.setdefault(int(r["batch"]), []).append(int(r["seq"]))
    return {b: sorted(v) for b, v in got.items()}


def run_driver(tmp: Any, data: List[List[Dict[str, Any]]], **extra: Any) -> Dict[str, Any]:
    cfg = {
        "src": str(tmp / "src"),
        "checkpoint": extra.pop("checkpoint", str(tmp / "checkpoint")),
        "out": str(tmp / "out"),
        "result": str(tmp / "result.json"),
        "partitions": PARTITIONS,
        "executors": 3,
        "interval": INTERVAL,
        "batches": data,
        "kill_after": KILL_AFTER,
        "conf": CONF,
        **extra,
    }
    os.makedirs(cfg["src"])
    with open(tmp / "config.json", "w") as f:
        json.dump(cfg, f)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE))
    # Its own process group: on a timeout the driver's JVMs (driver, executors) go with it.
    p = subprocess.Popen(
        [sys.executable, os.path.join(HERE, "_executor_loss_driver.py"), str(tmp / "config.json")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = p.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        stdout, stderr = p.communicate()
    assert p.returncode == 0, f"driver failed ({p.returncode}):\n{stdout[-3000:]}\n{stderr[-6000:]}"
    with open(cfg["result"]) as f:
        return json.load(f)


# One run, three kills, each after the standbys caught up (the driver waits for it):
#  - after batch 2, the active executor of state partition 0;
#  - after batch 4, the executor of partition 0's standby (it also holds other partitions' actives);
#  - after batch 6, both the active executor of partition 0 and its standby's.
STANDBY_BATCHES = 8
STANDBY_KILLS = [
    {"after": 2, "targets": ["active"]},
    {"after": 4, "targets": ["standby"]},
    {"after": 6, "targets": ["active", "standby"]},
]


def test_with_a_standby_each_lost_partition_fails_over_without_replaying_and_output_stays_exact(spark, tmp_path):
    data = batches(STANDBY_BATCHES)
    # Between the kills the replacement executors take partitions back (warm-up moves, to their
    # standbys): with an acceptable lag of 0 such a move replays nothing either, so every
    # batch's replay below comes from failovers alone.
    res = run_driver(
        tmp_path,
        data,
        kills=STANDBY_KILLS,
        wait_warm=True,
        conf={**CONF, "spark.kstate.standbyReplicas": "1", "spark.kstate.acceptableRecoveryLag": "0"},
    )

    progress = {p["batchId"]: p for p in res["progress"] if p["numInputRows"] > 0}
    assert sorted(progress) == list(range(STANDBY_BATCHES))
    assert sink_batches(spark, str(tmp_path / "out")) == expected(spark, data)

    def metric(b: int, name: str) -> int:
        return int(progress[b]["customMetrics"][name])

    active_kill, standby_kill, both_kill = res["kills"]
    # Before each kill every partition had one standby, never on its active executor.
    for k in res["kills"]:
        for row in k["replica_status"]:
            assert len(row["standbys"]) == 1 and row["standbys"][0]["executor"] != row["active"]
    # The active of partition 0 lost: its partitions adopt their standbys, which held the
    # newest committed version, so the recovery batch replays nothing and reads no snapshot.
    assert active_kill["after_batch"] == 2
    assert metric(3, "kstateStoreRestoredFromStandby") >= 1
    assert metric(3, "kstateStoreRestoreRecordsReplayed") == 0
    assert metric(3, "kstateStoreRestoredFromSnapshot") == 0
    # Partition 0's standby lost: partition 0 stays where it is; the partitions that were active
    # on that executor fail over to their standbys: nothing is replayed either.
    assert metric(5, "kstateStoreRestoreRecordsReplayed") == 0
    # ... and partition 0 got a new standby, elsewhere, warm before the next kill.
    p0_before_both = next(r for r in both_kill["replica_status"] if r["partition"] == 0)
    assert p0_before_both["standbys"][0]["executor"] not in standby_kill["executors"]
    # Both lost: partition 0 restores from the checkpoint, a cold restore.
    assert len(set(both_kill["executors"])) == 2
    assert metric(7, "kstateStoreRestoreRecordsReplayed") > 0


# Scale-up, then a loss without standbys (one cluster run for both, to keep the suite short):
#  - the query starts on 2 executors (the third scaled away before it starts); after batch 1 the
#    application gets its third executor back (as when a worker joins). Batch 2 plans warm-ups
#    there; the driver then kill -9s that executor (a loss during warm-up) and the Master
#    replaces it; batch 3 plans warm-ups on the replacement, which catch up before batch 4 (the
#    driver waits for them), and batch 4 moves the stores;
#  - after batch 6 (balanced by then) it kill -9s the executor of state partition 0: with no
#    standby, batch 7 restores that executor's partitions from the checkpoint (a cold restore).
ADD_BATCHES = 9
COLD_KILL_AFTER = 6


def test_an_added_executor_takes_partitions_only_after_warm_up_and_a_lost_one_restores_cold(spark, tmp_path):
    data = batches(ADD_BATCHES)
    # A free executor on the same host takes a task that waited spark.locality.wait for its
    # preferred one (Spark's delay scheduling): on this loaded 2-core machine 6 s is not always
    # enough, and a partition would then run on the added executor before its warm-up (a cold
    # restore: correct, but not what this test is about). The partitions of the executor lost
    # last have no copy, so they prefer no executor and do not wait for the dead one.
    res = run_driver(
        tmp_path,
        data,
        kills=[{"after": COLD_KILL_AFTER, "targets": ["active"]}],
        start_executors=2,
        add={"after": 1, "kill_warming": True},
        conf={**CONF, "spark.locality.wait": "30s"},
    )

    progress = {p["batchId"]: p for p in res["progress"] if p["numInputRows"] > 0}
    assert sorted(progress) == list(range(ADD_BATCHES))
    assert sink_batches(spark, str(tmp_path / "out")) == expected(spark, data)

    def metric(b: int, name: str) -> int:
        return int(progress[b]["customMetrics"][name])

    add = res["add"]
    assert len(res["executors_before"]) == 2 and len(add["added"]) == 1
    assert set(add["locations_before"].values()) <= set(add["executors_before"])
    # Killed during warm-up: it kept warm-ups, and no partition had moved to it yet.
    assert add["killed"] == add["added"]
    assert any(r["warmup"] and r["warmup"]["executor"] == add["added"][0] for r in add["status_before_kill"])
    assert add["added"][0] not in add["locations_before_kill"].values()
    # Balanced before the last kill, 2 partitions per executor, the replacement included.
    cold = res["kills"][0]
    assert cold["after_batch"] == COLD_KILL_AFTER
    final = Counter(cold["locations"].values())
    assert sorted(final.values()) == [2, 2, 2], cold["locations"]
    assert not set(final) & set(add["killed"])
    # Partitions moved, each to its warm-up copy: no batch up to the last kill read a snapshot,
    # and none replayed more than one version (the acceptable lag) per moved partition, i.e. at
    # most the previous batch's changelog records.
    assert sum(metric(b, "kstateOwnershipMoves") for b in range(COLD_KILL_AFTER + 1)) >= 2
    for b in range(1, COLD_KILL_AFTER + 1):
        assert metric(b, "kstateStoreRestoredFromSnapshot") == 0, b
        assert metric(b, "kstateStoreRestoreRecordsReplayed") <= metric(b - 1, "kstateStoreChangelogRecords"), b
    # The lost executor's partitions restored from the checkpoint on the next batch: at most every
    # change written so far, all of it from changelogs (maintenance, every 600 s, wrote no snapshot).
    recovery = COLD_KILL_AFTER + 1
    written = sum(metric(b, "kstateStoreChangelogRecords") for b in range(recovery))
    assert 0 < metric(recovery, "kstateStoreRestoreRecordsReplayed") <= written
    assert metric(recovery, "kstateStoreRestoredFromSnapshot") == 0
    assert cold["executors"][0] not in res["executors_after"] and len(res["executors_after"]) == 3


# With the checkpoint on HDFS (a NameNode and two DataNodes, checkpoint_stores.py) and checkpoint
# format v2 (unique checkpoint ids), where production runs: the active executor of partition 0 is
# lost after batch 2; its partitions adopt their standbys, which followed the committed versions
# and their ids (from the commit log) on HDFS, and replay nothing. One cluster run for both
# settings keeps the serial part of the suite short; the kills above cover the local disk and
# format 1.
HDFS_BATCHES = 5
V2 = {"spark.sql.streaming.stateStore.checkpointFormatVersion": "2"}


def test_on_hdfs_and_checkpoint_format_2_a_lost_executors_partitions_adopt_their_standbys_by_id(spark, tmp_path):
    from checkpoint_stores import HdfsCluster

    data = batches(HDFS_BATCHES)
    with HdfsCluster() as hdfs:
        checkpoint = f"{hdfs.url}/executor-loss"
        res = run_driver(
            tmp_path,
            data,
            kills=[{"after": 2, "targets": ["active"]}],
            wait_warm=True,
            checkpoint=checkpoint,
            conf={**CONF, **V2, "spark.kstate.standbyReplicas": "1", "spark.kstate.acceptableRecoveryLag": "0"},
        )
        # every batch committed one id per state partition, each naming its changelog on HDFS
        jvm = spark.sparkContext._jvm
        fs = jvm.org.apache.hadoop.fs.Path(checkpoint).getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        for b in range(HDFS_BATCHES):
            lines = [r.value for r in spark.read.text(f"{checkpoint}/commits/{b}").collect()]
            ((op, parts),) = json.loads(lines[1])["stateUniqueIds"].items()
            assert len(parts) == PARTITIONS
            for p, (i,) in enumerate(parts):
                changelog = f"{checkpoint}/state/{op}/{p}/{b + 1}_{i}.kstate.changelog"
                assert fs.exists(jvm.org.apache.hadoop.fs.Path(changelog)), (b, p)
    progress = {p["batchId"]: p for p in res["progress"] if p["numInputRows"] > 0}
    assert sorted(progress) == list(range(HDFS_BATCHES))
    assert sink_batches(spark, str(tmp_path / "out")) == expected(spark, data)
    for row in res["kills"][0]["replica_status"]:
        assert len(row["standbys"]) == 1 and row["standbys"][0]["executor"] != row["active"]
    assert int(progress[3]["customMetrics"]["kstateStoreRestoredFromStandby"]) >= 1
    assert int(progress[3]["customMetrics"]["kstateStoreRestoreRecordsReplayed"]) == 0
    assert int(progress[3]["customMetrics"]["kstateStoreRestoredFromSnapshot"]) == 0
