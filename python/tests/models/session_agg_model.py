"""Reference model of kstate's session-window aggregation (Kafka's
``KStreamSessionWindowAggregate``) and its fused ``suppress(until_window_closes)``, record by
record for one state partition. Written independently of the Scala code, from Kafka's rules and
docs/windows.md:

- null timestamp or null key: dropped; stream time does not move;
- close time := stream time - grace - gap; a session is open while its end > close time; once
  its end <= close time it is closed for good (Kafka 4.3: its session store no longer returns
  it, and its suppress emits it);
- the record merges with every session of its key that was open before the record (end > the
  close time before stream time moves) and whose [start, end] lies within the gap of ts
  (end >= ts - gap and start <= ts + gap): one session [min start, max end] replaces them;
- stream time := max(stream time, ts); with no session to merge, a record with ts < close time
  is late and dropped, else it starts the session [ts, ts];
- a micro-batch ends: without suppression, every session the batch created or changed is
  emitted with its current value, and every session that existed when the batch began and no
  longer exists as (start, end) is emitted as a tombstone (its key, start and end, no
  aggregates); then the sessions with end <= close time leave the state (with suppression:
  emitted now, exactly once, and never any tombstone).

Aggregates kept: count, sum and max of ``v`` (null ``v`` ignored by sum and max), and the
largest record timestamp (for sessions, its end).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

NEG_INF = -(2**63)


@dataclass
class Session:
    start: int
    end: int
    count: int = 0
    total: Optional[int] = None
    largest: Optional[int] = None
    ts: int = NEG_INF

    def absorb(self, other: "Session") -> None:
        self.start = min(self.start, other.start)
        self.end = max(self.end, other.end)
        self.count += other.count
        if other.total is not None:
            self.total = other.total if self.total is None else self.total + other.total
        if other.largest is not None:
            self.largest = other.largest if self.largest is None else max(self.largest, other.largest)
        self.ts = max(self.ts, other.ts)


# key, start, end, count, sum, max, ts, tombstone
Row = Tuple[object, int, int, Optional[int], Optional[int], Optional[int], int, bool]


@dataclass
class SessionAggModel:
    gap: int
    grace: int
    final: bool = False
    stream_time: int = NEG_INF
    sessions: Dict[object, List[Session]] = field(default_factory=dict)
    # per key touched in this batch: the (start, end) of its sessions when the batch began
    at_start: Dict[object, Set[Tuple[int, int, int]]] = field(default_factory=dict)
    changed: Dict[object, List[Session]] = field(default_factory=dict)
    late_dropped: int = 0

    def close_time(self) -> int:
        return self.stream_time - self.grace - self.gap

    def process(self, key: object, ts: Optional[int], v: Optional[int]) -> None:
        if ts is None or key is None:
            return
        open_after = self.close_time()
        self.stream_time = max(self.stream_time, ts)
        close = self.close_time()
        mine = self.sessions.setdefault(key, [])
        if key not in self.at_start:
            self.at_start[key] = {(s.start, s.end, s.ts) for s in mine}
        merging = [s for s in mine if s.end > open_after and ts - self.gap <= s.end and s.start <= ts + self.gap]
        if not merging and ts < close:
            self.late_dropped += 1
            return
        new = Session(ts, ts)
        for s in sorted(merging, key=lambda s: s.start):
            new.absorb(s)
            mine[:] = [m for m in mine if m is not s]
            self.changed[key] = [c for c in self.changed.get(key, []) if c is not s]
        new.count += 1
        if v is not None:
            new.total = v if new.total is None else new.total + v
            new.largest = v if new.largest is None else max(new.largest, v)
        new.ts = max(new.ts, ts)
        mine.append(new)
        self.changed.setdefault(key, []).append(new)

    @staticmethod
    def _row(key: object, s: Session) -> Row:
        return (key, s.start, s.end, s.count, s.total, s.largest, s.ts, False)

    def end_batch(self) -> List[Row]:
        """The rows this micro-batch emits (in no particular order)."""
        out: List[Row] = []
        if not self.final:
            for key, before in self.at_start.items():
                now = {(s.start, s.end) for s in self.sessions.get(key, [])}
                for start, end, ts in before:
                    if (start, end) not in now:
                        out.append((key, start, end, None, None, None, ts, True))
            for key, ss in self.changed.items():
                out += [self._row(key, s) for s in ss]
        self.at_start = {}
        self.changed = {}
        close = self.close_time()
        for key in list(self.sessions):
            for s in list(self.sessions[key]):
                if s.end <= close:
                    if self.final:
                        out.append(self._row(key, s))
                    self.sessions[key] = [m for m in self.sessions[key] if m is not s]
            if not self.sessions[key]:
                del self.sessions[key]
        return out
