"""Duration arguments: strings, ``timedelta`` or integer milliseconds -> milliseconds."""

from __future__ import annotations

import datetime as _dt
import re
from typing import Union

from .errors import KStateError

DurationLike = Union[str, _dt.timedelta, int]

# Microseconds and nanoseconds are accepted only as whole milliseconds ("2000us"), so
# every unit is counted in nanoseconds; the other units are whole milliseconds.
_NS_PER_MS = 1_000_000
_SUB_MS_UNITS_NS = {
    "us": 1_000,
    "micro": 1_000,
    "micros": 1_000,
    "microsecond": 1_000,
    "microseconds": 1_000,
    "ns": 1,
    "nano": 1,
    "nanos": 1,
    "nanosecond": 1,
    "nanoseconds": 1,
}
_UNITS = {
    "ms": 1,
    "milli": 1,
    "millis": 1,
    "millisecond": 1,
    "milliseconds": 1,
    "s": 1000,
    "sec": 1000,
    "secs": 1000,
    "second": 1000,
    "seconds": 1000,
    "m": 60_000,
    "min": 60_000,
    "mins": 60_000,
    "minute": 60_000,
    "minutes": 60_000,
    "h": 3_600_000,
    "hour": 3_600_000,
    "hours": 3_600_000,
    "d": 86_400_000,
    "day": 86_400_000,
    "days": 86_400_000,
    "w": 604_800_000,
    "week": 604_800_000,
    "weeks": 604_800_000,
}
_UNITS_NS = dict({u: ms * _NS_PER_MS for u, ms in _UNITS.items()}, **_SUB_MS_UNITS_NS)
_PART = re.compile(r"(\d+)\s*([a-z]+)")
# java.time.Duration.parse's grammar (unsigned): PnDTnHnMn.nS, 'T' followed by a field.
_ISO = re.compile(r"^p(?:([0-9]+)d)?(?:t(?=[0-9])(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)(?:[.,]([0-9]{0,9}))?s)?)?$")


def _bad(what: str, value: object, why: str) -> KStateError:
    return KStateError("KSTATE_INVALID_DURATION", {"what": what, "value": value, "reason": why})


_MAX_MS = 2**63 - 1


def _whole_millis(what: str, value: object, nanos: int) -> int:
    """``nanos`` in milliseconds; kstate durations are whole milliseconds (no rounding)."""
    if nanos % _NS_PER_MS:
        raise _bad(
            what,
            value,
            "it has a sub-millisecond part; kstate durations are whole milliseconds "
            "(event times are epoch milliseconds, as in Kafka Streams)",
        )
    return nanos // _NS_PER_MS


def to_millis(value: DurationLike, what: str = "interval") -> int:
    """Converts a duration argument to milliseconds, raising ``KStateError`` if it is invalid."""
    ms = _to_millis(value, what)
    if ms > _MAX_MS:
        raise _bad(what, value, "too large")
    return ms


def _to_millis(value: DurationLike, what: str) -> int:
    """
    >>> to_millis("10 seconds"), to_millis("PT1M"), to_millis(_dt.timedelta(milliseconds=5)), to_millis(7)
    (10000, 60000, 5, 7)
    """
    if isinstance(value, bool) or value is None:
        raise _bad(what, value, "expected a string, timedelta or int")
    if isinstance(value, int):
        if value < 0:
            raise _bad(what, value, "it is negative")
        return value
    if isinstance(value, _dt.timedelta):
        if value < _dt.timedelta(0):
            raise _bad(what, value, "it is negative")
        return _whole_millis(what, value, value // _dt.timedelta(microseconds=1) * 1_000)
    if not isinstance(value, str):
        raise _bad(what, value, f"expected a string, timedelta or int, got {type(value).__name__}")
    s = value.strip().lower()
    if not s:
        raise _bad(what, value, "it is empty")
    if s.startswith("-"):
        raise _bad(what, value, "it is negative")
    if not s.isascii():
        raise _bad(what, value, "it contains non-ASCII characters")
    if s.isdigit():
        return int(s)
    if s.startswith("p"):
        m = _ISO.match(s)
        if not m or s == "p":
            raise _bad(what, value, "it is not an ISO-8601 duration")
        d, h, mi, sec, frac = m.groups()
        ms = int(d or 0) * 86_400_000 + int(h or 0) * 3_600_000 + int(mi or 0) * 60_000 + int(sec or 0) * 1000
        return ms + _whole_millis(what, value, int(((frac or "") + "0" * 9)[:9]))
    compact = s[len("interval") :].strip() if s.startswith("interval") else s
    parts = _PART.findall(compact)
    if not parts or "".join(n + u for n, u in parts) != re.sub(r"\s+", "", compact):
        raise _bad(what, value, "expected <number> <unit> pairs with units ms, s, m, h, d or w")
    total_ns = 0
    for n, u in parts:
        if u not in _UNITS_NS:
            raise _bad(what, value, f"unknown unit '{u}'")
        total_ns += int(n) * _UNITS_NS[u]
    return _whole_millis(what, value, total_ns)
