"""Property: the primary-key table–table join's results are exactly the reference model's
(models/table_join_model.py fed both table models' changes), inner, left and outer, each side
versioned or not, on random keys, values, tombstones, null keys and timestamps, out-of-order and
late updates on both sides, random micro-batch splits, 1 and 3 state partitions. One streaming
query per example; results compared per micro-batch and per key, in order (see
_tables_property.py)."""

from __future__ import annotations

from typing import Any, Dict

import pytest
from _property import PROPERTY_SETTINGS
from _tables_property import assert_matches_model, by_partition, scenarios, task_order
from hypothesis import given
from hypothesis import strategies as st
from kstate import VersionedTable
from models.table_join_model import TableJoinModel
from models.table_model import TableModel
from pyspark.sql import functions as F

SIDES = {"A": ("left", "a"), "B": ("right", "b")}


def _table(df, side: str, versioned):
    vt = None if versioned is None else VersionedTable(versioned[0], grace=versioned[1])
    return (
        df.filter(F.col("side") == side)
        .select("k", F.col("v").alias(SIDES[side][1]), "ts")
        .kstate.to_table("k", "ts", versioned=vt)
    )


def _build(how: str, left, right):
    return lambda df: _table(df, "A", left).join(_table(df, "B", right), how=how).to_stream()


def expected(sc: Dict[str, Any], part, how: str, left, right):
    tables: Dict[tuple, TableModel] = {}
    joins: Dict[int, TableJoinModel] = {}
    out: Dict[int, Dict[Any, list]] = {}
    for b, batch in enumerate(sc["batches"]):
        for p, recs in by_partition(batch, part).items():
            join = joins.setdefault(p, TableJoinModel(how, left is not None, right is not None))
            queues = []
            for side, versioned in (("A", left), ("B", right)):
                table = tables.setdefault((side, p), TableModel(versioned))
                mine = [r for r in recs if r["side"] == side]
                changes = [table.process(r["k"], r["v"], r["ts"]) for r in mine]
                # every update takes part in the merge, those the table drops too (null keys, late
                # updates): the join reads the tables' sources, as in a Kafka task (docs/tables.md,
                # "One materialization per table: the join reads its tables' sources")
                queues.append([(r["ts"], (SIDES[side][0], c)) for r, c in zip(mine, changes)])
            for side, c in task_order(queues):
                if c is None:
                    continue
                r = join.change(side, c.key, c.new, c.old, c.ts, c.latest)
                if r is not None:
                    out.setdefault(b, {}).setdefault(r[0], []).append(r[1:])
    return out


VERSIONINGS = [None, (10, 10), (25, 4)]


@pytest.mark.parametrize("partitions", [1, 3])
@PROPERTY_SETTINGS
@given(data=st.data())
def test_table_join_matches_model(spark, session_tmp, partitions, data):
    how = data.draw(st.sampled_from(["inner", "left", "outer"]), label="how")
    left = data.draw(st.sampled_from(VERSIONINGS), label="left versioned")
    right = data.draw(st.sampled_from(VERSIONINGS), label="right versioned")
    sc = data.draw(scenarios(sides=["A", "B"]), label="scenario")
    assert_matches_model(
        spark,
        session_tmp,
        sc,
        partitions,
        _build(how, left, right),
        lambda part: expected(sc, part, how, left, right),
        lambda r: (r["a"], r["b"], r["ts"]),
        how=how,
        left=left,
        right=right,
    )
