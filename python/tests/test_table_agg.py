"""``group_by(...).agg(...)`` of declarative aggregates and Kafka's ``aggregate`` on a table."""

from __future__ import annotations

import pytest
from _property import PROPERTY_SETTINGS, micro_batches
from _streaming import FileStream, run_batch_df, shuffle_partitions
from hypothesis import given
from hypothesis import strategies as st
from kstate import KStateError, VersionedTable
from models.table_agg_model import TableAggModel
from pyspark.sql import functions as F

SCHEMA = "k STRING, g STRING, v LONG, ts LONG"
NAMES = ["count(1)", "count(v)", "sum(v)", "avg(v)"]


def _agg(df, versioned=None):
    return (
        df.kstate.to_table("k", "ts", versioned=versioned)
        .group_by("g")
        .agg(F.count("*"), F.count("v"), F.sum("v"), F.avg("v"))
        .to_stream()
    )


def _rec(k, g, v, ts):
    return {"k": k, "g": g, "v": v, "ts": ts}


def _shown(r):
    values = tuple(r[n] for n in NAMES)
    return (r["g"], None if all(x is None for x in values) else values, r["ts"])


# a: 3 in A; b: null in A (a row, no value); c: 5 in B; a moves to B; c deleted; b deleted: A empty
INPUT = [
    [_rec("a", "A", 3, 1), _rec("b", "A", None, 2), _rec("c", "B", 5, 3)],
    [_rec("a", "B", 4, 4), _rec("c", None, None, 5)],
    [_rec("b", None, None, 6)],
]
EXPECTED = [
    [("A", (1, 1, 3, 3.0), 1), ("A", (2, 1, 3, 3.0), 2), ("B", (1, 1, 5, 5.0), 3)],
    [("A", (1, 0, None, None), 4), ("B", (2, 2, 9, 4.5), 4), ("B", (1, 1, 4, 4.0), 5)],
    [("A", None, 6)],
]  # b's row leaves A: its last row, deleted (a tombstone)


def test_agg_batch_spark_null_rules_and_deleted_groups(spark):
    rows = run_batch_df(spark, _agg, [r for b in INPUT for r in b], schema=SCHEMA, partitions=1)
    assert [_shown(r) for r in rows] == [c for b in EXPECTED for c in b]


def test_agg_columns_are_nullable_a_tombstone_is_null_downstream(spark):
    # count(1) is never null in Spark's batch result, but a deleted group's tombstone has it null:
    # the result's columns must say so, or the optimizer folds isnull(count(1)) to false
    rows = run_batch_df(
        spark,
        lambda df: _agg(df).filter(F.isnull("count(1)")),
        [r for b in INPUT for r in b],
        schema=SCHEMA,
        partitions=1,
    )
    assert [_shown(r) for r in rows] == [("A", None, 6)]


def test_agg_streaming_with_a_restart_between_batches(spark, tmp_path):
    src, ckpt = str(tmp_path / "src"), str(tmp_path / "ckpt")
    got = []
    for batch in INPUT:
        with FileStream(spark, src, ckpt, _agg, schema=SCHEMA) as fs:
            fs.add_batch(batch)
        got.append(sorted(_shown(r) for r in fs.rows()))
    assert got == [sorted(b) for b in EXPECTED]


def test_agg_columns_are_named_and_typed_as_sparks(spark):
    df = spark.createDataFrame([("a", "A", 1, 1)], SCHEMA)
    aggs = (F.count("*"), F.count("v").alias("n"), F.sum("v"), F.mean("v"), (F.sum("v") / F.count("v")).alias("r"))
    t = df.kstate.to_table("k", "ts").group_by("g").agg(*aggs)
    batch = df.select("v").agg(*aggs)
    assert t.value_columns == batch.columns
    assert [(f.name, f.dataType) for f in t.to_stream().schema.fields[1:-1]] == [
        (f.name, f.dataType) for f in batch.schema.fields
    ]
    assert t.to_stream().collect()[0][1:-1] == tuple(batch.collect()[0])


def test_aggregate_with_an_initializer_of_its_own_type(spark):
    records = [_rec("a", "A", 3, 1), _rec("b", "A", 4, 2), _rec("a", "A", 6, 3), _rec("b", None, None, 4)]
    build = lambda df: (
        df.kstate.to_table("k", "ts")
        .group_by("g", value="v")
        .aggregate(  # noqa: E731
            F.struct(F.lit(0).cast("bigint").alias("n"), F.lit(0.0).alias("total")),
            lambda agg, v: F.struct((agg.n + 1).alias("n"), (agg.total + v).alias("total")),
            lambda agg, v: F.when(agg.n == 1, F.lit(None)).otherwise(
                F.struct((agg.n - 1).alias("n"), (agg.total - v).alias("total"))
            ),
        )
        .to_stream()
    )
    rows = run_batch_df(spark, build, records, schema=SCHEMA, partitions=1)
    assert [(r["g"], r["n"], r["total"], r["ts"]) for r in rows] == [
        ("A", 1, 3.0, 1),
        ("A", 2, 7.0, 2),
        ("A", 2, 10.0, 3),
        ("A", 1, 6.0, 4),
    ]
    # a Python int initializer is a BIGINT; the column is named as the initializer's alias
    t = (
        spark.createDataFrame(records, SCHEMA)
        .kstate.to_table("k", "ts")
        .group_by("g", value="v")
        .aggregate(F.lit(0).cast("bigint").alias("total"), lambda a, v: a + v, lambda a, v: a - v)
    )
    assert t.value_columns == ["total"]
    t2 = (
        spark.createDataFrame(records, SCHEMA)
        .kstate.to_table("k", "ts")
        .group_by("g", value="v")
        .aggregate(0, lambda a, v: a + v, lambda a, v: a - v)
    )
    assert t2.value_columns == ["aggregate"]
    assert [r["aggregate"] for r in t2.to_stream().collect()] == [3, 7, 10, 6]


@pytest.mark.parametrize(
    "build,error,mentions",
    [
        (lambda g: g.agg(F.count("*"), F.max("v")), "KSTATE_TABLE_AGGREGATE_WITHOUT_SUBTRACTOR", "max(v)"),
        (lambda g: g.agg(F.min("v")), "KSTATE_TABLE_AGGREGATE_WITHOUT_SUBTRACTOR", "reduce"),
        (lambda g: g.agg(F.collect_list("v")), "KSTATE_TABLE_AGGREGATE_WITHOUT_SUBTRACTOR", "collect_list"),
        (lambda g: g.agg(F.count_distinct("v")), "KSTATE_TABLE_AGGREGATE_WITHOUT_SUBTRACTOR", "DISTINCT"),
        (lambda g: g.agg(F.sum("nope")), "KSTATE_MISSING_COLUMN", "nope"),
        (lambda g: g.agg(F.col("v")), "KSTATE_INVALID_TABLE_AGGREGATE", "aggregate function"),
        (lambda g: g.agg(F.sum("v").alias("g")), "KSTATE_INVALID_TABLE_AGGREGATE", "two columns"),
        (
            lambda g: g.aggregate(F.lit(0), lambda a, v: a + v, lambda a, v: a - v),
            "KSTATE_INVALID_TABLE_AGGREGATE",
            "aggregate's type INT",
        ),
        (
            lambda g: g.aggregate(0, lambda a, v: a + v, lambda a, v: (a - v).cast("double")),
            "KSTATE_INVALID_TABLE_AGGREGATE",
            "subtractor",
        ),
        (
            lambda g: g.aggregate(F.col("v"), lambda a, v: a + v, lambda a, v: a - v),
            "KSTATE_INVALID_TABLE_AGGREGATE",
            "initializer",
        ),
    ],
)
def test_bad_agg_and_aggregate_fail_at_construction(spark, build, error, mentions):
    grouped = spark.createDataFrame([("a", "A", 1, 1)], SCHEMA).kstate.to_table("k", "ts").group_by("g", value="v")
    with pytest.raises(KStateError) as e:
        build(grouped)
    assert e.value.error_class == error
    assert mentions in str(e.value)


def test_agg_takes_columns(spark):
    grouped = spark.createDataFrame([("a", "A", 1, 1)], SCHEMA).kstate.to_table("k", "ts").group_by("g")
    with pytest.raises(TypeError):
        grouped.agg()
    with pytest.raises(TypeError):
        grouped.agg("v")


# --- property: agg against the record-by-record model ------------------------------------------


@st.composite
def _changelogs(draw):
    n = draw(st.integers(1, 14))
    times = draw(st.permutations(list(range(-5, 25))))[:n]  # distinct, out of order, negative too
    records = []
    for i in range(n):
        tombstone = draw(st.integers(0, 5)) == 0
        g = None if tombstone else draw(st.sampled_from(["A", "B", "C", None]))
        v = None if tombstone else draw(st.one_of(st.none(), st.integers(-9, 9)))
        records.append(_rec(draw(st.sampled_from("abcd")), g, v, times[i]))
    return records, draw(micro_batches(records))


def _model(batches, versioned):
    m = TableAggModel(versioned)
    changes = [[c for r in b for c in m.process(r["k"], r["g"], r["v"], r["ts"])] for b in batches]
    return changes


@pytest.mark.parametrize("partitions", [1, 3])
@pytest.mark.parametrize("versioned", [False, True])
@PROPERTY_SETTINGS
@given(data=_changelogs())
def test_agg_matches_the_model(spark, tmp_path_factory, partitions, versioned, data):
    records, batches = data
    tmp = tmp_path_factory.mktemp("agg")
    table = VersionedTable("1 day") if versioned else None
    with shuffle_partitions(spark, partitions):
        with FileStream(spark, str(tmp / "src"), str(tmp / "ckpt"), lambda df: _agg(df, table), schema=SCHEMA) as fs:
            for b in batches:
                fs.add_batch(b)
    got = [[_shown(r) for r in fs.batches.get(i, [])] for i in range(len(batches))]
    expected = [[(c.group, c.agg, c.ts) for c in b] for b in _model(batches, versioned)]
    if partitions == 1:  # one Kafka task: every change, in order
        assert got == expected
    # any number of partitions: after each micro-batch, every group's aggregate as the model's
    # (and as Spark's batch groupBy.agg of the table then): its last change of the batch
    ours, theirs = {}, {}
    for got_b, expected_b in zip(got, expected):
        for state, changes in ((ours, got_b), (theirs, expected_b)):
            for g, agg, _ in changes:
                if agg is None:
                    state.pop(g, None)
                else:
                    state[g] = agg
        assert ours == theirs
