"""Standby replicas on one machine (issue 16): the Python surface and the single-executor case.

The failover itself needs several executors: ``test_executor_loss.py`` runs it on a real
``local-cluster``. Here, in the tests' ``local[2]`` session (one executor, the driver's),
``spark.kstate.standbyReplicas=1`` finds no other executor for a standby: the query runs exactly
as without standbys, and ``kstate.replica_status`` shows each store with its active executor
and no standby (and no warm-up: there is nowhere to move).
"""

from __future__ import annotations

import json

import kstate
from _streaming import FileStream, dedup, session_conf


def test_one_executor_has_no_standby_and_runs_as_without(spark, tmp_path):
    records = [dict(seq=i, k=f"k{i % 5}", id=f"i{i}", ts=1000 * i) for i in range(20)]
    with session_conf(spark, {"spark.kstate.standbyReplicas": "1"}):
        with FileStream(
            spark, str(tmp_path / "src"), str(tmp_path / "ckpt"), lambda df: dedup(df, "by_key", "1 hour")
        ) as s:
            s.add_batch(records[:10])
            s.add_batch(records[10:])
            status = kstate.replica_status(s.query)
            progress = json.loads(s.query.lastProgress.json)
            seqs = s.seqs()
    assert seqs == list(range(5))  # the first record of each key, as without standbys
    partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))
    assert sorted(r["partition"] for r in status) == list(range(partitions))
    for r in status:
        assert r["active"] == "driver" and r["standbys"] == [] and r["store"] == "default"
        assert r["committed_version"] >= 1
    metrics = progress["stateOperators"][0]["customMetrics"]
    assert metrics["kstateStandbys"] == 0
    assert metrics["kstateStandbyLagVersions"] >= 1  # no standby: the whole committed version


def test_without_standbys_the_status_lists_the_stores_for_warm_ups_only(spark, tmp_path):
    """Warm-ups (spark.kstate.maxWarmupReplicas, default 2) need no standbys: the coordinator
    tracks the stores; on one executor nothing moves and nothing warms."""
    with FileStream(
        spark, str(tmp_path / "src"), str(tmp_path / "ckpt"), lambda df: dedup(df, "by_key", "1 hour")
    ) as s:
        s.add_batch([dict(seq=1, k="a", id="i1", ts=1000)])
        s.add_batch([dict(seq=2, k="b", id="i2", ts=2000)])
        status = kstate.replica_status(s.query)
        metrics = json.loads(s.query.lastProgress.json)["stateOperators"][0]["customMetrics"]
    assert status and all(
        r["standbys"] == [] and r["warmup"] is None and r["moving_to"] is None and r["active"] == "driver"
        for r in status
    )
    assert metrics["kstateStandbys"] == 0 and metrics["kstateStandbyLagVersions"] == 0
    assert metrics["kstateWarmups"] == 0 and metrics["kstateOwnershipMoves"] == 0


def test_neither_standbys_nor_warm_ups_leaves_placement_to_spark(spark, tmp_path):
    with session_conf(spark, {"spark.kstate.maxWarmupReplicas": "0"}):
        with FileStream(
            spark, str(tmp_path / "src"), str(tmp_path / "ckpt"), lambda df: dedup(df, "by_key", "1 hour")
        ) as s:
            s.add_batch([dict(seq=1, k="a", id="i1", ts=1000)])
            assert kstate.replica_status(s.query) == []


def test_configure_adds_the_plugin_once_and_keeps_other_plugins():
    from pyspark.sql import SparkSession

    b = SparkSession.builder.config("spark.plugins", "com.example.Other")
    b = kstate.configure(kstate.configure(b))
    assert b._options["spark.plugins"] == "com.example.Other,io.kstate.KStatePlugin"
