"""Table aggregation: ``table.group_by(key, value).count() / sum / reduce`` (KIP-914, KIP-904)."""

from __future__ import annotations

import pytest
from _streaming import FileStream, run_batch_df
from kstate import KStateError, VersionedTable
from pyspark.sql import functions as F

SCHEMA = "k STRING, v LONG, ts LONG"

# KIP-914's aggregate example, one key: v1@1 and v3@5 fall into group A, v2@10 into group B.
KIP_INPUT = [{"k": "k", "v": 10, "ts": 1}, {"k": "k", "v": 21, "ts": 10}, {"k": "k", "v": 12, "ts": 5}]
# unversioned: v3 arrives last, so it is the key's value: the row moves back to A (at time 10:
# a group's timestamp never goes back)
KIP_UNVERSIONED = [("A", 1, 1), ("A", 0, 10), ("B", 1, 10), ("B", 0, 10), ("A", 1, 10)]
# versioned: v3@5 is older than v2@10, not the key's latest version: ignored; the row stays in B
KIP_VERSIONED = [("A", 1, 1), ("A", 0, 10), ("B", 1, 10)]


def _group(v):
    return F.when(v < 20, F.lit("A")).otherwise(F.lit("B")).alias("g")


def _counted(df, versioned):
    return df.kstate.to_table("k", "ts", versioned=versioned).group_by(_group(F.col("v"))).count().to_stream()


def _rows(rows, agg="count"):
    return [(r["g"], r[agg], r["ts"]) for r in rows]


@pytest.mark.parametrize("versioned,expected", [(None, KIP_UNVERSIONED), (VersionedTable("1 minute"), KIP_VERSIONED)])
def test_kip914_aggregate_example_batch(spark, versioned, expected):
    rows = run_batch_df(spark, lambda df: _counted(df, versioned), KIP_INPUT, schema=SCHEMA, partitions=1)
    assert _rows(rows) == expected


@pytest.mark.parametrize("versioned,expected", [(None, KIP_UNVERSIONED), (VersionedTable("1 minute"), KIP_VERSIONED)])
def test_kip914_aggregate_example_streaming_one_record_per_batch(spark, tmp_path, versioned, expected):
    fs = FileStream(
        spark, str(tmp_path / "src"), str(tmp_path / "ckpt"), lambda df: _counted(df, versioned), schema=SCHEMA
    )
    with fs:
        for r in KIP_INPUT:
            fs.add_batch([r])
    assert sorted(_rows(fs.rows())) == sorted(expected)
    # per micro-batch, in the order the KIP's rows arrive
    assert [sorted(_rows(fs.batches[b])) for b in sorted(fs.batches)] == (
        [[("A", 1, 1)], [("A", 0, 10), ("B", 1, 10)], [("A", 1, 10), ("B", 0, 10)]]
        if versioned is None
        else [[("A", 1, 1)], [("A", 0, 10), ("B", 1, 10)], []]
    )


def _summed(df):
    return df.kstate.to_table("k", "ts").group_by(_group(F.col("v")), value="v").sum("v").to_stream()


REKEY_INPUT = [
    [{"k": "a", "v": 3, "ts": 1}, {"k": "b", "v": 4, "ts": 2}],
    [{"k": "a", "v": 5, "ts": 3}],  # stays in A: one update (subtract 3, add 5)
    [{"k": "b", "v": None, "ts": 4}],  # tombstone: b's 4 leaves A
    [{"k": "a", "v": 25, "ts": 5}],
]  # re-keyed: leaves A (sum 0, kept), joins B
REKEY_SUMS = [[("A", 3, 1), ("A", 7, 2)], [("A", 9, 3)], [("A", 5, 4)], [("A", 0, 5), ("B", 25, 5)]]


def test_rekeyed_update_leaves_the_old_group_and_joins_the_new_batch(spark):
    rows = run_batch_df(spark, _summed, [r for b in REKEY_INPUT for r in b], schema=SCHEMA, partitions=1)
    assert _rows(rows, "sum") == [r for b in REKEY_SUMS for r in b]


def test_streaming_restart_between_batches_keeps_the_aggregates(spark, tmp_path):
    src, ckpt = str(tmp_path / "src"), str(tmp_path / "ckpt")
    got = []
    for batch in REKEY_INPUT:  # a new query on the same checkpoint for every micro-batch
        with FileStream(spark, src, ckpt, _summed, schema=SCHEMA) as fs:
            fs.add_batch(batch)
        got.append(sorted(_rows(fs.rows(), "sum")))
    assert got == [sorted(b) for b in REKEY_SUMS]


def test_reduce_with_column_functions_deletes_on_null(spark):
    rows = run_batch_df(
        spark,
        lambda df: (
            df.kstate.to_table("k", "ts")
            .group_by(_group(F.col("v")), value="v")
            .reduce(lambda agg, v: agg + v, lambda agg, v: F.when(agg - v == 0, F.lit(None)).otherwise(agg - v))
            .to_stream()
        ),
        [r for b in REKEY_INPUT for r in b],
        schema=SCHEMA,
        partitions=1,
    )
    # as the sums, except that A reaching 0 is deleted by the subtractor: a tombstone
    assert [(r["g"], r["v"], r["ts"]) for r in rows] == [
        ("A", 3, 1),
        ("A", 7, 2),
        ("A", 9, 3),
        ("A", 5, 4),
        ("A", None, 5),
        ("B", 25, 5),
    ]


def test_result_is_an_unversioned_table_keyed_by_the_group(spark):
    df = spark.createDataFrame([("a", 1, 1)], SCHEMA)
    t = df.kstate.to_table("k", "ts", versioned=VersionedTable("1 hour")).group_by(_group(F.col("v"))).count()
    assert not t.is_versioned
    assert (t.key_column, t.value_columns, t.timestamp_column) == ("g", ["count"], "ts")


@pytest.mark.parametrize(
    "build,error",
    [
        (lambda t: t.group_by("nope"), "KSTATE_MISSING_COLUMN"),
        (lambda t: t.group_by(F.rand()), "KSTATE_NON_DETERMINISTIC_EXPRESSION"),
        (lambda t: t.group_by("k").sum("nope"), "KSTATE_MISSING_COLUMN"),
        (lambda t: t.group_by("v", value="k").sum("k"), "KSTATE_INVALID_TABLE_AGGREGATE"),
        (lambda t: t.group_by("k").reduce(lambda a, v: a * 1.5, lambda a, v: a - v), "KSTATE_INVALID_TABLE_AGGREGATE"),
        (lambda t: t.group_by(F.col("v").alias("ts")).count(), "KSTATE_INVALID_TABLE_AGGREGATE"),
        (lambda t: t.group_by("k").count(name="bad name!"), "KSTATE_INVALID_OPERATOR_NAME"),
    ],
)
def test_bad_aggregations_fail_at_construction(spark, build, error):
    t = spark.createDataFrame([("a", 1, 1)], SCHEMA).kstate.to_table("k", "ts")
    with pytest.raises(KStateError) as e:
        build(t)
    assert e.value.error_class == error
