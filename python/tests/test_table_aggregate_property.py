"""Property: table aggregation (``group_by(...).count() / sum / reduce``) gives the reference
model's results (models/table_aggregate_model.py fed the table model's changes), on versioned
and unversioned tables, random keys, values, tombstones, null groups, null keys and timestamps,
out-of-order and late updates, random micro-batch splits. One streaming query per example.

With 1 state partition the whole output is determined: every result, per micro-batch, in order.
With 3, stage 2 interleaves the group changes of the 3 table partitions (docs/tables.md, "Order,
micro-batches and what is emitted"), so a group's intermediate results depend on that
interleaving; what does not, and is compared, is per micro-batch and group: the number of
results and the last one (``count`` and ``sum`` are commutative, a group's timestamp is the
maximum of its changes'). A non-commutative ``reduce`` depends on the interleaving even at the
end of a micro-batch, so it is compared on 1 partition only.
"""

from __future__ import annotations

from typing import Any, Dict

from _property import PROPERTY_SETTINGS
from _tables_property import assert_matches_model, by_partition, scenarios
from hypothesis import given
from hypothesis import strategies as st
from kstate import VersionedTable
from models.table_aggregate_model import TableAggregateModel, count_functions, reduce_functions, sum_functions
from models.table_model import TableModel
from pyspark.sql import functions as F

AGG_COLUMN = {"count": "count", "sum": "sum", "reduce": "v"}


def _group_column():
    v = F.col("v")
    return (
        F.when(v >= 8, F.lit(None))
        .when(v % 3 == 0, F.lit("A"))
        .when(v % 3 == 1, F.lit("B"))
        .otherwise(F.lit("C"))
        .alias("g")
    )


def _group(k, v):
    return None if v >= 8 else "ABC"[v % 3]


def _reduce_subtract(agg, v):  # deletes the group when it reaches 0
    return F.when(agg - v == 0, F.lit(None)).otherwise(agg - v)


FUNCTIONS = {
    "count": count_functions(),
    "sum": sum_functions(),
    # non-commutative: the order of a group's adds shows in the aggregate
    "reduce": reduce_functions(lambda agg, v: agg * 2 + v, lambda agg, v: None if agg - v == 0 else agg - v),
}


def _build(kind: str, versioned):
    def build(df):
        vt = None if versioned is None else VersionedTable(versioned[0], grace=versioned[1])
        t = df.select("k", "v", "ts").kstate.to_table("k", "ts", versioned=vt)
        if kind == "count":
            return t.group_by(_group_column()).count().to_stream()
        grouped = t.group_by(_group_column(), value="v")
        if kind == "sum":
            return grouped.sum("v").to_stream()
        return grouped.reduce(lambda agg, v: agg * 2 + v, _reduce_subtract).to_stream()

    return build


def expected(sc: Dict[str, Any], part, kind: str, versioned):
    """Per micro-batch, group -> results, feeding the table partitions' changes one partition
    after the other (one of the interleavings kstate may take)."""
    tables: Dict[int, TableModel] = {}
    agg = TableAggregateModel(_group, lambda k, v: v, FUNCTIONS[kind], versioned is not None)
    out: Dict[int, Dict[Any, list]] = {}
    for b, batch in enumerate(sc["batches"]):
        for p, recs in sorted(by_partition(batch, part).items()):
            table = tables.setdefault(p, TableModel(versioned))
            for r in recs:
                c = table.process(r["k"], r["v"], r["ts"])
                for g, value, ts in [] if c is None else agg.change(c.key, c.new, c.old, c.ts, c.latest):
                    out.setdefault(b, {}).setdefault(g, []).append((value, ts))
    return out


def _count_and_last(per_batch):
    return {b: {g: (len(rs), rs[-1]) for g, rs in groups.items()} for b, groups in per_batch.items()}


VERSIONINGS = [None, (10, 10), (25, 4)]


def check(spark, tmp_factory, sc, kind, versioned, partitions):
    column = AGG_COLUMN[kind]
    assert_matches_model(
        spark,
        tmp_factory,
        sc,
        partitions,
        _build(kind, versioned),
        lambda part: expected(sc, part, kind, versioned),
        lambda r: (r[column], r["ts"]),
        key_of=lambda r: r["g"],
        compared=(lambda c: c) if partitions == 1 else _count_and_last,
        kind=kind,
        versioned=versioned,
    )


@PROPERTY_SETTINGS
@given(data=st.data())
def test_count_sum_reduce_match_model_one_partition(spark, session_tmp, data):
    kind = data.draw(st.sampled_from(["count", "sum", "reduce"]), label="aggregation")
    versioned = data.draw(st.sampled_from(VERSIONINGS), label="versioned")
    check(spark, session_tmp, data.draw(scenarios(sides=["t"]), label="scenario"), kind, versioned, 1)


@PROPERTY_SETTINGS
@given(data=st.data())
def test_count_sum_match_model_three_partitions(spark, session_tmp, data):
    kind = data.draw(st.sampled_from(["count", "sum"]), label="aggregation")
    versioned = data.draw(st.sampled_from(VERSIONINGS), label="versioned")
    check(spark, session_tmp, data.draw(scenarios(sides=["t"]), label="scenario"), kind, versioned, 3)
