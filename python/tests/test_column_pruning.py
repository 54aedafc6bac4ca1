"""Selecting a subset of an operator's output columns (Spark's column pruning runs through every
kstate plan node): each table operator keeps the envelope columns its exec reads, whatever the
query projects after it. Found by the enrichment benchmark: ``stream.kstate.join(table,
...).select(<not every column>)`` failed at planning with ``None.get``."""

from __future__ import annotations

import pytest
from _streaming import run_batch_df
from kstate import VersionedTable
from pyspark.sql import functions as F

SCHEMA = "side STRING, k STRING, v STRING, n LONG, ts LONG"
RECORDS = [
    {"side": "t", "k": "a", "v": "a0", "n": 1, "ts": 0},
    {"side": "t", "k": "b", "v": "b0", "n": 2, "ts": 1},
    {"side": "s", "k": "a", "v": "s2", "n": 3, "ts": 2},
    {"side": "t", "k": "a", "v": "a4", "n": 4, "ts": 4},
    {"side": "s", "k": "a", "v": "s5", "n": 5, "ts": 5},
    {"side": "s", "k": "b", "v": "s6", "n": 6, "ts": 6},
]


def _sides(df):
    stream = df.filter(F.col("side") == "s").select("k", F.col("v").alias("sv"), F.col("n").alias("sn"), "ts")
    updates = df.filter(F.col("side") == "t").select("k", F.col("v").alias("tv"), F.col("n").alias("tn"), "ts")
    return stream, updates


def _stream_table_join(df):
    stream, updates = _sides(df)
    table = updates.kstate.to_table(key="k", timestamp="ts", versioned=VersionedTable("1 hour"))
    return stream.kstate.join(table, key="k", timestamp="ts")


def _table_join(df):
    stream, updates = _sides(df)
    left = stream.kstate.to_table(key="k", timestamp="ts")
    right = updates.kstate.to_table(key="k", timestamp="ts")
    return left.join(right, how="outer").to_stream()


def _table_source(df):
    return _sides(df)[1].kstate.to_table(key="k", timestamp="ts").to_stream()


def _table_aggregate(df):
    table = _sides(df)[1].kstate.to_table(key="k", timestamp="ts")
    return table.group_by(F.lit("all").alias("g"), value=F.col("tn")).sum("tn").to_stream()


def _fk_join(df):
    stream, updates = _sides(df)
    left = stream.kstate.to_table(key="sn", timestamp="ts")  # key n, foreign key k
    right = updates.kstate.to_table(key="k", timestamp="ts")
    return left.join(right, foreign_key="k").to_stream()


OPERATORS = {
    "stream_table_join": _stream_table_join,
    "table_join": _table_join,
    "table_source": _table_source,
    "table_aggregate": _table_aggregate,
    "fk_join": _fk_join,
}


@pytest.mark.parametrize("op", sorted(OPERATORS))
def test_every_single_output_column_can_be_selected_alone(spark, op):
    build = OPERATORS[op]
    full = run_batch_df(spark, build, RECORDS, schema=SCHEMA, partitions=1)
    assert full, "the operator produced no rows: the comparison below would prove nothing"
    for column in full[0].__fields__:
        alone = run_batch_df(
            spark, lambda df, column=column: build(df).select(column), RECORDS, schema=SCHEMA, partitions=1
        )
        assert sorted(map(str, (r[column] for r in alone))) == sorted(map(str, (r[column] for r in full))), column
