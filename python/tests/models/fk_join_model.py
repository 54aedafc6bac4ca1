"""Reference model of kstate's foreign-key table–table join (KIP-213), record by record, as Kafka
processes each record through both stages before the next. Written independently of the Scala
code, straight from the rules in docs/tables.md ("Foreign-key joins"):

- each side is a table: a null key or null timestamp is dropped; an unversioned side keeps the
  last value by processing order; a versioned side ignores an update older than its key's latest
  version (KIP-914; equal timestamps replace) and otherwise keeps it as the latest (the model
  never drops a late update: the tests use a history retention no update exceeds);
- a left row ``v`` refers to the right key ``fk(v)`` (None: no foreign key);
- the join result of left key ``k``: with a right value ``r`` for ``fk(v)``, ``(v, r)``; without
  one, ``(v, None)`` in a left join and no result in an inner join; no result for a deleted left
  row. After each record the result table is exactly this (no stale result survives);
- a left update re-joins its key; a right update re-joins every left key referring to it.

``update`` returns the result changes a record causes: ``(left key, new result or None)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

Result = Tuple[object, object]


@dataclass
class Side:
    versioned: bool = False
    values: Dict[object, object] = field(default_factory=dict)
    latest_ts: Dict[object, int] = field(default_factory=dict)

    def put(self, key: object, value: object, ts: Optional[int]) -> bool:
        """Applies the update; False when it is dropped or (versioned) out of order."""
        if key is None or ts is None:
            return False
        if self.versioned and key in self.latest_ts and ts < self.latest_ts[key]:
            return False
        self.latest_ts[key] = ts
        if value is None:
            self.values.pop(key, None)
        else:
            self.values[key] = value
        return True


@dataclass
class FkJoin:
    foreign_key: Callable[[object], object]
    left_join: bool
    left: Side = field(default_factory=Side)
    right: Side = field(default_factory=Side)
    results: Dict[object, Result] = field(default_factory=dict)

    def _result(self, key: object) -> Optional[Result]:
        v = self.left.values.get(key)
        if v is None:
            return None
        fk = self.foreign_key(v)
        r = None if fk is None else self.right.values.get(fk)
        if r is None:
            return (v, None) if self.left_join else None
        return (v, r)

    def _rejoin(self, keys: List[object]) -> List[Tuple[object, Optional[Result]]]:
        changes = []
        for k in keys:
            new = self._result(k)
            if new != self.results.get(k) or new is not None:
                changes.append((k, new))
            if new is None:
                self.results.pop(k, None)
            else:
                self.results[k] = new
        return changes

    def update(
        self, is_left: bool, key: object, value: object, ts: Optional[int]
    ) -> List[Tuple[object, Optional[Result]]]:
        if is_left:
            return self._rejoin([key]) if self.left.put(key, value, ts) else []
        if not self.right.put(key, value, ts):
            return []
        return self._rejoin(sorted((k for k, v in self.left.values.items() if self.foreign_key(v) == key), key=str))
