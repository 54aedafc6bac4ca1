"""Tables: ``to_table``, ``to_stream``, ``filter``/``map_values`` and versioned-ness (KIP-914)."""

from __future__ import annotations

import pytest
from _streaming import FileStream, run_batch_df, shuffle_partitions
from kstate import BufferConfig, KStateError, Suppressed, VersionedTable
from pyspark.sql import functions as F

SCHEMA = "k STRING, v STRING, ts LONG"


def _rows(rows):
    return [(r["k"], r["v"], r["ts"]) for r in rows]


# KIP-914's filter example: the filter's results are v1@1, null@2, null@4, v2@3 (same key); the
# inputs x and y are the values the filter turns into tombstones.
KIP_FILTER_INPUT = [
    {"k": "a", "v": "v1", "ts": 1},
    {"k": "a", "v": "x", "ts": 2},
    {"k": "a", "v": "y", "ts": 4},
    {"k": "a", "v": "v2", "ts": 3},
]
KIP_UNVERSIONED = [("a", "v1", 1), ("a", None, 2), ("a", "v2", 3)]  # null@4 after null@2: dropped
KIP_VERSIONED = [("a", "v1", 1), ("a", None, 2), ("a", None, 4), ("a", "v2", 3)]  # kept


def _filtered(df, versioned):
    t = df.kstate.to_table(key="k", timestamp="ts", versioned=versioned)
    return t.filter(F.col("v").startswith("v")).to_stream()


@pytest.mark.parametrize("versioned,expected", [(None, KIP_UNVERSIONED), (VersionedTable("1 minute"), KIP_VERSIONED)])
def test_kip914_filter_example_batch(spark, versioned, expected):
    rows = run_batch_df(spark, lambda df: _filtered(df, versioned), KIP_FILTER_INPUT, schema=SCHEMA, partitions=1)
    assert _rows(rows) == expected


@pytest.mark.parametrize("versioned,expected", [(None, KIP_UNVERSIONED), (VersionedTable("1 minute"), KIP_VERSIONED)])
def test_kip914_filter_example_streaming_one_record_per_batch(spark, tmp_path, versioned, expected):
    fs = FileStream(
        spark, str(tmp_path / "src"), str(tmp_path / "ckpt"), lambda df: _filtered(df, versioned), schema=SCHEMA
    )
    with fs:
        for r in KIP_FILTER_INPUT:
            fs.add_batch([r])
    assert _rows(fs.rows()) == expected


def test_restart_keeps_the_materialization(spark, tmp_path):
    """The old value of an update after a restart comes from the checkpointed state."""
    src, ckpt = str(tmp_path / "src"), str(tmp_path / "ckpt")
    build = lambda df: _filtered(df, None)  # noqa: E731
    with FileStream(spark, src, ckpt, build, schema=SCHEMA) as fs:
        fs.add_batch(KIP_FILTER_INPUT[:2])
    first = _rows(fs.rows())
    with FileStream(spark, src, ckpt, build, schema=SCHEMA) as fs2:
        fs2.add_batch(KIP_FILTER_INPUT[2:])
    # y@4 follows the tombstone x@2 only if the restarted query remembers x@2
    assert first + _rows(fs2.rows()) == KIP_UNVERSIONED


def test_versioned_table_drops_updates_older_than_grace(spark):
    recs = [
        {"k": "a", "v": "p", "ts": 100},
        {"k": "a", "v": "q", "ts": 90},
        {"k": "a", "v": "r", "ts": 96},
        {"k": "b", "v": "s", "ts": 94},
    ]
    versioned = VersionedTable(history_retention=60, grace=5)
    rows = run_batch_df(
        spark,
        lambda df: df.kstate.to_table("k", "ts", versioned=versioned).to_stream(),
        recs,
        schema=SCHEMA,
        partitions=1,
    )
    # stream time 100, grace 5: updates before 95 are not stored and not passed on (any key)
    assert _rows(rows) == [("a", "p", 100), ("a", "r", 96)]


def test_unversioned_table_passes_every_update_on(spark):
    recs = [{"k": "a", "v": "p", "ts": 100}, {"k": "a", "v": "q", "ts": 1}, {"k": "a", "v": None, "ts": 2}]
    rows = run_batch_df(spark, lambda df: df.kstate.to_table("k", "ts").to_stream(), recs, schema=SCHEMA, partitions=1)
    assert _rows(rows) == [("a", "p", 100), ("a", "q", 1), ("a", None, 2)]


def test_null_keys_and_timestamps_are_dropped(spark):
    recs = [{"k": None, "v": "p", "ts": 1}, {"k": "a", "v": "q", "ts": None}, {"k": "a", "v": "r", "ts": 3}]
    rows = run_batch_df(spark, lambda df: df.kstate.to_table("k", "ts").to_stream(), recs, schema=SCHEMA, partitions=1)
    assert _rows(rows) == [("a", "r", 3)]


def test_map_values_maps_new_and_old_and_keeps_tombstones(spark):
    recs = [{"k": "a", "v": "p", "ts": 1}, {"k": "a", "v": None, "ts": 2}, {"k": "a", "v": "q", "ts": 3}]
    rows = run_batch_df(
        spark,
        lambda df: df.kstate.to_table("k", "ts").map_values(F.upper("v").alias("u")).to_stream(),
        recs,
        schema=SCHEMA,
        partitions=1,
    )
    assert [(r["k"], r["u"], r["ts"]) for r in rows] == [("a", "P", 1), ("a", None, 2), ("a", "Q", 3)]
    assert rows[0].__fields__ == ["k", "u", "ts"]


def test_filter_then_map_values_then_filter_not(spark):
    recs = [{"k": "a", "v": "v1", "ts": 1}, {"k": "b", "v": "w", "ts": 2}, {"k": "a", "v": "vv", "ts": 3}]
    rows = run_batch_df(
        spark,
        lambda df: (
            df.kstate.to_table("k", "ts")
            .filter(F.col("v").startswith("v"))
            .map_values(F.length("v").alias("n"))
            .filter_not(F.col("n") > 2)
            .to_stream()
        ),
        recs,
        schema=SCHEMA,
        partitions=1,
    )
    # b: w filtered out (tombstone after nothing: dropped); a: v1 -> 2 kept, vv -> 2 kept
    assert [(r["k"], r["n"], r["ts"]) for r in rows] == [("a", 2, 1), ("a", 2, 3)]


def test_is_versioned_follows_kip914(spark):
    df = spark.createDataFrame([("a", "v", 1)], SCHEMA)
    v = df.kstate.to_table("k", "ts", versioned=VersionedTable("1 hour"))
    assert v.is_versioned
    assert v.filter(F.col("v") == "v").is_versioned
    assert v.map_values(F.upper("v").alias("v")).is_versioned
    assert not v.to_stream().kstate.to_table("k", "ts").is_versioned
    assert v.to_stream().kstate.to_table("k", "ts", versioned=VersionedTable("1 hour")).is_versioned
    assert not df.kstate.to_table("k", "ts").is_versioned
    assert (v.key_column, v.timestamp_column, v.value_columns) == ("k", "ts", ["v"])


def test_suppress_on_versioned_table_is_rejected_at_construction(spark):
    df = spark.createDataFrame([("a", "v", 1)], SCHEMA)
    v = df.kstate.to_table("k", "ts", versioned=VersionedTable("1 hour"))
    with pytest.raises(KStateError) as e:
        v.suppress(Suppressed.until_time_limit("1 minute", BufferConfig.unbounded()))
    assert e.value.error_class == "KSTATE_SUPPRESS_ON_VERSIONED_TABLE"


@pytest.mark.parametrize(
    "kwargs,error",
    [
        (dict(key=lambda: F.upper("k"), timestamp="ts"), "KSTATE_INVALID_TABLE_COLUMN"),
        (dict(key="k", timestamp="k"), "KSTATE_INVALID_TIMESTAMP_TYPE"),
        (dict(key="nope", timestamp="ts"), "KSTATE_MISSING_COLUMN"),
        (dict(key="k", timestamp="ts", versioned=None, name="bad name!"), "KSTATE_INVALID_OPERATOR_NAME"),
    ],
)
def test_bad_table_columns_fail_at_construction(spark, kwargs, error):
    df = spark.createDataFrame([("a", "v", 1)], SCHEMA)
    kwargs = {k: (v() if callable(v) else v) for k, v in kwargs.items()}
    with pytest.raises(KStateError) as e:
        df.kstate.to_table(**kwargs)
    assert e.value.error_class == error


def test_table_needs_a_value_column(spark):
    df = spark.createDataFrame([("a", 1)], "k STRING, ts LONG")
    with pytest.raises(KStateError) as e:
        df.kstate.to_table("k", "ts")
    assert e.value.error_class == "KSTATE_INVALID_TABLE_COLUMN"


@pytest.mark.parametrize(
    "make,error",
    [
        (lambda: VersionedTable("1 minute", grace="2 minutes"), "KSTATE_INVALID_VERSIONED_STORE"),
        (lambda: VersionedTable("-1 minute"), "KSTATE_INVALID_DURATION"),
    ],
)
def test_bad_versioned_config(make, error):
    with pytest.raises(KStateError) as e:
        make()
    assert e.value.error_class == error


def _custom_metrics(fs, operator):
    return [op for op in fs.query.lastProgress["stateOperators"] if op["operatorName"] == operator][0]["customMetrics"]


def test_versions_gauge_counts_puts_overwrites_and_expiry(spark, tmp_path):
    """tableVersions: the versions a versioned table holds after each micro-batch (tombstones
    included); an update with an existing version's timestamp replaces it, one older than stream
    time − grace is not stored, and versions past the history retention go when cleaned up (the
    store drops them by time segment: 2 s for a 10 ms retention)."""
    build = lambda df: df.kstate.to_table("k", "ts", versioned=VersionedTable(10, grace=5)).to_stream()  # noqa: E731
    with shuffle_partitions(spark, 2):
        with FileStream(spark, str(tmp_path / "src"), str(tmp_path / "ckpt"), build, schema=SCHEMA) as fs:
            fs.add_batch([{"k": "a", "v": "p", "ts": 0}, {"k": "a", "v": "q", "ts": 4}, {"k": "b", "v": "r", "ts": 3}])
            assert _custom_metrics(fs, "kstate_table")["tableVersions"] == 3
            fs.add_batch([{"k": "a", "v": "q2", "ts": 4}, {"k": "b", "v": None, "ts": 6}])  # replace; a tombstone
            assert _custom_metrics(fs, "kstate_table")["tableVersions"] == 4
            # both partitions' stream time 5000, cutoff 4990: a@0 (valid until 4) and b@3 (until 6)
            # expire; a@4 and b's tombstone @6 (valid until 5000) stay, with the two new versions
            fs.add_batch([{"k": "a", "v": "s", "ts": 5000}, {"k": "b", "v": "t", "ts": 5000}])
            assert _custom_metrics(fs, "kstate_table")["tableVersions"] == 4


def test_versions_gauge_is_zero_for_an_unversioned_table(spark, tmp_path):
    build = lambda df: df.kstate.to_table("k", "ts").to_stream()  # noqa: E731
    with FileStream(spark, str(tmp_path / "src"), str(tmp_path / "ckpt"), build, schema=SCHEMA) as fs:
        fs.add_batch([{"k": "a", "v": "p", "ts": 0}, {"k": "a", "v": "q", "ts": 4}])
        assert _custom_metrics(fs, "kstate_table")["tableVersions"] == 0
