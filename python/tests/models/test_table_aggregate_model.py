"""The table aggregation model against KIP-914's example and docs/tables.md's rules table."""

from models.table_aggregate_model import TableAggregateModel, count_functions, reduce_functions, sum_functions
from models.table_model import TableModel


def _ab(k, v):
    return "A" if v < 20 else "B"


def _run(records, functions, versioned=False, group=_ab):
    table = TableModel((60, 60) if versioned else None)
    agg, out = TableAggregateModel(group, lambda k, v: v, functions, versioned), []
    for k, v, ts in records:
        c = table.process(k, v, ts)
        out += agg.change(c.key, c.new, c.old, c.ts, c.latest)
    return out


KIP914 = [("k", 10, 1), ("k", 21, 10), ("k", 12, 5)]


def test_kip914_count_example() -> None:
    assert _run(KIP914, count_functions()) == [("A", 1, 1), ("A", 0, 10), ("B", 1, 10), ("B", 0, 10), ("A", 1, 10)]
    assert _run(KIP914, count_functions(), versioned=True) == [("A", 1, 1), ("A", 0, 10), ("B", 1, 10)]


REKEY = [("a", 3, 1), ("b", 4, 2), ("a", 5, 3), ("b", None, 4), ("a", 25, 5)]


def test_rekeyed_sum_and_kip904_one_update_per_same_group_change() -> None:
    assert _run(REKEY, sum_functions()) == [
        ("A", 3, 1),
        ("A", 7, 2),
        ("A", 9, 3),
        ("A", 5, 4),
        ("A", 0, 5),
        ("B", 25, 5),
    ]


def test_reduce_deleting_on_null_then_subtract_without_aggregate_is_skipped() -> None:
    fns = reduce_functions(lambda agg, v: agg + v, lambda agg, v: None if agg - v == 0 else agg - v)
    assert _run(REKEY, fns) == [("A", 3, 1), ("A", 7, 2), ("A", 9, 3), ("A", 5, 4), ("A", None, 5), ("B", 25, 5)]
    m = TableAggregateModel(_ab, lambda k, v: v, fns)
    assert m.change("x", None, 3, 7) == []  # nothing to subtract from


def test_no_group_for_a_null_group_key() -> None:
    group = lambda k, v: None if v == 0 else "A"  # noqa: E731
    assert _run([("a", 0, 1), ("a", 2, 2), ("a", 0, 3)], count_functions(), group=group) == [("A", 1, 2), ("A", 0, 3)]
