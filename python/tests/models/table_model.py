"""Reference model of a table's source (Kafka's ``KTableSource`` over a timestamped or versioned
store) and of ``filter`` / ``map_values`` downstream, record by record for one state partition.
Written from KIP-889/914 and docs/tables.md, independently of kstate's code:

- a null key or a null timestamp: dropped (nothing passed on, nothing stored);
- unversioned: the key's value is its last update by processing order; every update is passed
  on as a change ``(new, old = the value before, latest = True)``, tombstones included;
- versioned (history retention R, grace G): the partition's stream time is the largest
  timestamp stored so far; an update older than stream time - G is dropped; otherwise it is
  stored as a version and passed on with ``old`` = the key's latest value before it (null when
  absent or deleted) and ``latest`` = its timestamp >= the key's latest version's (tombstones are
  versions: a key deleted at 10 stays deleted by an update at 5);
- ``filter(p)``: new and old each become null where ``p`` does not hold; on an unversioned table
  a change whose filtered new and old are both null is not passed on (on a versioned one it is);
- ``map_values(f)``: new and old each mapped (null stays null; a value mapped to null becomes
  null).

A value is any non-None Python value; None is a tombstone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

NEG_INF = -(2**63)


@dataclass(frozen=True)
class Change:
    key: Any
    new: Any
    old: Any
    ts: int
    latest: bool = True


@dataclass
class TableModel:
    """One state partition of a table source. ``versioned`` is ``(history_retention, grace)``."""

    versioned: Optional[Tuple[int, int]] = None
    latest: Dict[Any, Tuple[Any, int]] = field(default_factory=dict)  # key -> (value or None, ts)
    stream_time: int = NEG_INF
    dropped: int = 0

    def process(self, key: Any, value: Any, ts: Optional[int]) -> Optional[Change]:
        """The change passed on for update ``key: value @ ts``, or None when it is dropped."""
        if key is None or ts is None:
            self.dropped += 1
            return None
        before = self.latest.get(key)
        old = None if before is None else before[0]
        if self.versioned is None:
            self.latest[key] = (value, ts)
            return Change(key, value, old, ts, True)
        _, grace = self.versioned
        if self.stream_time != NEG_INF and ts < self.stream_time - grace:
            self.dropped += 1
            return None
        self.stream_time = max(self.stream_time, ts)
        is_latest = before is None or ts >= before[1]
        if is_latest:
            self.latest[key] = (value, ts)
        return Change(key, value, old, ts, is_latest)


def filter_change(change: Change, predicate: Callable[[Any, Any, int], bool], versioned: bool) -> Optional[Change]:
    """``filter(predicate)`` on a change; ``predicate(key, value, ts)`` on each non-null value."""

    def keep(v: Any) -> Any:
        return v if v is not None and predicate(change.key, v, change.ts) else None

    new, old = keep(change.new), keep(change.old)
    if not versioned and new is None and old is None:
        return None
    return Change(change.key, new, old, change.ts, change.latest)


def map_change(change: Change, mapper: Callable[[Any, Any, int], Any]) -> Change:
    """``map_values(mapper)`` on a change; ``mapper(key, value, ts)`` on each non-null value."""

    def f(v: Any) -> Any:
        return None if v is None else mapper(change.key, v, change.ts)

    return Change(change.key, f(change.new), f(change.old), change.ts, change.latest)


def run_table(
    records: List[Tuple[Any, Any, Optional[int]]],
    versioned: Optional[Tuple[int, int]] = None,
    downstream: Callable[[Change], Optional[Change]] = lambda c: c,
) -> List[Change]:
    """The changes one partition's table passes on (after ``downstream``) for ``records``."""
    model, out = TableModel(versioned), []
    for k, v, ts in records:
        c = model.process(k, v, ts)
        c = None if c is None else downstream(c)
        if c is not None:
            out.append(c)
    return out
