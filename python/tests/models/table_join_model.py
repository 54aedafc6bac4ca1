"""Reference model of the primary-key table–table join (Kafka's ``KTableKTableJoin``,
``LeftJoin``, ``OuterJoin`` with KIP-914's rule for versioned tables), record by record for one
state partition. Written from KIP-914 and docs/tables.md ("Table–table joins", rules 1-4),
independently of kstate's code.

Input: each table's passed-on changes ``(key, new, old, ts, latest)``, in the join's processing
order. For a change of side X ("left" or "right"):

1. X versioned and the change not its key's latest: nothing (and X's latest value stays);
2. X's latest value of the key := new (with ts; a tombstone deletes it);
3. with the other side's value O of the key (value, ts) or none: a result is emitted iff O
   exists, or X is kept alone by the join (left of a left join, both of an outer join) and new
   or old is non-null;
4. its value joins new with O: a row when both exist, or one exists and the join keeps that side
   alone; else a tombstone; its timestamp is max(ts, O's ts), ts when O is absent.

An emitted result is ``(key, left value or None, right value or None, ts)``; a tombstone is
``(key, None, None, ts)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple

Result = Tuple[Any, Any, Any, int]
KEPT_ALONE = {"inner": set(), "left": {"left"}, "outer": {"left", "right"}}


@dataclass
class TableJoinModel:
    how: str = "inner"
    left_versioned: bool = False
    right_versioned: bool = False
    values: Dict[str, Dict[Any, Tuple[Any, int]]] = field(default_factory=lambda: {"left": {}, "right": {}})

    def __post_init__(self) -> None:
        assert self.how in KEPT_ALONE

    def change(self, side: str, key: Any, new: Any, old: Any, ts: int, latest: bool = True) -> Optional[Result]:
        versioned = self.left_versioned if side == "left" else self.right_versioned
        if versioned and not latest:
            return None
        mine = self.values[side]
        if new is None:
            mine.pop(key, None)
        else:
            mine[key] = (new, ts)
        other_side = "right" if side == "left" else "left"
        other = self.values[other_side].get(key)
        alone = KEPT_ALONE[self.how]
        if other is None and not (side in alone and (new is not None or old is not None)):
            return None
        other_value = None if other is None else other[0]
        left, right = (new, other_value) if side == "left" else (other_value, new)
        row = (
            (left is not None and right is not None)
            or (left is not None and "left" in alone)
            or (right is not None and "right" in alone)
        )
        result_ts = ts if other is None else max(ts, other[1])
        return (key, left, right, result_ts) if row else (key, None, None, result_ts)
