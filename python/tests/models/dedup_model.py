"""Record-by-record reference model (test oracle) of KIP-655 deduplication.

Pure Python, no Spark.  One :class:`DedupModel` instance models ONE state
partition (one Kafka Streams task).  Times are integer milliseconds.

Rules (KIP-655 unless marked "kstate decision")
------------------------------------------------
Dedup identity
    ``by_key`` -> ``key``; ``by_key_value`` -> ``(key, id)``; ``by_id`` -> ``id``.
    If the identity has a null component (by_key: key; by_id: id;
    by_key_value: key OR id) the record is forwarded, never stored, and
    ``null_keys_forwarded`` is incremented (KIP "Null deduplication key").

Stream time
    ``stream_time`` = max timestamp processed so far, starting at Long.MIN
    (``-2**63``).  It is advanced with the current record's own timestamp
    BEFORE the dedup decision for that record (Kafka's processor sees the
    task stream time including the record being processed).  Example 3 of the
    KIP ("k2 @t=21s -> k1 @t=10s is now purged") shows the purge happening on
    the arrival of the advancing record itself.  Stream time advances on every
    processed record with a non-null timestamp, *including* records with a null
    dedup identity (Kafka's stream time is per task, not per operator key).

Null timestamp (kstate decision)
    A record whose ``ts`` is None (and whose identity is not null) is
    forwarded, never stored, does not advance stream time, is never a
    duplicate; counted in ``null_timestamps_forwarded``.  The null-identity
    rule takes precedence: a record with null identity AND null timestamp is
    counted only in ``null_keys_forwarded`` (and does not move stream time).

Store and purge (window-store semantics)
    The store is keyed by ``(identity, ts)`` like the KIP's window store with
    retention = interval.  An entry is purged as soon as
    ``entry_ts < stream_time - interval``; i.e. it is kept while
    ``entry_ts >= stream_time - interval`` (Example 2: k1@10s is still there at
    streamTime 20s; Example 3: it is gone at 21s).

Duplicate test
    A record is a duplicate iff ANY stored entry for its identity has
    ``ts - interval <= entry_ts <= ts + interval`` (both ends inclusive, KIP
    "Deduplication interval boundaries").  Duplicates are dropped and the
    store is NOT updated, so the first record wins and an out-of-order record
    within the interval of a stored one is a duplicate.

Late records
    ``ts < stream_time - interval`` (strictly).  A late record with a stored
    duplicate is dropped; otherwise it is forwarded but NOT stored (it would
    be purged immediately), counted in ``late_forwarded`` (KIP "forward
    strategy", Examples 1-3).

Non-late, non-duplicate records are forwarded and stored under
``(identity, ts)``.  Consequence (checked by a property test): at most one
entry per identity survives purging, because any other entry for the same
identity is either older than ``ts - interval`` (hence already purged, since
``stream_time >= ts``) or newer than ``ts + interval`` (which would make the
record late).  So "a set of timestamps per identity" and "replace the stored
entry" are observationally identical; the set form is kept because it mirrors
the KIP's window-store fetch.

Older windowed ``distinct()`` proposal (end of the KIP)
------------------------------------------------------
``distinct_tumbling`` / ``distinct_session`` emit only the first record that
opens a NEW window per key; records landing in an existing window (for
sessions: joining/merging existing sessions) are dropped.  Choices:

* Tumbling windows are epoch aligned: ``start = ts // size * size``,
  ``end = start + size`` (as printed ``[00000/10000]``).
* Sessions use an inclusive inactivity gap, like Kafka ``SessionWindows``:
  a record at ``ts`` joins every session with
  ``start - gap <= ts <= end + gap``, merging them all.  Inclusivity is
  required by the KIP: with gap 10s, 34 joins the session ending at 24, giving
  2 outputs.  The emitted window is the session at emission time: ``[ts, ts]``.
* No grace period and no retention: windows/sessions are never forgotten, and a
  late record that opens a new window is emitted (the KIP implies no drop).
* Records with a null key or null timestamp are dropped (``groupByKey``
  semantics of Kafka aggregations; the KIP does not discuss them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Hashable, Iterable, List, Optional, Set, Tuple

LONG_MIN = -(2**63)
MODES = ("by_key", "by_key_value", "by_id")


@dataclass(frozen=True)
class Rec:
    key: Any  # dedup key (for by_key_value: the record key); None = null
    id: Any  # dedup id (for by_key: unused, pass None); None = null
    ts: Optional[int]  # event timestamp in ms; None = null timestamp


class DedupModel:
    """One state partition (one Kafka task)."""

    def __init__(self, interval_ms: int, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if interval_ms < 0:
            raise ValueError("interval_ms must be >= 0")
        self.interval_ms = interval_ms
        self.mode = mode
        self.stream_time: int = LONG_MIN
        self._store: Dict[Hashable, Set[int]] = {}
        self.duplicates_dropped = 0
        self.late_forwarded = 0
        self.null_keys_forwarded = 0
        self.null_timestamps_forwarded = 0

    def identity(self, rec: Rec) -> Optional[Hashable]:
        """Dedup identity of ``rec``, or None if it has a null component."""
        if self.mode == "by_key":
            return rec.key
        if self.mode == "by_id":
            return rec.id
        if rec.key is None or rec.id is None:
            return None
        return (rec.key, rec.id)

    def stored_entries(self) -> int:
        """Number of stored (identity, ts) entries not yet purged."""
        return sum(len(s) for s in self._store.values())

    def stored(self) -> Dict[Hashable, Set[int]]:
        """Copy of the store: identity -> set of stored timestamps."""
        return {k: set(v) for k, v in self._store.items()}

    def process(self, rec: Rec) -> bool:
        """Process one record; return True if it is forwarded."""
        ident = self.identity(rec)
        if ident is None:
            if rec.ts is not None:
                self._advance(rec.ts)
            self.null_keys_forwarded += 1
            return True
        if rec.ts is None:
            self.null_timestamps_forwarded += 1
            return True

        self._advance(rec.ts)  # stream time includes this record's own ts
        lo, hi = rec.ts - self.interval_ms, rec.ts + self.interval_ms
        if any(lo <= s <= hi for s in self._store.get(ident, ())):
            self.duplicates_dropped += 1
            return False
        if rec.ts < self.stream_time - self.interval_ms:
            self.late_forwarded += 1
            return True
        self._store.setdefault(ident, set()).add(rec.ts)
        return True

    def _advance(self, ts: int) -> None:
        if ts <= self.stream_time:
            return
        self.stream_time = ts
        bound = ts - self.interval_ms
        for ident in list(self._store):
            kept = {s for s in self._store[ident] if s >= bound}
            if kept:
                self._store[ident] = kept
            else:
                del self._store[ident]


def run(records: Iterable[Rec], interval_ms: int, mode: str) -> List[bool]:
    """Process ``records`` in order with a fresh model; return forward flags."""
    model = DedupModel(interval_ms, mode)
    return [model.process(r) for r in records]


Window = Tuple[Any, int, int, int]  # (key, window_start, window_end, ts)


def distinct_tumbling(records: Iterable[Tuple[Any, Optional[int]]], size_ms: int) -> List[Window]:
    """Old-proposal ``windowedBy(TimeWindows.of(size)).distinct()``."""
    if size_ms <= 0:
        raise ValueError("size_ms must be > 0")
    seen: Set[Tuple[Any, int]] = set()
    out: List[Window] = []
    for key, ts in records:
        if key is None or ts is None:
            continue
        start = ts // size_ms * size_ms
        if (key, start) not in seen:
            seen.add((key, start))
            out.append((key, start, start + size_ms, ts))
    return out


def distinct_session(records: Iterable[Tuple[Any, Optional[int]]], gap_ms: int) -> List[Window]:
    """Old-proposal ``windowedBy(SessionWindows.with(gap)).distinct()``."""
    if gap_ms < 0:
        raise ValueError("gap_ms must be >= 0")
    sessions: Dict[Any, List[Tuple[int, int]]] = {}
    out: List[Window] = []
    for key, ts in records:
        if key is None or ts is None:
            continue
        mine = sessions.setdefault(key, [])
        hit = [s for s in mine if s[0] - gap_ms <= ts <= s[1] + gap_ms]
        if not hit:
            mine.append((ts, ts))
            out.append((key, ts, ts, ts))
            continue
        merged = (min([ts] + [s[0] for s in hit]), max([ts] + [s[1] for s in hit]))
        sessions[key] = [s for s in mine if s not in hit] + [merged]
    return out
