"""Reading state kept by kstate's operators. Decision (docs/state-store.md, "Reading state"):
kstate ships its own reader, ``kstate.read_state``, which works whatever the query-wide provider
was; Spark's ``format("statestore")`` reads kstate operators' state only when the query ran with
kstate's provider query-wide (and then both readers return the same rows);
``format("state-metadata")`` lists kstate operators either way."""

from __future__ import annotations

import json
import os
from typing import Dict, List, Sequence, Tuple

import kstate
import pytest
from kstate import KStateError
from pyspark.sql import functions as F

KSTATE_PROVIDER = "io.kstate.KStateStoreProvider"
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
PROVIDER_KEY = "spark.sql.streaming.stateStore.providerClass"
KSTATE_PROVIDER_KEY = "spark.kstate.stateStore.providerClass"
DEDUP = "kstate_deduplicate_by_key"  # the operator name state-metadata lists


def _run(spark, tmp, name, build, provider=None):
    src = os.path.join(tmp, "in")
    if not os.path.exists(src):
        spark.createDataFrame([("a", 1000), ("b", 2000), ("a", 3000)], "k string, t long").write.json(
            os.path.join(src, "0")
        )
    if provider:
        spark.conf.set(PROVIDER_KEY, provider)
    try:
        ckpt = os.path.join(tmp, name)
        df = build(spark.readStream.schema("k string, t long").json(os.path.join(src, "*")))
        q = df.writeStream.format("noop").option("checkpointLocation", ckpt).trigger(availableNow=True).start()
        q.awaitTermination()
        return ckpt
    finally:
        if provider:
            spark.conf.unset(PROVIDER_KEY)


def _operator_id(spark, ckpt, name):
    rows = spark.read.format("state-metadata").load(ckpt).collect()
    return {r.operatorName: r.operatorId for r in rows}[name]


@pytest.fixture()
def tmp(session_tmp):
    return str(session_tmp.mktemp("readers"))


def test_statestore_reader_on_spark_operator_state_in_kstate_provider(spark, tmp):
    ckpt = _run(spark, tmp, "spark_op", lambda d: d.dropDuplicates(["k"]), KSTATE_PROVIDER)
    rows = spark.read.format("statestore").load(ckpt).collect()
    assert sorted(r.key.k for r in rows) == ["a", "b"]


def test_statestore_reader_on_kstate_operator_state(spark, tmp):
    build = lambda d: d.withColumn("ts", (F.col("t") / 1000).cast("timestamp")).kstate.deduplicate_by_key(
        "10 seconds", "k", "ts"
    )
    ckpt = _run(spark, tmp, "kstate_op", build, KSTATE_PROVIDER)
    op = _operator_id(spark, ckpt, "kstate_deduplicate_by_key")
    rows = spark.read.format("statestore").option("operatorId", op).load(ckpt).collect()
    # key -> event time (ms) of the stored record: a@1000 (a@3000 was a duplicate), b@2000
    assert sorted((r.key[0], r.value[0]) for r in rows) == [("a", 1000), ("b", 2000)]


# ---- kstate.read_state ----------------------------------------------------------------------

# Two micro-batches of (key, event time ms). Every timestamp lies within one dedup interval of
# every other, so no entry expires and no record is late: the state is exactly, per key, the
# first record's time; later records of a key are duplicates that do not refresh it.
INTERVAL = "1 hour"
BATCHES: List[List[Tuple[str, int]]] = [
    [("a", 1000), ("b", 2000), ("a", 3000), ("c", 2500)],
    [("d", 4000), ("b", 5000), ("a", 6000), ("e", 4500), ("d", 4100)],
]


def _expected_states(batches: Sequence[Sequence[Tuple[str, int]]]) -> List[Dict[str, int]]:
    """Key -> stored event time after each batch: first record of a key wins (no expiry)."""
    state: Dict[str, int] = {}
    after = []
    for batch in batches:
        for k, t in batch:
            state.setdefault(k, t)
        after.append(dict(state))
    return after


def _state_partition(spark, keys) -> Dict[str, int]:
    """The state partition Spark's hash partitioning puts each key in: pmod(murmur3(k), n)."""
    n = int(spark.conf.get("spark.sql.shuffle.partitions"))
    df = spark.createDataFrame([(k,) for k in keys], "k string")
    return {r.k: r.p for r in df.select("k", F.expr(f"pmod(hash(k), {n})").alias("p")).collect()}


def _triples(df) -> List[Tuple[int, str, int]]:
    return sorted((r.partition_id, r.key.identity_0, r.value.ts) for r in df.collect())


def _recorded_conf(ckpt) -> Dict[str, str]:
    """The SQL configuration the offset log recorded for batch 0 (its second line is JSON)."""
    with open(os.path.join(ckpt, "offsets", "0"), encoding="utf-8") as f:
        return json.loads(f.read().splitlines()[1])["conf"]


def _dedup(d, name=None):
    return d.kstate.deduplicate_by_key(INTERVAL, "k", "t", name=name)


def _run_batches(spark, tmp, name, build, batches, provider=None):
    """Runs each batch as its own micro-batch (one input file each) on one checkpoint."""
    src = os.path.join(tmp, "in")
    ckpt = None
    for i, batch in enumerate(batches):
        spark.createDataFrame(batch, "k string, t long").coalesce(1).write.json(os.path.join(src, str(i)))
        ckpt = _run(spark, tmp, name, build, provider)
    return ckpt


@pytest.fixture(scope="module")
def hdfs_dedup(spark, session_tmp):
    """A kstate dedup query run for two micro-batches with the default query-wide provider."""
    tmp = str(session_tmp.mktemp("read_state"))
    return _run_batches(spark, tmp, "dedup", _dedup, BATCHES)


def test_read_state_reads_kstate_state_under_the_default_query_wide_provider(spark, hdfs_dedup):
    # The scenario this reader exists for: the query ran with Spark's default HDFS provider
    # query-wide, so Spark's reader opens that provider on kstate's files and fails.
    assert _recorded_conf(hdfs_dedup)[PROVIDER_KEY].endswith(".HDFSBackedStateStoreProvider")
    op = _operator_id(spark, hdfs_dedup, DEDUP)
    with pytest.raises(Exception, match="CANNOT_LOAD_STATE_STORE"):
        spark.read.format("statestore").option("operatorId", op).load(hdfs_dedup).collect()

    state = kstate.read_state(spark, hdfs_dedup, "deduplicate_by_key-0")
    assert state.columns == ["key", "value", "partition_id"]
    expected = _expected_states(BATCHES)[-1]
    part = _state_partition(spark, expected)
    assert _triples(state) == sorted((part[k], k, t) for k, t in expected.items())
    assert len(set(part.values())) > 1, "the keys must cover several state partitions"
    # by Spark operator id: the same rows
    assert _triples(kstate.read_state(spark, hdfs_dedup, op)) == _triples(state)


def test_read_state_of_an_older_batch_returns_that_batchs_state(spark, hdfs_dedup):
    first, second = _expected_states(BATCHES)
    part = _state_partition(spark, second)
    old = kstate.read_state(spark, hdfs_dedup, "deduplicate_by_key-0", batch_id=0)
    assert _triples(old) == sorted((part[k], k, t) for k, t in first.items())
    latest = kstate.read_state(spark, hdfs_dedup, "deduplicate_by_key-0", batch_id=1)
    assert _triples(latest) == sorted((part[k], k, t) for k, t in second.items())


def test_read_state_errors_are_raised_at_call_time(spark, hdfs_dedup, tmp):
    def error(*args, **kwargs) -> KStateError:
        with pytest.raises(KStateError) as e:
            kstate.read_state(spark, *args, **kwargs)  # no action: must fail here
        return e.value

    e = error(hdfs_dedup, "no-such-operator")
    assert e.error_class == "KSTATE_STATE_NOT_FOUND"
    assert "no-such-operator" in e.message and "deduplicate_by_key-0" in e.message
    e = error(hdfs_dedup, 1234)
    assert e.error_class == "KSTATE_STATE_NOT_FOUND" and "deduplicate_by_key-0" in e.message
    e = error(hdfs_dedup, "deduplicate_by_key-0", batch_id=2)
    assert e.error_class == "KSTATE_STATE_NOT_FOUND" and "micro-batch 2" in e.message
    assert error(tmp, "deduplicate_by_key-0").error_class == "KSTATE_STATE_NOT_FOUND"
    assert error(hdfs_dedup, "deduplicate_by_key-0", batch_id=-1).error_class == "KSTATE_INVALID_STATE_READ"
    assert error(hdfs_dedup, 1.5).error_class == "KSTATE_INVALID_STATE_READ"
    assert error(hdfs_dedup, "deduplicate_by_key-0", store_name="other").error_class == "KSTATE_STATE_NOT_FOUND"


def test_read_state_matches_spark_reader_with_kstate_provider_query_wide(spark, tmp):
    ckpt = _run_batches(spark, tmp, "both", _dedup, BATCHES, KSTATE_PROVIDER)
    op = _operator_id(spark, ckpt, DEDUP)
    for batch_id in (0, 1):
        spark_rows = spark.read.format("statestore").option("operatorId", op).option("batchId", batch_id).load(ckpt)
        ours = kstate.read_state(spark, ckpt, "deduplicate_by_key-0", batch_id=batch_id)
        assert ours.schema == spark_rows.schema
        assert sorted(ours.collect()) == sorted(spark_rows.collect())
        assert len(ours.collect()) == len(_expected_states(BATCHES)[batch_id])


def test_read_state_uses_the_provider_the_operator_recorded(spark, tmp):
    # kstate's operator on Spark's RocksDB provider (spark.kstate.stateStore.providerClass),
    # Spark's operators on the default: the reader takes the provider from the operator's
    # recorded configuration. A named operator is read by its name.
    spark.conf.set(KSTATE_PROVIDER_KEY, ROCKSDB_PROVIDER)
    try:
        ckpt = _run_batches(spark, tmp, "rocksdb", lambda d: _dedup(d, "events"), BATCHES[:1])
    finally:
        spark.conf.unset(KSTATE_PROVIDER_KEY)
    expected = _expected_states(BATCHES[:1])[-1]
    part = _state_partition(spark, expected)
    assert _triples(kstate.read_state(spark, ckpt, "events")) == sorted((part[k], k, t) for k, t in expected.items())
