"""Rescaling a checkpoint that holds Spark's own stateful operators beside kstate's
(docs/operators.md, "Rescaling state"): ``kstate.repartition_state`` moves kstate's operators
itself and Spark's with Spark's own rewrite, in one repartition micro-batch.

The query: Spark's ``dropDuplicates`` on the record id, kstate's ``deduplicate_by_key``, then
Spark's ``groupBy(...).agg`` in update mode: two of Spark's operators around one of kstate's. Its
input is in event-time order, so no output depends on the partition count: the rescaled run must
give the uninterrupted run's rows micro-batch by micro-batch. Spark's operators keep their state
on Spark's RocksDB provider (moved by Spark's own rewrite), its HDFS provider or kstate's (moved
by kstate through Spark's state reader and partition keys; on kstate's provider the query ends in
session windows, a prefix-encoded store). What kstate cannot move is refused with a named error
before anything is written.
"""

from __future__ import annotations

import os
import random
from typing import Any, Dict, List, Tuple

import kstate
import pytest
from _streaming import FileStream, checkpoint_files, session_conf, shuffle_partitions
from kstate import KStateError
from pyspark.sql import functions as F

S = 1000
KEYS = [f"k{i}" for i in range(10)]
SCHEMA = "seq LONG, k STRING, v LONG, ts LONG"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
HDFS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
KSTATE = "io.kstate.KStateStoreProvider"
PROVIDER = "spark.sql.streaming.stateStore.providerClass"
FORMAT = "spark.sql.streaming.stateStore.checkpointFormatVersion"


def _build(df):
    out = df.dropDuplicates(["seq"])  # Spark's: a replayed record id is dropped
    out = out.kstate.deduplicate_by_key("8 seconds", key="k", timestamp="ts", name="by-k")
    return out.groupBy("k").agg(F.count(F.lit(1)).alias("n"), F.sum("v").alias("s"))  # Spark's


def _build_sessions(df):
    """The same with Spark's session windows last (append mode): a store whose keys are prefix-encoded."""
    out = df.dropDuplicates(["seq"])
    out = out.kstate.deduplicate_by_key("8 seconds", key="k", timestamp="ts", name="by-k")
    out = out.withColumn("t", F.timestamp_millis("ts")).withWatermark("t", "2 seconds")
    return out.groupBy(F.session_window("t", "3 seconds").alias("w"), "k").agg(
        F.count(F.lit(1)).alias("n"), F.sum("v").alias("s")
    )


def _batches(seed: int, sizes=(12, 12, 12, 12)) -> List[List[Dict[str, Any]]]:
    """Records 1 s apart (so in event-time order); each batch repeats a few earlier record ids."""
    rnd = random.Random(seed)
    out, seq = [], 0
    for n in sizes:
        batch = []
        for _ in range(n):
            batch.append(dict(seq=seq, k=rnd.choice(KEYS), v=rnd.randint(0, 9), ts=seq * S))
            seq += 1
        if out:  # replayed ids: Spark's dropDuplicates has them in its state, whatever the partition
            batch += [dict(r) for r in rnd.sample(out[-1], 3)]
        out.append(batch)
    return out


def _run(
    spark, workdir: str, batches, parts: Tuple[int, ...], cut=None, build=_build, mode="update"
) -> Dict[int, List[tuple]]:
    src, ckpt = os.path.join(workdir, "src"), os.path.join(workdir, "ckpt")
    out: Dict[int, List[tuple]] = {}

    def go(batches_, n):
        with shuffle_partitions(spark, n):
            fs = FileStream(spark, src, ckpt, build, schema=SCHEMA, output_mode=mode)
            with fs:
                for b in batches_:
                    fs.add_batch(b)
        out.update({b: sorted(tuple(r) for r in rows) for b, rows in fs.batches.items()})

    go(batches if cut is None else batches[:cut], parts[0])
    if cut is not None:
        assert kstate.repartition_state(spark, ckpt, parts[1]) == max(out) + 1
        go(batches[cut:], parts[1])
    return out


@pytest.fixture(scope="module")
def uninterrupted(spark, session_tmp) -> Dict[str, Dict[int, List[tuple]]]:
    """The uninterrupted run of each query shape, on the session's provider and 2 partitions: its
    input is in event-time order, so its output depends on neither (each case below compares its
    provider's rescaled run with it)."""
    out = {
        "update": _run(spark, str(session_tmp.mktemp("mixed_update")), _batches(7), (2,)),
        "sessions": _run(
            spark, str(session_tmp.mktemp("mixed_sessions")), _batches(7), (2,), build=_build_sessions, mode="append"
        ),
    }
    assert all(any(rows.values()) for rows in out.values()), "no output: the comparisons test nothing"
    return out


# Spark's rewrite (RocksDB, kstate's provider) one direction per checkpoint format; kstate's own
# move (HDFS) both directions. On kstate's provider the query ends in session windows (Spark's
# prefix-encoded store), moved by Spark's rewrite through the provider's empty stores.
@pytest.mark.parametrize(
    "provider,fmt,pair",
    [
        (ROCKSDB, 1, (2, 5)),
        (ROCKSDB, 2, (5, 2)),
        (HDFS, 1, (2, 5)),
        (HDFS, 1, (5, 2)),
        (KSTATE, 1, (2, 5)),
        (KSTATE, 2, (5, 2)),
    ],
    ids=[
        "rocksdb-format1-2to5",
        "rocksdb-format2-5to2",
        "hdfs-2to5",
        "hdfs-5to2",
        "kstate-sessions-format1-2to5",
        "kstate-sessions-format2-5to2",
    ],
)
def test_spark_and_kstate_operators_rescaled_equal_the_uninterrupted_run(
    spark, tmp_path, uninterrupted, pair, provider, fmt
) -> None:
    build, mode = (_build_sessions, "append") if provider == KSTATE else (_build, "update")
    whole = uninterrupted[mode if mode == "update" else "sessions"]
    with session_conf(spark, {PROVIDER: provider, FORMAT: str(fmt)}):
        got = _run(spark, str(tmp_path / "cut"), _batches(7), pair, cut=2, build=build, mode=mode)
        assert [got[b] for b in sorted(got)] == [whole[b] for b in sorted(whole)]
        # Spark's and kstate's state readers see every operator's state on the new partitions
        ckpt = str(tmp_path / "cut" / "ckpt")
        spark_ops = [op for op in os.listdir(os.path.join(ckpt, "state")) if op.isdigit() and int(op) < 10**9]
        assert len(spark_ops) == 2
        for op in spark_ops:
            rows = spark.read.format("statestore").option("operatorId", op).load(ckpt).collect()
            assert rows and {r.partition_id for r in rows} <= set(range(pair[1]))
        assert {r.partition_id for r in kstate.read_state(spark, ckpt, "by-k").collect()} <= set(range(pair[1]))
    assert not os.path.exists(os.path.join(ckpt, "_kstate"))  # the staging checkpoint is gone


def test_spark_operators_state_kstate_cannot_move_is_refused_before_anything_is_written(spark, tmp_path) -> None:
    provider, extra = HDFS, {"spark.sql.streaming.stateStore.rowChecksum.enabled": "true"}
    with session_conf(spark, {PROVIDER: provider, **extra}):
        _run(spark, str(tmp_path), _batches(3, (10, 10)), (2,))
    ckpt = str(tmp_path / "ckpt")
    before = checkpoint_files(ckpt)
    with pytest.raises(KStateError) as ei:
        kstate.repartition_state(spark, ckpt, 4)
    assert ei.value.error_class == "KSTATE_REPARTITION_UNSUPPORTED_STATE"
    assert provider in ei.value.message and "Spark's own" in ei.value.message
    assert all(k in ei.value.message for k in extra)
    assert checkpoint_files(ckpt) == before


def _after_sparks_failed_repartition(spark, work: str, batches, resume: bool) -> Dict[int, List[tuple]]:
    """Two micro-batches on 3 partitions; Spark's repartition to 4 as a Scala program calls it (it
    writes its offset log entry, moves what it can and fails on kstate's operator); then, when
    ``resume``, kstate's call with the same number; then the remaining micro-batches."""
    from pyspark.errors import SparkRuntimeException

    out = _run(spark, work, batches[:2], (3,))
    ckpt = os.path.join(work, "ckpt")
    with pytest.raises(SparkRuntimeException):
        spark._jsparkSession.streamingCheckpointManager().repartition(ckpt, 4, True)
    assert os.path.exists(os.path.join(ckpt, "offsets", "2"))
    assert not os.path.exists(os.path.join(ckpt, "commits", "2"))
    if resume:
        assert kstate.repartition_state(spark, ckpt, 4) == 2  # resumed: the same micro-batch
    fs = FileStream(spark, os.path.join(work, "src"), ckpt, _build, schema=SCHEMA, output_mode="update")
    with shuffle_partitions(spark, 4 if resume else 5), fs:  # the checkpoint's number wins
        for b in batches[2:]:
            fs.add_batch(b)
    out.update({b: sorted(tuple(r) for r in rows) for b, rows in fs.batches.items()})
    return out


def test_kstate_finishes_what_sparks_repartition_started_on_a_mixed_checkpoint(spark, tmp_path) -> None:
    batches = _batches(11)
    with session_conf(spark, {PROVIDER: ROCKSDB}):
        whole = _run(spark, str(tmp_path / "whole"), batches, (3,))
        got = _after_sparks_failed_repartition(spark, str(tmp_path / "cut"), batches, resume=True)
    assert sorted(got) == [0, 1, 3, 4]
    assert [got[b] for b in sorted(got)] == [whole[b] for b in sorted(whole)]


# format 2 (its operator metadata is undone too); the format-1 undo is tested on a checkpoint of
# kstate's operators (test_repartition.py) and of Spark's on kstate's provider (below)
def test_what_sparks_repartition_leaves_on_a_mixed_checkpoint_is_undone_on_restart(spark, tmp_path) -> None:
    batches = _batches(13)
    with session_conf(spark, {PROVIDER: ROCKSDB, FORMAT: "2"}):
        whole = _run(spark, str(tmp_path / "whole"), batches, (3,))
        got = _after_sparks_failed_repartition(spark, str(tmp_path / "undone"), batches, resume=False)
    assert sorted(got) == [0, 1, 2, 3]  # micro-batch 2 is an input batch again, on 3 partitions
    assert [got[b] for b in sorted(got)] == [whole[b] for b in sorted(whole)]


def _build_spark_only(df):
    return df.dropDuplicates(["seq"]).groupBy("k").agg(F.count(F.lit(1)).alias("n"), F.sum("v").alias("s"))


def test_spark_only_checkpoint_on_kstates_provider_sparks_call_refused_or_undone_kstates_moves_it(
    spark, tmp_path
) -> None:
    """Spark's operators alone, on kstate's provider: Spark's repartition cannot read that state
    (it reads from its RocksDB provider only). From Python it is refused before writing; what a
    JVM call leaves behind is undone on restart; ``kstate.repartition_state`` moves it."""
    from py4j.protocol import Py4JJavaError

    batches = _batches(17, (10, 10, 10, 10))
    with session_conf(spark, {PROVIDER: KSTATE}):
        whole = _run(spark, str(tmp_path / "whole"), batches, (2,), build=_build_spark_only)
        work = str(tmp_path / "cut")
        got = _run(spark, work, batches[:2], (2,), build=_build_spark_only)
        ckpt = os.path.join(work, "ckpt")
        before = checkpoint_files(ckpt)
        with pytest.raises(KStateError) as ei:
            spark._streamingCheckpointManager.repartition(ckpt, 4)
        assert ei.value.error_class == "KSTATE_REPARTITION_PROVIDER_NEEDS_KSTATE"
        assert KSTATE in ei.value.message and "kstate.repartition_state" in ei.value.message
        assert checkpoint_files(ckpt) == before
        with pytest.raises(Py4JJavaError, match="UNSUPPORTED_PROVIDER"):  # Spark's, not converted
            spark._jsparkSession.streamingCheckpointManager().repartition(ckpt, 4, True)
        assert os.path.exists(os.path.join(ckpt, "offsets", "2"))
        src = os.path.join(work, "src")
        fs = FileStream(spark, src, ckpt, _build_spark_only, schema=SCHEMA, output_mode="update")
        with shuffle_partitions(spark, 2), fs:  # the restart undoes Spark's micro-batch 2
            fs.add_batch(batches[2])
        got.update({b: sorted(tuple(r) for r in rows) for b, rows in fs.batches.items()})
        assert kstate.repartition_state(spark, ckpt, 4) == 3
        fs = FileStream(spark, src, ckpt, _build_spark_only, schema=SCHEMA, output_mode="update")
        with shuffle_partitions(spark, 2), fs:  # the checkpoint's 4 partitions win
            fs.add_batch(batches[3])
        got.update({b: sorted(tuple(r) for r in rows) for b, rows in fs.batches.items()})
    assert sorted(got) == [0, 1, 2, 4]
    assert [got[b] for b in sorted(got)] == [whole[b] for b in sorted(whole)]
    rows = spark.read.format("statestore").option("operatorId", 0).load(ckpt).collect()
    assert rows and {r.partition_id for r in rows} == set(range(4))
