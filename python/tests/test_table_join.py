"""Primary-key table–table joins: ``left.join(right, how=)`` (KIP-914's A/B sequences, errors, restart).

Both tables read one source of updates ``(side, k, v, ts)``: side "A" rows are the left table's
(value column ``a``), side "B" rows the right table's (``b``); a null ``v`` is a tombstone.
"""

from __future__ import annotations

import pytest
from _streaming import FileStream
from kstate import KStateError, VersionedTable
from pyspark.sql import functions as F

SCHEMA = "side STRING, k STRING, v STRING, ts LONG"
V = VersionedTable("1 minute")


def _side(df, side, value, versioned):
    return (
        df.filter(F.col("side") == side)
        .select("k", F.col("v").alias(value), "ts")
        .kstate.to_table("k", "ts", versioned=versioned)
    )


def _joined(df, how="inner", versioned=V):
    return _side(df, "A", "a", versioned).join(_side(df, "B", "b", versioned), how=how).to_stream()


def _rows(rows):
    return [(r["k"], r["a"], r["b"], r["ts"]) for r in rows]


def _recs(seq):
    return [{"side": s, "k": "k", "v": v, "ts": ts} for s, v, ts in seq]


# KIP-914's sequences (section "Proposed Changes", table-table joins), in arrival order.
FIRST = [("A", "a0", 0), ("A", "a5", 5), ("B", "b2", 2), ("B", "b3", 3), ("B", "b4", 4), ("A", "a1", 1)]
SECOND = [("A", "a0", 0), ("B", "b2", 2), ("A", "a5", 5), ("A", "a1", 1)]
PROBLEM = [("A", "a0", 0), ("A", "a4", 4), ("B", "b2", 2), ("B", "b1", 1)]


def _stream(spark, tmp_path, seq, build):
    with FileStream(spark, str(tmp_path / "src"), str(tmp_path / "ckpt"), build, schema=SCHEMA) as fs:
        for r in _recs(seq):
            fs.add_batch([r])  # one record per micro-batch: the KIP's arrival order
    return _rows(fs.rows())


@pytest.mark.parametrize(
    "seq,versioned,expected",
    [
        (FIRST, V, [("k", "a5", "b2", 5), ("k", "a5", "b3", 5), ("k", "a5", "b4", 5)]),
        (SECOND, V, [("k", "a0", "b2", 2), ("k", "a5", "b2", 5)]),
        (PROBLEM, V, [("k", "a4", "b2", 4)]),
        (PROBLEM, None, [("k", "a4", "b2", 4), ("k", "a4", "b1", 4)]),
    ],
)
def test_kip914_sequences_streaming(spark, tmp_path, seq, versioned, expected):
    assert _stream(spark, tmp_path, seq, lambda df: _joined(df, versioned=versioned)) == expected


def _batch(spark, seq, how="inner", versioned=V):
    df = spark.createDataFrame([(r["side"], r["k"], r["v"], r["ts"]) for r in _recs(seq)], SCHEMA).coalesce(1)
    return _rows(_joined(df, how, versioned).collect())


def test_kip914_sequences_batch(spark):
    # A static DataFrame has no arrival order across two tables: the join takes both tables'
    # updates in Kafka task order (each table's in its own order, merged by timestamp).
    assert _batch(spark, SECOND) == [("k", "a0", "b2", 2), ("k", "a5", "b2", 5)]  # the KIP's result
    # FIRST: a5 no longer arrives before b2..b4, so they join a0 first; a1 is out of order: nothing
    assert _batch(spark, FIRST) == [
        ("k", "a0", "b2", 2),
        ("k", "a0", "b3", 3),
        ("k", "a0", "b4", 4),
        ("k", "a5", "b4", 5),
    ]
    # PROBLEM, unversioned: b2 and b1 (B's order) both come before a4 (running maximum 2 < 4)
    assert _batch(spark, PROBLEM, versioned=None) == [("k", "a0", "b2", 2), ("k", "a0", "b1", 1), ("k", "a4", "b1", 4)]


@pytest.mark.parametrize(
    "how,expected",
    [
        ("inner", [("k", "a1", "b2", 2), ("k", None, None, 3)]),
        ("left", [("k", "a1", None, 1), ("k", "a1", "b2", 2), ("k", None, None, 3)]),
        ("outer", [("k", "a1", None, 1), ("k", "a1", "b2", 2), ("k", None, "b2", 3), ("k", None, None, 4)]),
    ],
)
def test_kinds_and_tombstones(spark, how, expected):
    seq = [("A", "a1", 1), ("B", "b2", 2), ("A", None, 3), ("B", None, 4)]
    assert _batch(spark, seq, how=how, versioned=None) == expected


def test_restart_between_micro_batches(spark, tmp_path):
    seq = [("A", "a1", 1), ("B", "b1", 2), ("B", "b2", 3), ("A", None, 4), ("A", "a5", 5)]
    src, ckpt = str(tmp_path / "src"), str(tmp_path / "ckpt")
    build = lambda df: _joined(df, how="left", versioned=None)  # noqa: E731
    out = []
    for r in _recs(seq):
        with FileStream(spark, src, ckpt, build, schema=SCHEMA) as fs:
            fs.add_batch([r])
        out += _rows(fs.rows())
    assert out == [
        ("k", "a1", None, 1),
        ("k", "a1", "b1", 2),
        ("k", "a1", "b2", 3),
        ("k", None, None, 4),
        ("k", "a5", "b2", 5),
    ]


def test_result_is_an_unversioned_table(spark):
    df = spark.createDataFrame([("A", "k", "x", 1)], SCHEMA)
    j = _side(df, "A", "a", V).join(_side(df, "B", "b", V), how="outer")
    assert not j.is_versioned
    assert (j.key_column, j.timestamp_column, j.value_columns) == ("k", "ts", ["a", "b"])
    out = j.map_values(F.upper("a").alias("A"), F.col("b")).filter(F.col("A").isNotNull()).to_stream().collect()
    assert [tuple(r) for r in out] == [("k", "X", None, 1)]


@pytest.mark.parametrize(
    "make,error",
    [
        (lambda left, r: left.join(r, how="right"), "KSTATE_INVALID_JOIN_TYPE"),
        (lambda left, r: left.join(left.map_values(F.col("a"))), "KSTATE_JOIN_COLUMN_CLASH"),
        (
            lambda left, r: left.join(r.to_stream().withColumn("k", F.length("k")).kstate.to_table("k", "ts")),
            "KSTATE_MISMATCHED_INPUTS",
        ),
        (
            lambda left, r: left.join(
                r.to_stream().withColumn("ts", F.timestamp_millis("ts")).kstate.to_table("k", "ts")
            ),
            "KSTATE_MISMATCHED_INPUTS",
        ),
    ],
)
def test_errors_at_construction(spark, make, error):
    df = spark.createDataFrame([("A", "k", "x", 1)], SCHEMA)
    with pytest.raises(KStateError) as e:
        make(_side(df, "A", "a", None), _side(df, "B", "b", None))
    assert e.value.error_class == error


def test_join_takes_a_table(spark):
    df = spark.createDataFrame([("A", "k", "x", 1)], SCHEMA)
    with pytest.raises(TypeError):
        _side(df, "A", "a", None).join(df)
