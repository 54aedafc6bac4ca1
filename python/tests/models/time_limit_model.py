"""Reference model of kstate's ``suppress(until_time_limit(limit, buffer))`` (Kafka's
``KTableSuppressProcessor`` with a record-time buffer), record by record for one state
partition. Written from KIP-328 and docs/windows.md, independently of the Scala code:

- null timestamp or null key: dropped, stream time unchanged;
- stream time := max(stream time, ts);
- buffer the record under its key: a new key at buffer time ts; a buffered key keeps its buffer
  time and its record is replaced (a suppressed intermediate update);
- emit, oldest first (buffer time, then key), every record with buffer time <= stream time -
  limit;
- over ``max_records``: emit early (oldest first) until within it, or fail (shut down).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

NEG_INF = -(2**63)


class BufferFull(Exception):
    pass


@dataclass
class TimeLimitModel:
    limit: int
    max_records: Optional[int] = None
    when_full: str = "emit_early"  # or "shut_down"
    stream_time: int = NEG_INF
    buffer: Dict[str, Tuple[int, int]] = field(default_factory=dict)  # key -> (buffer time, seq)
    suppressed: int = 0

    def _oldest(self) -> str:
        return min(self.buffer, key=lambda k: (self.buffer[k][0], k))

    def process(self, key: Optional[str], ts: Optional[int], seq: int) -> List[int]:
        """The seqs this record's arrival emits, in order."""
        if ts is None or key is None:
            return []
        self.stream_time = max(self.stream_time, ts)
        if key in self.buffer:
            self.suppressed += 1
            self.buffer[key] = (self.buffer[key][0], seq)
        else:
            self.buffer[key] = (ts, seq)
        out = []
        while self.buffer and self.buffer[self._oldest()][0] <= self.stream_time - self.limit:
            out.append(self.buffer.pop(self._oldest())[1])
        if self.max_records is not None and len(self.buffer) > self.max_records:
            if self.when_full == "shut_down":
                raise BufferFull(len(self.buffer))
            while len(self.buffer) > self.max_records:
                out.append(self.buffer.pop(self._oldest())[1])
        return out
