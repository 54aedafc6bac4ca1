"""Bad input for the table operators (issue 15 §3's list), each where it applies: to_table, the
stream–table join, the table–table join and group_by. Every case is a named ``KSTATE_*`` error,
at construction, or when the restarted query starts for a changed configuration. Cases already
asserted elsewhere: test_tables.py (unknown key column, wrong-typed timestamp, grace > retention,
negative retention, suppress on a versioned table), test_stream_table_join.py (grace on an
unversioned table, grace > retention, negative grace, STRING vs BINARY keys, TIMESTAMP vs BIGINT
times), test_table_join.py (INT vs STRING keys, TIMESTAMP vs BIGINT times), test_table_aggregate.py
(unknown group and sum columns, non-numeric sum). docs/tables.md, "How it is tested", lists
them all."""

from __future__ import annotations

import os

import pytest
from _streaming import FileStream
from kstate import BufferConfig, KStateError, Suppressed, VersionedTable
from pyspark.sql import functions as F
from test_dedup_errors import _expect_query_error

SCHEMA = "side STRING, k STRING, v STRING, ts LONG"


@pytest.fixture(scope="module")
def df(spark):
    return spark.createDataFrame([("t", "a", "x", 1)], SCHEMA)


def _table(df, value="tv", versioned=None):
    return df.select("k", F.col("v").alias(value), "ts").kstate.to_table("k", "ts", versioned=versioned)


def _stream(df):
    return df.select("k", "v", "ts")


V10 = VersionedTable(10)
UNTIL = Suppressed.until_time_limit("1 minute", BufferConfig.unbounded())

CONSTRUCTION = {
    # to_table
    "to_table: unknown timestamp column": (lambda df: df.kstate.to_table("k", "nope"), "KSTATE_MISSING_COLUMN"),
    "to_table: MAP key (not co-partitionable)": (
        lambda df: df.withColumn("m", F.create_map("k", "v")).kstate.to_table("m", "ts"),
        "KSTATE_INVALID_KEY_TYPE",
    ),
    "to_table: STRING timestamp": (lambda df: df.kstate.to_table("k", "v"), "KSTATE_INVALID_TIMESTAMP_TYPE"),
    "to_table: negative grace": (lambda df: VersionedTable(10, grace=-1), "KSTATE_INVALID_DURATION"),
    "to_table: negative grace, string": (
        lambda df: VersionedTable("1 minute", grace="-1 second"),
        "KSTATE_INVALID_DURATION",
    ),
    "to_table: suppress on a filtered versioned table": (
        lambda df: _table(df, versioned=V10).filter(F.col("tv") == "x").suppress(UNTIL),
        "KSTATE_SUPPRESS_ON_VERSIONED_TABLE",
    ),
    "to_table: suppress on a mapped versioned table": (
        lambda df: _table(df, versioned=V10).map_values(F.upper("tv").alias("u")).suppress(UNTIL),
        "KSTATE_SUPPRESS_ON_VERSIONED_TABLE",
    ),
    # stream-table join
    "join: unknown stream key column": (
        lambda df: _stream(df).kstate.join(_table(df), key="nope", timestamp="ts"),
        "KSTATE_MISSING_COLUMN",
    ),
    "join: unknown stream timestamp column": (
        lambda df: _stream(df).kstate.join(_table(df), key="k", timestamp="nope"),
        "KSTATE_MISSING_COLUMN",
    ),
    "join: STRING stream timestamp": (
        lambda df: _stream(df).kstate.join(_table(df), key="k", timestamp="v"),
        "KSTATE_INVALID_TIMESTAMP_TYPE",
    ),
    "join: INT stream key, BIGINT table key": (
        lambda df: (
            _stream(df)
            .withColumn("k", F.length("k"))
            .kstate.join(_table(df.withColumn("k", F.length("k").cast("long"))), key="k", timestamp="ts")
        ),
        "KSTATE_MISMATCHED_INPUTS",
    ),
    "join: INT stream timestamp, BIGINT table timestamp": (
        lambda df: (
            _stream(df).withColumn("ts", F.col("ts").cast("int")).kstate.join(_table(df), key="k", timestamp="ts")
        ),
        "KSTATE_MISMATCHED_INPUTS",
    ),
    "join: MAP keys on both sides": (
        lambda df: df.select(F.create_map("k", "v").alias("m"), "ts").kstate.join(
            df.select(F.create_map("k", "v").alias("m"), F.col("v").alias("tv"), "ts").kstate.to_table("m", "ts"),
            key="m",
            timestamp="ts",
        ),
        "KSTATE_INVALID_KEY_TYPE",
    ),
    "join: grace on a filtered unversioned table": (
        lambda df: _stream(df).kstate.join(_table(df).filter(F.col("tv") == "x"), key="k", timestamp="ts", grace=1),
        "KSTATE_JOIN_GRACE_ON_UNVERSIONED_TABLE",
    ),
    "join: grace on a table join's result (unversioned)": (
        lambda df: _stream(df).kstate.join(
            _table(df, versioned=V10).join(_table(df, "tw", V10)), key="k", timestamp="ts", grace=1
        ),
        "KSTATE_JOIN_GRACE_ON_UNVERSIONED_TABLE",
    ),
    "join: grace on an aggregation's result (unversioned)": (
        lambda df: (
            _stream(df)
            .withColumnRenamed("k", "tv")
            .kstate.join(_table(df, versioned=V10).group_by("tv").count(), key="tv", timestamp="ts", grace=1)
        ),
        "KSTATE_JOIN_GRACE_ON_UNVERSIONED_TABLE",
    ),
    "join: grace > retention of a filtered versioned table": (
        lambda df: _stream(df).kstate.join(
            _table(df, versioned=V10).filter(F.col("tv") == "x"), key="k", timestamp="ts", grace=11
        ),
        "KSTATE_JOIN_GRACE_EXCEEDS_RETENTION",
    ),
    "join: negative grace, string": (
        lambda df: _stream(df).kstate.join(_table(df, versioned=V10), key="k", timestamp="ts", grace="-1 second"),
        "KSTATE_INVALID_DURATION",
    ),
    # table-table join
    "table join: INT vs BIGINT keys": (
        lambda df: _table(df.withColumn("k", F.length("k"))).join(
            _table(df.withColumn("k", F.length("k").cast("long")), "tw")
        ),
        "KSTATE_MISMATCHED_INPUTS",
    ),
    "table join: INT vs BIGINT timestamps": (
        lambda df: _table(df.withColumn("ts", F.col("ts").cast("int"))).join(_table(df, "tw")),
        "KSTATE_MISMATCHED_INPUTS",
    ),
    # group_by
    "group_by: MAP group key": (
        lambda df: _table(df).group_by(F.create_map("k", "tv")).count(),
        "KSTATE_INVALID_KEY_TYPE",
    ),
    "group_by: unknown value column": (
        lambda df: _table(df).group_by("k", value="nope").count(),
        "KSTATE_MISSING_COLUMN",
    ),
    "group_by: reduce returning another type": (
        lambda df: _table(df).group_by("k", value="tv").reduce(lambda a, v: F.length(v), lambda a, v: a),
        "KSTATE_INVALID_TABLE_AGGREGATE",
    ),
}


@pytest.mark.parametrize("case", list(CONSTRUCTION))
def test_bad_input_fails_at_construction(df, case):
    make, error = CONSTRUCTION[case]
    with pytest.raises(KStateError) as e:
        make(df)
    assert e.value.error_class == error, e.value.message


@pytest.mark.parametrize(
    "make,error",
    [
        (lambda jvm: jvm.io.kstate.tables.VersionedTable.ofMillis(-1), "KSTATE_INVALID_DURATION"),
        (lambda jvm: jvm.io.kstate.tables.VersionedTable.ofMillis(10).withGraceMillis(-1), "KSTATE_INVALID_DURATION"),
        (
            lambda jvm: jvm.io.kstate.tables.VersionedTable.ofMillis(10).withGraceMillis(11),
            "KSTATE_INVALID_VERSIONED_STORE",
        ),
    ],
)
def test_scala_versioned_table_checks_its_durations(spark, make, error):
    """The Scala API checks what Python's VersionedTable checks (Python raises before the JVM)."""
    with pytest.raises(Exception) as e:
        make(spark.sparkContext._jvm)
    assert f"[{error}]" in str(e.value)


# --- a changed configuration on restart ------------------------------------------------------


def _versioned_source(versioned):
    return lambda df: _table(df, versioned=versioned).to_stream()


def _join(versioned, grace):
    return lambda df: (
        df.filter(F.col("side") == "s")
        .select("k", "v", "ts")
        .kstate.join(
            _table(df.filter(F.col("side") == "t"), versioned=versioned),
            key="k",
            timestamp="ts",
            how="left",
            grace=grace,
        )
    )


def _table_join(right_versioned):
    return lambda df: (
        _table(df.filter(F.col("side") == "t"), versioned=V10)
        .join(_table(df.filter(F.col("side") == "s"), "tw", right_versioned), how="outer")
        .to_stream()
    )


def _count(versioned):
    return lambda df: _table(df, versioned=versioned).group_by("tv").count().to_stream()


RESTART_CHANGES = {
    "to_table: history retention": (
        _versioned_source(V10),
        _versioned_source(VersionedTable(20)),
        ["historyRetentionMs=10", "historyRetentionMs=20"],
    ),
    "to_table: grace": (
        _versioned_source(VersionedTable(10, grace=4)),
        _versioned_source(VersionedTable(10, grace=3)),
        ["graceMs=4", "graceMs=3"],
    ),
    "join: grace": (_join(V10, 5), _join(V10, 3), ["graceMs=5", "graceMs=3"]),
    "join: the table's history retention": (
        _join(V10, 5),
        _join(VersionedTable(20), 5),
        ["historyRetentionMs=10", "historyRetentionMs=20"],
    ),
    "table join: a side's grace": (
        _table_join(V10),
        _table_join(VersionedTable(10, grace=2)),
        ["graceMs=10", "graceMs=2"],
    ),
    "group_by: the table's history retention": (
        _count(V10),
        _count(VersionedTable(20)),
        ["historyRetentionMs=10", "historyRetentionMs=20"],
    ),
}


def _restart_with(spark, session_tmp, original, changed, error_class: str) -> str:
    """Runs ``original`` for one micro-batch, restarts on its checkpoint with ``changed``: the
    query must fail with ``error_class`` before writing anything; returns the error's text."""
    root = str(session_tmp.mktemp("tables_cfg"))
    src, ckpt = os.path.join(root, "src"), os.path.join(root, "ckpt")
    with FileStream(spark, src, ckpt, original, schema=SCHEMA) as fs:
        fs.add_batch([dict(side="t", k="a", v="x", ts=10), dict(side="s", k="a", v="y", ts=12)])
    fs2 = FileStream(spark, src, ckpt, changed, schema=SCHEMA).start()
    try:
        fs2.add_file([dict(side="t", k="a", v="z", ts=20)])
        text = _expect_query_error(fs2, error_class)
    finally:
        fs2.stop()
    assert fs2.batches == {}
    return text


@pytest.mark.parametrize("change", list(RESTART_CHANGES))
def test_changed_retention_or_grace_on_restart_is_config_changed(spark, session_tmp, change):
    original, changed, fragments = RESTART_CHANGES[change]
    text = _restart_with(spark, session_tmp, original, changed, "KSTATE_OPERATOR_CONFIG_CHANGED")
    for fragment in fragments:
        assert fragment in text, text[:3000]


def test_versioned_to_unversioned_on_restart_fails_with_sparks_operator_mismatch(spark, session_tmp):
    """Not in the issue's list, asserted as it is: a versioned table restarted as unversioned is
    another operator (its id in the checkpoint differs), so Spark's state-metadata check fails
    the query before kstate's fingerprint check is reached; the error is Spark's, not a KSTATE_
    one (docs/tables.md, "How it is tested")."""
    text = _restart_with(
        spark,
        session_tmp,
        _versioned_source(V10),
        _versioned_source(None),
        "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA",
    )
    assert "kstate_table" in text
