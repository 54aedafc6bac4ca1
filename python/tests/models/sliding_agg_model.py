"""Reference model of kstate's sliding-window aggregation (Kafka's ``SlidingWindows``, KIP-450)
and its fused ``suppress(until_window_closes)``, record by record for one state partition.
Written independently of the Scala code: instead of the windows a record adds, it recomputes a
key's whole window set from every record accepted so far, following docs/windows.md:

- null key, null or negative timestamp: dropped; stream time does not move;
- stream time := max(stream time, ts); close time := stream time - grace; a window
  ``[start, start + d]`` (both inclusive) is open while its end >= close time;
- a record with ts + d < close time is late: dropped;
- a key's window set: each accepted record's left window ``[ts - d, ts]`` (``[0, d]`` when
  ts < d) and its right window ``[ts + 1, ts + 1 + d]`` when that holds an accepted record;
- after each accepted record, every open window of the set that did not exist yet is created from
  all accepted records in its range, and every existing open window containing ts gets the
  record;
- a micro-batch ends: without suppression every window the batch created or changed is emitted
  once; then windows with end < close time close (with suppression: emitted now, once).

Aggregates kept: count, sum and max of ``v`` (null ``v`` ignored), and the largest timestamp.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

from models.window_agg_model import NEG_INF, Agg  # the same aggregates as for time windows

Row = Tuple[object, int, int, int, Optional[int], Optional[int], int]  # key, start, end, count, sum, max, ts


def window_starts(timestamps: List[int], d: int) -> Set[int]:
    """Starts of a key's sliding windows for these record timestamps."""
    starts = set()
    for t in timestamps:
        starts.add(0 if t < d else t - d)
        if any(t < u <= t + 1 + d for u in timestamps):
            starts.add(t + 1)
    return starts


@dataclass
class SlidingAggModel:
    d: int
    grace: int
    final: bool = False
    stream_time: int = NEG_INF
    records: Dict[object, List[Tuple[int, Optional[int]]]] = field(default_factory=dict)
    windows: Dict[Tuple[object, int], Agg] = field(default_factory=dict)
    closed: Set[Tuple[object, int]] = field(default_factory=set)
    changed: List[Tuple[object, int]] = field(default_factory=list)
    late_dropped: int = 0

    def process(self, key: object, ts: Optional[int], v: Optional[int]) -> None:
        if ts is None or key is None or ts < 0:
            return
        self.stream_time = max(self.stream_time, ts)
        close = self.stream_time - self.grace
        if ts + self.d < close:
            self.late_dropped += 1
            return
        recs = self.records.setdefault(key, [])
        existing = {s for (k, s) in self.windows if k == key}
        for s in sorted(existing):
            if s <= ts <= s + self.d and s + self.d >= close:
                self.windows[(key, s)].add(v, ts)
                self._changed(key, s)
        recs.append((ts, v))
        for s in sorted(window_starts([t for t, _ in recs], self.d)):
            if s + self.d >= close and s not in existing and (key, s) not in self.closed:
                agg = Agg()
                for t, x in sorted(recs, key=lambda r: r[0]):
                    if s <= t <= s + self.d:
                        agg.add(x, t)
                self.windows[(key, s)] = agg
                self._changed(key, s)

    def _changed(self, key: object, s: int) -> None:
        if (key, s) not in self.changed:
            self.changed.append((key, s))

    def _row(self, key: object, s: int) -> Row:
        a = self.windows[(key, s)]
        return (key, s, s + self.d, a.count, a.total, a.largest, a.ts)

    def end_batch(self) -> List[Row]:
        """The rows this micro-batch emits (in no particular order)."""
        out = [] if self.final else [self._row(k, s) for k, s in self.changed]
        self.changed = []
        close = self.stream_time - self.grace
        for k, s in sorted(self.windows, key=lambda ks: ks[1]):
            if s + self.d < close:
                if self.final:
                    out.append(self._row(k, s))
                del self.windows[(k, s)]
                self.closed.add((k, s))
        return out
