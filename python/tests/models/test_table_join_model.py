"""The table–table join model against KIP-914's sequences and the docs/tables.md kinds table."""

import pytest

from models.table_join_model import TableJoinModel
from models.table_model import TableModel

SIDES = {"A": "left", "B": "right"}


def _run(seq, how="inner", versioned=False):
    tables = {s: TableModel((100, 100) if versioned else None) for s in SIDES}
    join, out = TableJoinModel(how, versioned, versioned), []
    for side, v, ts in seq:
        c = tables[side].process("k", v, ts)
        r = join.change(SIDES[side], c.key, c.new, c.old, c.ts, c.latest)
        if r is not None:
            out.append(r[1:])
    return out


@pytest.mark.parametrize(
    "seq,versioned,unversioned",
    [
        (
            [("A", "a0", 0), ("A", "a4", 4), ("B", "b2", 2), ("B", "b1", 1)],
            [("a4", "b2", 4)],
            [("a4", "b2", 4), ("a4", "b1", 4)],
        ),
        (
            [("A", "a0", 0), ("A", "a5", 5), ("B", "b2", 2), ("B", "b3", 3), ("B", "b4", 4), ("A", "a1", 1)],
            [("a5", "b2", 5), ("a5", "b3", 5), ("a5", "b4", 5)],
            [("a5", "b2", 5), ("a5", "b3", 5), ("a5", "b4", 5), ("a1", "b4", 4)],
        ),
        (
            [("A", "a0", 0), ("B", "b2", 2), ("A", "a5", 5), ("A", "a1", 1)],
            [("a0", "b2", 2), ("a5", "b2", 5)],
            [("a0", "b2", 2), ("a5", "b2", 5), ("a1", "b2", 2)],
        ),
        (
            [("A", "a0", 0), ("B", "b0", 0), ("A", "a4", 4), ("B", "b3", 3), ("B", "b2", 2), ("A", "a1", 1)],
            [("a0", "b0", 0), ("a4", "b0", 4), ("a4", "b3", 4)],
            [("a0", "b0", 0), ("a4", "b0", 4), ("a4", "b3", 4), ("a4", "b2", 4), ("a1", "b2", 2)],
        ),
    ],
)
def test_kip914_sequences(seq, versioned, unversioned) -> None:
    assert _run(seq, versioned=True) == versioned
    assert _run(seq) == unversioned


@pytest.mark.parametrize(
    "how,expected",
    [
        ("inner", [("a1", "b2", 2), (None, None, 3)]),
        ("left", [("a1", None, 1), ("a1", "b2", 2), (None, None, 3)]),
        ("outer", [("a1", None, 1), ("a1", "b2", 2), (None, "b2", 3), (None, None, 4)]),
    ],
)
def test_kinds_and_tombstones(how, expected) -> None:
    assert _run([("A", "a1", 1), ("B", "b2", 2), ("A", None, 3), ("B", None, 4)], how) == expected
