"""Reference model of table aggregation (Kafka's ``KTableRepartitionMap`` + ``KTableAggregate``
/ ``KTableReduce``) for ``count``, ``sum`` and ``reduce``, record by record, groups of one
processing order. Written from KIP-904/914 and docs/tables.md ("Table aggregation", rules 1-6),
independently of kstate's code.

Per table change ``(key, new, old, ts, latest)``:
- versioned table and the change not its key's latest: ignored (KIP-914);
- the old value's group ``group(old)`` and the new value's ``group(new)`` (None: no group, also
  for a null value); same group: ONE group change (subtract old, add new, KIP-904); else a
  subtract from the old group, then an add to the new group.
Per group change, on the group's aggregate ``(agg, ts)``:
- subtract: skipped when the group has no aggregate; else ``agg := subtractor(agg, old)``;
- add: ``agg := value`` (count: 1) when the group has no aggregate, else ``adder(agg, value)``;
- the result's timestamp is max(change ts, the previous aggregate's ts), the change's ts when
  the group had no aggregate; an aggregate of None deletes the group (a tombstone);
- one result ``(group, agg, ts)`` per group change that was not skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Tuple

Result = Tuple[Any, Any, int]
Fn = Callable[[Any, Any], Any]


def count_functions() -> Tuple[Callable[[Any], Any], Fn, Fn]:
    """(initial value of a first add, adder, subtractor) of Kafka's ``count()``."""
    return (lambda v: 1), (lambda agg, v: agg + 1), (lambda agg, v: agg - 1)


def sum_functions() -> Tuple[Callable[[Any], Any], Fn, Fn]:
    return (lambda v: v), (lambda agg, v: agg + v), (lambda agg, v: agg - v)


def reduce_functions(adder: Fn, subtractor: Fn) -> Tuple[Callable[[Any], Any], Fn, Fn]:
    return (lambda v: v), adder, subtractor


@dataclass
class TableAggregateModel:
    group: Callable[[Any, Any], Any]  # (key, value) -> group or None; value never None
    value: Callable[[Any, Any], Any]  # (key, value) -> grouped value or None (no group)
    functions: Tuple[Callable[[Any], Any], Fn, Fn]
    versioned: bool = False
    aggregates: Dict[Any, Tuple[Any, int]] = field(default_factory=dict)

    def _group_of(self, key: Any, v: Any) -> Tuple[Any, Any]:
        if v is None:
            return None, None
        g, gv = self.group(key, v), self.value(key, v)
        return (None, None) if g is None or gv is None else (g, gv)

    def change(self, key: Any, new: Any, old: Any, ts: int, latest: bool = True) -> List[Result]:
        if self.versioned and not latest:
            return []
        old_g, old_v = self._group_of(key, old)
        new_g, new_v = self._group_of(key, new)
        if old_g is not None and old_g == new_g:
            return self._apply(old_g, old_v, new_v, ts)
        out: List[Result] = []
        if old_g is not None:
            out += self._apply(old_g, old_v, None, ts)
        if new_g is not None:
            out += self._apply(new_g, None, new_v, ts)
        return out

    def _apply(self, g: Any, subtract: Any, add: Any, ts: int) -> List[Result]:
        initial, adder, subtractor = self.functions
        prev = self.aggregates.get(g)
        agg, new_ts = (None, ts) if prev is None else (prev[0], max(ts, prev[1]))
        if subtract is not None:
            if prev is None and add is None:
                return []  # a subtraction from a group without an aggregate is skipped
            if prev is not None:
                agg = subtractor(agg, subtract)
        if add is not None:
            agg = initial(add) if agg is None else adder(agg, add)
        if agg is None:
            self.aggregates.pop(g, None)
        else:
            self.aggregates[g] = (agg, new_ts)
        return [(g, agg, new_ts)]
