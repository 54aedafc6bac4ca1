"""The stream–table join: ``stream.kstate.join(table, key=, timestamp=, how=, grace=)`` (KIP-914, KIP-923).

Inputs come from one source with a ``side`` column (``s``: stream, ``t``: table update), so one
file is one micro-batch of both sides. The property test against the record-by-record model is
the scalatest ``StreamTableJoinStreamingSuite`` (random input on 1 and 3 state partitions).
"""

from __future__ import annotations

import os

import pytest
from _streaming import FileStream, run_batch_df, shuffle_partitions
from kstate import KStateError, VersionedTable
from pyspark.sql import functions as F

SCHEMA = "side STRING, k STRING, v STRING, ts LONG"


def s(k, v, ts):
    return {"side": "s", "k": k, "v": v, "ts": ts}


def t(k, v, ts):
    return {"side": "t", "k": k, "v": v, "ts": ts}


def _join(df, versioned=None, how="inner", grace=None, order=None, name=None):
    stream = df.filter(F.col("side") == "s").select("k", F.col("v").alias("sv"), "ts")
    updates = df.filter(F.col("side") == "t").select("k", F.col("v").alias("tv"), "ts")
    table = updates.kstate.to_table(key="k", timestamp="ts", versioned=versioned)
    return stream.kstate.join(table, key="k", timestamp="ts", how=how, grace=grace, order=order, name=name)


def _pairs(rows):
    return sorted(((r["sv"], r["tv"], r["ts"]) for r in rows), key=lambda p: (p[2] is not None, p[2] or 0, p[0]))


def _batch(spark, records, partitions=1, **kw):
    """A batch DataFrame. The join's default order there is event time (stream first on ties);
    ``order="task"`` merges the stream (left) and the table's updates (right) as Kafka's task does:
    lowest head timestamp first, each side in its order (needs the two inputs in separate input
    partitions: see docs/tables.md, "Batch DataFrames")."""
    return _pairs(run_batch_df(spark, lambda df: _join(df, **kw), records, schema=SCHEMA, partitions=partitions))


def _streaming(spark, tmp_path, records, **kw):
    """One record per micro-batch, one state partition: the records are processed exactly in list
    order (Kafka's pipe order in its TopologyTestDriver)."""
    with shuffle_partitions(spark, 1):
        fs = FileStream(spark, str(tmp_path / "src"), str(tmp_path / "ckpt"), lambda df: _join(df, **kw), schema=SCHEMA)
        with fs:
            for r in records:
                fs.add_batch([r])
    return _pairs(fs.rows())


# KIP-914: an out-of-order stream record joins the versioned table as of its own timestamp; an
# unversioned table answers with its latest value whatever the stream record's time.
ASOF = [t("a", "a0", 0), t("a", "a4", 4), s("a", "s2", 2), s("a", "s5", 5)]
ASOF_VERSIONED = [("s2", "a0", 2), ("s5", "a4", 5)]
ASOF_UNVERSIONED = [("s2", "a4", 2), ("s5", "a4", 5)]
# in task order s2 (out of order within the stream, after s5) comes after both table updates
ASOF_TASK_ORDER = [t("a", "a0", 0), t("a", "a4", 4), s("a", "s5", 5), s("a", "s2", 2)]


@pytest.mark.parametrize("versioned,expected", [(VersionedTable(100), ASOF_VERSIONED), (None, ASOF_UNVERSIONED)])
def test_kip914_lookup_as_of_the_stream_records_time_batch(spark, versioned, expected):
    assert _batch(spark, ASOF_TASK_ORDER, partitions=2, versioned=versioned, order="task") == expected


@pytest.mark.parametrize("versioned,expected", [(VersionedTable(100), ASOF_VERSIONED), (None, ASOF_UNVERSIONED)])
def test_task_order_merges_both_inputs_even_when_they_share_one_partition(spark, versioned, expected):
    """One shuffle partition and one input partition per side: Spark may union the two sides
    partition by partition, so both share an input partition; each side must still be its own
    queue (SidePositionsExec), or task order takes every stream row before any table update."""

    def build(df):
        one = df.coalesce(1)
        stream = one.filter(F.col("side") == "s").select("k", F.col("v").alias("sv"), "ts")
        updates = one.filter(F.col("side") == "t").select("k", F.col("v").alias("tv"), "ts")
        table = updates.kstate.to_table(key="k", timestamp="ts", versioned=versioned)
        return stream.kstate.join(table, key="k", timestamp="ts", order="task")

    rows = run_batch_df(spark, build, ASOF_TASK_ORDER, schema=SCHEMA, partitions=1)
    assert _pairs(rows) == expected


@pytest.mark.parametrize("versioned,expected", [(VersionedTable(100), ASOF_VERSIONED), (None, ASOF_UNVERSIONED)])
def test_kip914_lookup_as_of_the_stream_records_time_streaming(spark, tmp_path, versioned, expected):
    assert _streaming(spark, tmp_path, ASOF, versioned=versioned) == expected


# KIP-914: older than the history retention (10; table stream time 30) the lookup finds nothing:
# inner emits nothing, left emits null. Kafka's store still answers with the key's latest version
# when that is old enough: a4@4 for s@5 (docs/tables.md).
RETENTION = [t("a", "a0", 0), t("a", "a4", 4), t("b", "b30", 30), s("a", "s2", 2), s("a", "s5", 5), s("b", "s31", 31)]


@pytest.mark.parametrize(
    "how,expected",
    [
        ("inner", [("s5", "a4", 5), ("s31", "b30", 31)]),
        ("left", [("s2", None, 2), ("s5", "a4", 5), ("s31", "b30", 31)]),
    ],
)
def test_kip914_past_the_history_retention_streaming(spark, tmp_path, how, expected):
    versioned = VersionedTable(10)
    assert _streaming(spark, tmp_path, RETENTION, versioned=versioned, how=how) == expected


# KIP-923's example: a click at 10 and a profile update that arrives after it but is older (8).
KIP923 = [t("a", "old", 0), s("a", "click", 10), t("a", "new", 8), s("a", "later", 15), s("b", "end", 30)]


@pytest.mark.parametrize(
    "grace,expected",
    [
        # b@30 waits for stream time 35: not emitted yet
        (5, [("click", "new", 10), ("later", "new", 15)]),
        # without grace the click joins the table as it is when the click arrives
        (None, [("click", "old", 10), ("later", "new", 15), ("end", None, 30)]),
    ],
)
def test_kip923_grace_example_streaming(spark, tmp_path, grace, expected):
    got = _streaming(spark, tmp_path, KIP923, versioned=VersionedTable(20), how="left", grace=grace)
    assert got == expected


def test_kip923_grace_example_batch(spark):
    # a batch DataFrame is one micro-batch in event-time order: new@8 is put before the click
    # at 10 either way; with grace, b@30 is still within its grace period at the end
    versioned = VersionedTable(20)
    assert _batch(spark, KIP923, versioned=versioned, how="left", grace=5) == [
        ("click", "new", 10),
        ("later", "new", 15),
    ]
    assert _batch(spark, KIP923, versioned=versioned, how="left") == [
        ("click", "new", 10),
        ("later", "new", 15),
        ("end", None, 30),
    ]


def test_batch_join_auto_order_is_event_time(spark):
    # order="auto" on a batch join is event time (a0@0, s2@2, a4@4, s5@5): the listed order of a
    # static DataFrame would put every stream row (the left input) before every table row, so
    # nothing would match
    assert _batch(spark, ASOF, versioned=None, order="auto") == [("s2", "a0", 2), ("s5", "a4", 5)]
    assert _batch(spark, ASOF, versioned=None) == [("s2", "a0", 2), ("s5", "a4", 5)]


def test_equal_timestamps_stream_record_first(spark, tmp_path):
    recs = [t("a", "v1", 1), s("a", "s5", 5), t("a", "v5", 5)]
    for versioned in (None, VersionedTable(10)):
        assert _batch(spark, recs, versioned=versioned) == [("s5", "v1", 5)]
    assert _streaming(spark, tmp_path, recs) == [("s5", "v1", 5)]


def test_null_keys_and_timestamps(spark):
    recs = [t("a", "v", 1), s(None, "nk", 2), s("a", "nt", None), s("a", "ok", 3)]
    assert _batch(spark, recs, how="inner") == [("ok", "v", 3)]
    left = _batch(spark, recs, how="left")
    assert sorted(p[0] for p in left) == ["nk", "nt", "ok"]
    assert {p[0]: p[1] for p in left} == {"nk": None, "nt": None, "ok": "v"}


def test_output_columns_are_the_streams_then_the_tables_values(spark):
    rows = run_batch_df(spark, lambda df: _join(df, how="left"), [s("a", "x", 1)], schema=SCHEMA, partitions=1)
    assert rows[0].__fields__ == ["k", "sv", "ts", "tv"]


def test_restart_between_micro_batches_with_buffered_records(spark, tmp_path):
    """Buffered records survive restarts: the same results as one uninterrupted query."""
    batches = [
        [t("a", "a1", 1), t("b", "b1", 1), s("a", "s3", 3), s("b", "s4", 4)],
        [t("a", "a2", 2), s("a", "s6", 6), t("b", "b5", 5)],  # a2 is older than s3: counts for it
        [s("b", "s9", 9), s("a", "s12", 12)],
        [s("a", "s20", 20), s("b", "s21", 21)],
    ]
    kw = dict(versioned=VersionedTable(30), how="left", grace=5, order="event_time", name="enrich")

    def run(restart: bool, where):
        src, ckpt = str(where / "src"), str(where / "ckpt")
        out = []
        fs = FileStream(spark, src, ckpt, lambda df: _join(df, **kw), schema=SCHEMA).start()
        for b in batches:
            fs.add_batch(b)
            if restart:
                out += fs.rows()
                fs.stop()
                fs = FileStream(spark, src, ckpt, lambda df: _join(df, **kw), schema=SCHEMA).start()
        out += fs.rows()
        fs.stop()
        return _pairs(out)

    with shuffle_partitions(spark, 1):
        uninterrupted = run(False, tmp_path / "one")
        restarted = run(True, tmp_path / "restarted")
    assert restarted == uninterrupted
    # stream time 21 - grace 5: records up to 16 are out; s20, s21 still wait
    assert uninterrupted == [("s3", "a2", 3), ("s4", "b1", 4), ("s6", "a2", 6), ("s9", "b5", 9), ("s12", "a2", 12)]


@pytest.mark.parametrize(
    "kw,error",
    [
        (dict(grace=5), "KSTATE_JOIN_GRACE_ON_UNVERSIONED_TABLE"),
        (dict(versioned=VersionedTable(10), grace=11), "KSTATE_JOIN_GRACE_EXCEEDS_RETENTION"),
        (dict(versioned=VersionedTable(10), grace=-1), "KSTATE_INVALID_DURATION"),
        (dict(how="outer"), "KSTATE_INVALID_JOIN_TYPE"),
        (dict(name="bad name!"), "KSTATE_INVALID_OPERATOR_NAME"),
    ],
)
def test_bad_join_arguments_fail_at_construction(spark, kw, error):
    df = spark.createDataFrame([("s", "a", "v", 1)], SCHEMA)
    with pytest.raises(KStateError) as e:
        _join(df, **kw)
    assert e.value.error_class == error


def test_table_value_named_like_a_stream_column_fails_at_construction(spark):
    df = spark.createDataFrame([("s", "a", "v", 1)], SCHEMA)
    table = df.select("k", "v", "ts").kstate.to_table(key="k", timestamp="ts")
    with pytest.raises(KStateError) as e:
        df.kstate.join(table, key="k", timestamp="ts")
    assert e.value.error_class == "KSTATE_DUPLICATE_COLUMN"
    assert "'v'" in e.value.message and "rename" in e.value.message.lower()


@pytest.mark.parametrize(
    "stream_key,stream_ts,what",
    [
        (lambda: F.col("k").cast("binary"), lambda: F.col("ts"), "key"),
        (lambda: F.col("k"), lambda: F.timestamp_millis("ts"), "timestamp"),
    ],
)
def test_different_key_or_timestamp_types_fail_at_construction(spark, stream_key, stream_ts, what):
    stream_key, stream_ts = stream_key(), stream_ts()
    df = spark.createDataFrame([("s", "a", "v", 1)], SCHEMA)
    table = df.select("k", F.col("v").alias("tv"), "ts").kstate.to_table(key="k", timestamp="ts")
    with pytest.raises(KStateError) as e:
        df.kstate.join(table, key=stream_key, timestamp=stream_ts)
    assert e.value.error_class == "KSTATE_MISMATCHED_INPUTS"
    assert what in e.value.message


def test_join_takes_a_table(spark):
    df = spark.createDataFrame([("s", "a", "v", 1)], SCHEMA)
    with pytest.raises(TypeError):
        df.kstate.join(df, key="k", timestamp="ts")


def _stream_df(spark, tmp_path):
    os.makedirs(str(tmp_path / "in"), exist_ok=True)
    return spark.readStream.schema(SCHEMA).json(str(tmp_path / "in"))


def test_streaming_stream_with_a_static_table_fails_at_construction(spark, tmp_path):
    """Decision: a stream joined with a table built from a batch DataFrame (or the reverse) is a
    named error when the DataFrame is built, pointing to Spark's stream–static join: kstate's join
    takes the table's updates as a stream (a static table would be read again, whole, each
    micro-batch, and its time semantics would not hold)."""
    stream = _stream_df(spark, tmp_path).select("k", F.col("v").alias("sv"), "ts")
    static = spark.createDataFrame([("a", "x", 1)], "k STRING, tv STRING, ts LONG")
    table = static.kstate.to_table(key="k", timestamp="ts", versioned=VersionedTable(100))
    with pytest.raises(KStateError) as e:
        stream.kstate.join(table, key="k", timestamp="ts", how="left")
    assert e.value.error_class == "KSTATE_STREAM_STATIC_JOIN"
    assert "stream-static join" in e.value.message and "stream.join(static_df" in e.value.message


def test_batch_stream_with_a_streaming_table_fails_at_construction(spark, tmp_path):
    updates = _stream_df(spark, tmp_path).select("k", F.col("v").alias("tv"), "ts")
    table = updates.kstate.to_table(key="k", timestamp="ts")
    batch = spark.createDataFrame([("a", "s", 1)], "k STRING, sv STRING, ts LONG")
    with pytest.raises(KStateError) as e:
        batch.kstate.join(table, key="k", timestamp="ts")
    assert e.value.error_class == "KSTATE_STREAM_STATIC_JOIN"
    assert "The table is built from a streaming DataFrame and the stream from a batch" in e.value.message


def test_table_join_of_a_streaming_and_a_static_table_fails_at_construction(spark, tmp_path):
    streaming = _stream_df(spark, tmp_path).select("k", F.col("v").alias("a"), "ts").kstate.to_table("k", "ts")
    static = spark.createDataFrame([("a", "x", 1)], "k STRING, b STRING, ts LONG").kstate.to_table("k", "ts")
    for left, right in ((streaming, static), (static, streaming)):
        with pytest.raises(KStateError) as e:
            left.join(right, how="left")
        assert e.value.error_class == "KSTATE_STREAM_STATIC_JOIN"


def test_join_reports_the_versions_its_table_copy_holds(spark, tmp_path):
    """tableVersions of the join: its own copy of a versioned table (every update the table
    passes on; an update at an existing version's timestamp replaces it); 0 for an unversioned one."""
    for versioned, expected in ((VersionedTable(1000), 3), (None, 0)):
        with shuffle_partitions(spark, 2):
            fs = FileStream(
                spark,
                str(tmp_path / f"src{expected}"),
                str(tmp_path / f"ckpt{expected}"),
                lambda df, versioned=versioned: _join(df, versioned=versioned, how="left"),
                schema=SCHEMA,
            )
            with fs:
                fs.add_batch([t("a", "a1", 1), t("a", "a2", 2), t("b", "b1", 1), s("a", "x", 3)])
                fs.add_batch([t("a", "a2'", 2)])
                ops = fs.query.lastProgress["stateOperators"]
                join = [op for op in ops if op["operatorName"] == "kstate_stream_table_join"][0]
                assert join["customMetrics"]["tableVersions"] == expected
