"""Reference model of kstate's windowed ``distinct()`` (KIP-655's original proposal) with
Kafka's grace rules, record by record for one state partition. Written independently of the
Scala code, straight from the rules in docs/deduplication.md:

- null key or null timestamp: dropped (a null-key record with a timestamp advances stream time);
- stream time := max(stream time, ts) before the decision;
- tumbling (size s, grace g): window [ts - ts mod s, + s); the record is late (dropped) if
  window end <= stream time - g; else emitted iff (key, window start) was never emitted;
- session (gap p, grace g): sessions within p of ts (inclusive both sides) merge with the record;
  late (dropped, no state change) if the merged end < stream time - g; else the merged session
  replaces them and the record is emitted (window [ts, ts]) iff no session overlapped.

The model never forgets a window or session (it needs no purge: any forgotten one could never
change a decision), which makes it a check on kstate's purging too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

NEG_INF = -(2**63)


@dataclass
class TumblingDistinct:
    size: int
    grace: int = 0
    stream_time: int = NEG_INF
    seen: Set[Tuple[object, int]] = field(default_factory=set)

    def process(self, key: object, ts: Optional[int]) -> Optional[Tuple[int, int]]:
        """The emitted window (start, end), or None if the record is dropped."""
        if ts is None:
            return None
        self.stream_time = max(self.stream_time, ts)
        if key is None:
            return None
        start = ts - ts % self.size  # Python's % is a floor modulo, like floorMod
        end = start + self.size
        if end <= self.stream_time - self.grace:
            return None
        if (key, start) in self.seen:
            return None
        self.seen.add((key, start))
        return (start, end)


@dataclass
class SessionDistinct:
    gap: int
    grace: int = 0
    stream_time: int = NEG_INF
    sessions: Dict[object, List[Tuple[int, int]]] = field(default_factory=dict)

    def process(self, key: object, ts: Optional[int]) -> Optional[Tuple[int, int]]:
        if ts is None:
            return None
        self.stream_time = max(self.stream_time, ts)
        if key is None:
            return None
        mine = self.sessions.get(key, [])
        touching = [(s, e) for (s, e) in mine if e >= ts - self.gap and s <= ts + self.gap]
        start = min([ts] + [s for s, _ in touching])
        end = max([ts] + [e for _, e in touching])
        if end < self.stream_time - self.grace:
            return None
        self.sessions[key] = [x for x in mine if x not in touching] + [(start, end)]
        return (ts, ts) if not touching else None
