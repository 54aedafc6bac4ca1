"""Property: the stream–table join's results are exactly the reference model's
(models/stream_table_join_model.py fed the table model's changes, the table's updates and the
stream's records merged in task order), for versioned tables with and
without a grace period and unversioned tables, inner and left, on random keys, values,
tombstones, null keys and timestamps, out-of-order and late rows on both sides, random
micro-batch splits, 1 and 3 state partitions. One streaming query per example; results compared
per micro-batch and per stream key, in order (see _tables_property.py)."""

from __future__ import annotations

from typing import Any, Dict, Optional

import pytest
from _property import PROPERTY_SETTINGS
from _tables_property import assert_matches_model, by_partition, scenarios, task_order
from hypothesis import given
from hypothesis import strategies as st
from kstate import VersionedTable
from models.stream_table_join_model import StreamTableJoinModel
from models.table_model import TableModel
from pyspark.sql import functions as F


def _build(how: str, versioned, grace: Optional[int]):
    def build(df):
        vt = None if versioned is None else VersionedTable(versioned[0], grace=versioned[1])
        stream = df.filter(F.col("side") == "s").select("seq", "k", "ts")
        table = (
            df.filter(F.col("side") == "t")
            .select("k", F.col("v").alias("tv"), "ts")
            .kstate.to_table("k", "ts", versioned=vt)
        )
        return stream.kstate.join(table, key="k", timestamp="ts", how=how, grace=grace)

    return build


def expected(sc: Dict[str, Any], part, how: str, versioned, grace: Optional[int]):
    tables: Dict[int, TableModel] = {}
    joins: Dict[int, StreamTableJoinModel] = {}
    out: Dict[int, Dict[Any, list]] = {}
    for b, batch in enumerate(sc["batches"]):
        for p, recs in by_partition(batch, part).items():
            table = tables.setdefault(p, TableModel(versioned))
            join = joins.setdefault(p, StreamTableJoinModel(how, None if versioned is None else versioned[0], grace))
            # the join does the table source's work (docs/tables.md, "One materialization per joined
            # table"): the table's raw updates, null keys included, take part in the task order; the
            # table model drops what the source drops and passes the rest on to the join
            updates = [r for r in recs if r["side"] == "t"]
            stream = [r for r in recs if r["side"] == "s"]
            for side, x in task_order([[(r["ts"], ("s", r)) for r in stream], [(r["ts"], ("t", r)) for r in updates]]):
                if side == "t":
                    c = table.process(x["k"], x["v"], x["ts"])
                    if c:
                        join.table(c.key, c.new, c.ts)
                else:
                    for k, seq, tv, ts in join.stream(x["k"], x["seq"], x["ts"]):
                        out.setdefault(b, {}).setdefault(k, []).append((seq, tv, ts))
    return out


@st.composite
def params(draw):
    how = draw(st.sampled_from(["inner", "left"]))
    versioned = draw(st.sampled_from([(10, 10), None, (25, 5), (10, 0)]))
    grace = None if versioned is None else draw(st.sampled_from([None, 3, 0, versioned[0]]))
    return how, versioned, grace


@pytest.mark.parametrize("partitions", [1, 3])
@PROPERTY_SETTINGS
@given(data=st.data())
def test_stream_table_join_matches_model(spark, session_tmp, partitions, data):
    how, versioned, grace = data.draw(params(), label="how, versioned, grace")
    sc = data.draw(scenarios(sides=["s", "t"]), label="scenario")
    assert_matches_model(
        spark,
        session_tmp,
        sc,
        partitions,
        _build(how, versioned, grace),
        lambda part: expected(sc, part, how, versioned, grace),
        lambda r: (r["seq"], r["tv"], r["ts"]),
        how=how,
        versioned=versioned,
        grace=grace,
    )
