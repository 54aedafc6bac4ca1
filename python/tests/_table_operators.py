"""The table operators of the restart and kill -9 tests, by name, shared by the tests and the
kill -9 driver process: each a ``build(source_df)`` over the property tests' schema
(``_tables_property.SCHEMA``), the sides its input uses and its model (``expected(scenario,
partition_of_key)``: batch -> key -> results) and what of them the tests compare, as the
property tests do."""

from __future__ import annotations

from typing import Any, Callable, Dict, NamedTuple, Sequence

import test_stream_table_join_property as stj
import test_table_aggregate_property as agg
import test_tables_property as tables


class TableOperator(NamedTuple):
    build: Callable[[Any], Any]
    sides: Sequence[str]
    expected: Callable[[Dict[str, Any], Callable[[Any], int]], Dict]
    key_of: Callable[[Dict[str, Any]], Any]
    row_of: Callable[[Dict[str, Any]], tuple]
    compared: Callable[[Dict], Any] = lambda c: c  # what of the output the model determines


VERSIONED = (10, 4)  # history retention 10, grace 4: late updates are dropped
JOIN_TABLE, JOIN_GRACE = (20, 20), 5

OPERATORS = {
    # a versioned table source, filtered downstream (old values and the latest flag both matter)
    "versioned_table": TableOperator(
        tables._build(VERSIONED, "filter"),
        ["t"],
        lambda sc, part: tables.expected(sc, part, VERSIONED, "filter"),
        lambda r: r["k"],
        lambda r: (r["v"], r["ts"]),
    ),
    # a left stream-table join with grace over a versioned table: the grace buffer is state
    "stream_table_join": TableOperator(
        stj._build("left", JOIN_TABLE, JOIN_GRACE),
        ["s", "t"],
        lambda sc, part: stj.expected(sc, part, "left", JOIN_TABLE, JOIN_GRACE),
        lambda r: r["k"],
        lambda r: (r["seq"], r["tv"], r["ts"]),
    ),
    # a sum over a versioned table; its model is compared as the 3-partition property does
    # (per micro-batch and group: the number of results and the last one)
    "table_aggregate": TableOperator(
        agg._build("sum", VERSIONED),
        ["t"],
        lambda sc, part: agg.expected(sc, part, "sum", VERSIONED),
        lambda r: r["g"],
        lambda r: (r["sum"], r["ts"]),
        agg._count_and_last,
    ),
}
