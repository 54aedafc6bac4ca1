"""Spark's state readers (``format("statestore")``, ``format("state-metadata")``) on state kept by
kstate's provider. Decision (docs/state-store.md): kstate ships no reader of its own yet; Spark's
readers work when the query ran with kstate's provider query-wide."""
from __future__ import annotations

import os

import pytest
from pyspark.sql import functions as F

KSTATE_PROVIDER = "io.kstate.KStateStoreProvider"
PROVIDER_KEY = "spark.sql.streaming.stateStore.providerClass"


def _run(spark, tmp, name, build, provider=None):
    src = os.path.join(tmp, "in")
    if not os.path.exists(src):
        spark.createDataFrame([("a", 1000), ("b", 2000), ("a", 3000)], "k string, t long") \
            .write.json(os.path.join(src, "0"))
    if provider:
        spark.conf.set(PROVIDER_KEY, provider)
    try:
        ckpt = os.path.join(tmp, name)
        df = build(spark.readStream.schema("k string, t long").json(os.path.join(src, "*")))
        q = (df.writeStream.format("noop").option("checkpointLocation", ckpt)
             .trigger(availableNow=True).start())
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
    build = lambda d: d.withColumn("ts", (F.col("t") / 1000).cast("timestamp")) \
        .kstate.deduplicate_by_key("10 seconds", "k", "ts")
    ckpt = _run(spark, tmp, "kstate_op", build, KSTATE_PROVIDER)
    op = _operator_id(spark, ckpt, "kstate_deduplicate_by_key")
    rows = spark.read.format("statestore").option("operatorId", op).load(ckpt).collect()
    # key -> event time (ms) of the stored record: a@1000 (a@3000 was a duplicate), b@2000
    assert sorted((r.key[0], r.value[0]) for r in rows) == [("a", 1000), ("b", 2000)]
