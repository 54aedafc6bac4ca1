"""Reference model of kstate's windowed aggregation (Kafka's ``KStreamWindowAggregate``) and its
fused ``suppress(until_window_closes)``, record by record for one state partition. Written
independently of the Scala code, from Kafka's rules (KIP-328) and docs/windows.md:

- null timestamp or null key: dropped; stream time does not move (Kafka drops a null-key
  record before it observes its timestamp);
- stream time := max(stream time, ts); close time := stream time - grace;
- the record's windows: every epoch-aligned ``[k * advance, k * advance + size)`` containing ts,
  except, for ts >= 0, windows starting before 0 (Kafka's ``windowsFor``);
- per window: aggregated if window end > close time, else dropped for it as late;
- a micro-batch ends: without suppression, every window the batch changed is emitted once with
  its current value; then every window with end <= stream time - grace is closed (with
  suppression, emitted now, exactly once) and forgotten.

Aggregates kept: count, sum and max of ``v`` (null ``v`` ignored by sum and max, as in SQL), and
the largest record timestamp.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

NEG_INF = -(2**63)


def windows_for(ts: int, size: int, advance: int) -> List[int]:
    """Starts of the windows containing ``ts``, ascending (by scanning candidates, not by
    the closed-form expression kstate uses)."""
    starts = []
    k = (ts - size) // advance  # at or below the first candidate
    while k * advance <= ts:
        s = k * advance
        if s <= ts < s + size and (ts < 0 or s >= 0):
            starts.append(s)
        k += 1
    return starts


@dataclass
class Agg:
    count: int = 0
    total: Optional[int] = None
    largest: Optional[int] = None
    ts: int = NEG_INF

    def add(self, v: Optional[int], ts: int) -> None:
        self.count += 1
        if v is not None:
            self.total = v if self.total is None else self.total + v
            self.largest = v if self.largest is None else max(self.largest, v)
        self.ts = max(self.ts, ts)


Row = Tuple[object, int, int, int, Optional[int], Optional[int], int]  # key, start, end, count, sum, max, ts


@dataclass
class WindowAggModel:
    size: int
    advance: int
    grace: int
    final: bool = False
    stream_time: int = NEG_INF
    windows: Dict[Tuple[object, int], Agg] = field(default_factory=dict)
    changed: List[Tuple[object, int]] = field(default_factory=list)
    late_dropped: int = 0

    def process(self, key: object, ts: Optional[int], v: Optional[int]) -> None:
        if ts is None or key is None:
            return
        self.stream_time = max(self.stream_time, ts)
        close_time = self.stream_time - self.grace
        for start in windows_for(ts, self.size, self.advance):
            if start + self.size > close_time:
                self.windows.setdefault((key, start), Agg()).add(v, ts)
                if (key, start) not in self.changed:
                    self.changed.append((key, start))
            else:
                self.late_dropped += 1

    def _row(self, key: object, start: int) -> Row:
        a = self.windows[(key, start)]
        return (key, start, start + self.size, a.count, a.total, a.largest, a.ts)

    def end_batch(self) -> List[Row]:
        """The rows this micro-batch emits (in no particular order)."""
        out = [] if self.final else [self._row(k, s) for k, s in self.changed]
        self.changed = []
        for k, s in sorted(self.windows, key=lambda ks: ks[1]):
            if s + self.size <= self.stream_time - self.grace:
                if self.final:
                    out.append(self._row(k, s))
                del self.windows[(k, s)]
        return out
