"""Reference model of the stream–table join (Kafka's ``KStreamKTableJoin`` with KIP-914's as-of
lookups and KIP-923's grace buffer), record by record for one state partition. Written from the
KIPs and docs/tables.md, independently of kstate's code.

Table side (the table's passed-on changes, in the table's processing order): unversioned, the
key's value is its last update; versioned, every change is a version ``(ts, value)`` (tombstones
too), and the table's stream time is the largest change timestamp.

Lookup as of ``t``: unversioned, the latest value whatever ``t``; versioned, the value of the
version with the largest timestamp <= ``t``, except past the history retention
(``t < table stream time - R``): only the key's latest version, if its timestamp <= ``t``.

Stream side, row ``(k, v, ts)``:
- null key or null timestamp: inner drops it, left emits it at once with a null table value;
- without grace: joined at once (inner: dropped when the lookup finds nothing; left: null);
- with grace ``g``: if ``ts < buffer stream time - g`` it is joined at once; otherwise buffered,
  the buffer's stream time := max(it, ts), and every buffered row with ``ts + g <= buffer stream
  time`` is released, by (timestamp, key, arrival), each joined as of its own timestamp against
  the table as it is then. Table changes never move the buffer's stream time nor release rows.

An emitted result is ``(key, stream value, table value or None, ts)``.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

NEG_INF = -(2**63)

Result = Tuple[Any, Any, Any, Optional[int]]


@dataclass
class VersionedLookup:
    """A key's versions by timestamp (a later version at the same timestamp replaces it)."""

    retention: int
    versions: Dict[Any, List[Tuple[int, Any]]] = field(default_factory=dict)
    stream_time: int = NEG_INF

    def put(self, key: Any, value: Any, ts: int) -> None:
        self.stream_time = max(self.stream_time, ts)
        vs = self.versions.setdefault(key, [])
        i = bisect.bisect_left([t for t, _ in vs], ts)
        if i < len(vs) and vs[i][0] == ts:
            vs[i] = (ts, value)
        else:
            vs.insert(i, (ts, value))

    def get(self, key: Any, as_of: int) -> Any:
        vs = self.versions.get(key, [])
        if not vs:
            return None
        if as_of < self.stream_time - self.retention:
            ts, value = vs[-1]
            return value if ts <= as_of else None
        found = None
        for ts, value in vs:
            if ts <= as_of:
                found = value
        return found


@dataclass
class StreamTableJoinModel:
    how: str = "inner"  # or "left"
    retention: Optional[int] = None  # None: unversioned table
    grace: Optional[int] = None
    latest: Dict[Any, Any] = field(default_factory=dict)
    versioned: Optional[VersionedLookup] = None
    buffer: List[Tuple[int, Any, int, Any]] = field(default_factory=list)  # (ts, key, arrival, value)
    buffer_time: int = NEG_INF
    arrivals: int = 0

    def __post_init__(self) -> None:
        assert self.how in ("inner", "left")
        assert self.grace is None or self.retention is not None, "grace needs a versioned table"
        if self.retention is not None:
            self.versioned = VersionedLookup(self.retention)

    def table(self, key: Any, value: Any, ts: int) -> None:
        """A change the table passed on (never a null key or timestamp)."""
        if self.versioned is not None:
            self.versioned.put(key, value, ts)
        elif value is None:
            self.latest.pop(key, None)
        else:
            self.latest[key] = value

    def _join(self, key: Any, value: Any, ts: int) -> List[Result]:
        found = self.latest.get(key) if self.versioned is None else self.versioned.get(key, ts)
        if found is None and self.how == "inner":
            return []
        return [(key, value, found, ts)]

    def stream(self, key: Any, value: Any, ts: Optional[int]) -> List[Result]:
        """The results emitted when stream row ``key: value @ ts`` is processed."""
        if key is None or ts is None:
            return [] if self.how == "inner" else [(key, value, None, ts)]
        if self.grace is None:
            return self._join(key, value, ts)
        if self.buffer_time != NEG_INF and ts < self.buffer_time - self.grace:
            return self._join(key, value, ts)
        self.buffer.append((ts, key, self.arrivals, value))
        self.arrivals += 1
        self.buffer_time = max(self.buffer_time, ts)
        due = sorted(r for r in self.buffer if r[0] + self.grace <= self.buffer_time)
        self.buffer = [r for r in self.buffer if r[0] + self.grace > self.buffer_time]
        out: List[Result] = []
        for rts, rkey, _, rvalue in due:
            out += self._join(rkey, rvalue, rts)
        return out
