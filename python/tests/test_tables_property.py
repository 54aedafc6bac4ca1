"""Property: a table's updates (``to_table(...).to_stream()``, versioned or not, with ``filter`` or
``map_values`` downstream) are exactly the reference model's (models/table_model.py), on random
keys, values, tombstones, null keys and timestamps, out-of-order and late updates, random
micro-batch splits, on 1 and 3 state partitions. Each example is ONE streaming query; its output
is compared per micro-batch and per key, in order (see _tables_property.py)."""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import pytest
from _property import PROPERTY_SETTINGS
from _tables_property import KEYS, assert_matches_model, by_partition, key_partitioner, scenarios
from hypothesis import given
from hypothesis import strategies as st
from kstate import VersionedTable
from models.table_model import TableModel, filter_change, map_change
from pyspark.sql import functions as F

DOWNSTREAM = ("none", "filter", "map_values")


def _build(versioned: Optional[Tuple[int, int]], downstream: str):
    def build(df):
        vt = None if versioned is None else VersionedTable(versioned[0], grace=versioned[1])
        t = df.select("k", "v", "ts").kstate.to_table("k", "ts", versioned=vt)
        if downstream == "filter":
            t = t.filter(F.col("v") % 2 == 0)
        elif downstream == "map_values":  # 0 maps to null: a value becomes a tombstone
            t = t.map_values(
                F.when(F.col("v") == 0, F.lit(None))
                .otherwise(F.col("v") * 10 + F.col("ts") % 3)
                .cast("long")
                .alias("v")
            )
        return t.to_stream()

    return build


def _downstream(downstream: str, versioned: bool):
    if downstream == "filter":
        return lambda c: filter_change(c, lambda k, v, ts: v % 2 == 0, versioned)
    if downstream == "map_values":
        # Spark's % keeps the dividend's sign (Python's does not): -4 % 3 is -1 in Spark
        return lambda c: map_change(
            c, lambda k, v, ts: None if v == 0 else v * 10 + (abs(ts) % 3) * (1 if ts >= 0 else -1)
        )
    return lambda c: c


def expected(sc: Dict[str, Any], part, versioned, downstream: str):
    models: Dict[int, TableModel] = {}
    after = _downstream(downstream, versioned is not None)
    out: Dict[int, Dict[Any, list]] = {}
    for b, batch in enumerate(sc["batches"]):
        for p, recs in by_partition(batch, part).items():
            m = models.setdefault(p, TableModel(versioned))
            for r in recs:
                c = m.process(r["k"], r["v"], r["ts"])
                c = None if c is None else after(c)
                if c is not None:
                    out.setdefault(b, {}).setdefault(c.key, []).append((c.new, c.ts))
    return out


@st.composite
def params(draw):
    versioned = draw(st.sampled_from([None, (10, 10), (10, 3), (30, 0)]))
    return versioned, draw(st.sampled_from(DOWNSTREAM))


def test_partition_alphabet_spread(spark):
    """Premise of the 3-partition properties: the keys fall into every state partition."""
    part = key_partitioner(spark, 3)
    assert {part(k) for k in KEYS} == {0, 1, 2}


@pytest.mark.parametrize("partitions", [1, 3])
@PROPERTY_SETTINGS
@given(data=st.data())
def test_table_updates_match_model(spark, session_tmp, partitions, data):
    versioned, downstream = data.draw(params(), label="versioned, downstream")
    sc = data.draw(scenarios(sides=["t"]), label="scenario")
    assert_matches_model(
        spark,
        session_tmp,
        sc,
        partitions,
        _build(versioned, downstream),
        lambda part: expected(sc, part, versioned, downstream),
        lambda r: (r["v"], r["ts"]),
        versioned=versioned,
        downstream=downstream,
    )
