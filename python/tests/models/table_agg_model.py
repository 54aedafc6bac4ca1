"""Record-by-record reference model of ``group_by(...).agg(count("*"), count(v), sum(v), avg(v))``.

A table of keys ``k`` whose value is ``(g, v)`` (a tombstone: both null), grouped by ``g`` with
the grouped value ``(g, v)``, under Kafka's table aggregation rules (docs/tables.md "Table
aggregation") and ``agg``'s Spark semantics:

- the table: unversioned, a key's value is its last update; versioned, an update older than
  the key's latest version (tombstones included) is ignored;
- a changed row subtracts its old value from its old group, then adds its new value to its new
  group; the same group gets one change; a null group takes and gives nothing;
- a group's aggregate: ``count(*)`` its rows, ``count(v)`` its non-null ``v``, ``sum(v)`` and
  ``avg(v)`` over them (None when there is none); a group whose last row leaves is deleted
  (the change's aggregate is None, a tombstone);
- a change's timestamp is the record's, or the group's previous aggregate's when later.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

Agg = Tuple[int, int, Optional[int], Optional[float]]  # count(1), count(v), sum(v), avg(v)


@dataclass
class _Group:
    values: List[Optional[int]] = field(default_factory=list)
    ts: int = 0

    def result(self) -> Agg:
        present = [v for v in self.values if v is not None]
        total = sum(present) if present else None
        return (len(self.values), len(present), total, total / len(present) if present else None)


@dataclass(frozen=True)
class Change:
    group: str
    agg: Optional[Agg]  # None: the group was deleted (a tombstone)
    ts: int


class TableAggModel:
    """One Kafka task: the table, its groups, and the changes ``process`` emits."""

    def __init__(self, versioned: bool) -> None:
        self.versioned = versioned
        self.table: Dict[str, Tuple[int, Optional[Tuple[Optional[str], Optional[int]]]]] = {}
        self.groups: Dict[str, _Group] = {}

    def process(self, k: str, g: Optional[str], v: Optional[int], ts: int) -> List[Change]:
        latest = self.table.get(k)
        if self.versioned and latest is not None and ts < latest[0]:
            return []  # out of order: into the history only
        new = None if g is None and v is None else (g, v)
        old = latest[1] if latest is not None else None
        self.table[k] = (ts, new)
        old_g = old[0] if old is not None else None
        new_g = new[0] if new is not None else None
        if old_g is not None and old_g == new_g:
            return [self._change(old_g, old[1], new[1], ts)]
        out = []
        if old_g is not None:
            out.append(self._change(old_g, old[1], None, ts, adds=False))
        if new_g is not None:
            out.append(self._change(new_g, None, new[1], ts, subtracts=False))
        return out

    def _change(
        self, g: str, old_v: Optional[int], new_v: Optional[int], ts: int, subtracts: bool = True, adds: bool = True
    ) -> Change:
        group = self.groups.get(g)
        result_ts = ts if group is None else max(ts, group.ts)
        if subtracts and group is not None:
            group.values.remove(old_v)
            if not group.values:
                del self.groups[g]
                group = None
        if adds:
            if group is None:
                group = self.groups[g] = _Group()
            group.values.append(new_v)
        if group is None:
            return Change(g, None, result_ts)
        group.ts = result_ts
        return Change(g, group.result(), result_ts)

    def aggregates(self) -> Dict[str, Agg]:
        """Every group's current aggregate (what Spark's batch groupBy.agg of the table gives)."""
        return {g: grp.result() for g, grp in self.groups.items()}
