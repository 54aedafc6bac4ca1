"""Window specifications, mirroring Kafka Streams' ``TimeWindows``, ``SessionWindows`` and
``SlidingWindows``."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ._durations import DurationLike, to_millis
from .errors import KStateError

__all__ = ["TimeWindows", "SessionWindows", "SlidingWindows", "Windows"]


@dataclass(frozen=True)
class TimeWindows:
    """Fixed-size, epoch-aligned windows: tumbling, or hopping with :meth:`advance_by`.

    Grace is per window spec: a record is dropped as late for a window once the partition's
    stream time reaches window end + grace. Default grace is 0 (Kafka's ``ofSizeWithNoGrace``).

    Examples
    --------
    >>> TimeWindows.of_size("10 seconds").grace("1 minute")
    TimeWindows(size_ms=10000, advance_ms=10000, grace_ms=60000)
    """

    size_ms: int
    advance_ms: int
    grace_ms: int = 0

    @staticmethod
    def of_size(size: DurationLike) -> "TimeWindows":
        """Tumbling windows of ``size`` with no grace."""
        ms = to_millis(size, "size")
        if ms <= 0:
            raise KStateError("KSTATE_INVALID_WINDOW", {"reason": f"size must be > 0, got {ms} ms"})
        return TimeWindows(ms, ms, 0)

    def advance_by(self, advance: DurationLike) -> "TimeWindows":
        """Hopping windows advancing by ``advance`` (0 < advance <= size)."""
        ms = to_millis(advance, "advance")
        if ms <= 0 or ms > self.size_ms:
            raise KStateError(
                "KSTATE_INVALID_WINDOW", {"reason": f"advance must be > 0 and <= size ({self.size_ms} ms), got {ms} ms"}
            )
        return replace(self, advance_ms=ms)

    def grace(self, grace: DurationLike) -> "TimeWindows":
        """The same windows with a grace period."""
        return replace(self, grace_ms=to_millis(grace, "grace"))

    def _to_jvm(self, jvm: Any) -> Any:
        w = jvm.io.kstate.windows.TimeWindows.ofSize(self.size_ms)
        if self.advance_ms != self.size_ms:
            w = w.advanceBy(self.advance_ms)
        return w.grace(self.grace_ms)


@dataclass(frozen=True)
class SessionWindows:
    """Session windows: records of a key within the inactivity gap of each other (inclusive)
    form one session; a record bridging two sessions merges them.

    Examples
    --------
    >>> SessionWindows.with_inactivity_gap("5 minutes").grace("30 seconds")
    SessionWindows(gap_ms=300000, grace_ms=30000)
    """

    gap_ms: int
    grace_ms: int = 0

    @staticmethod
    def with_inactivity_gap(gap: DurationLike) -> "SessionWindows":
        """Sessions split by ``gap`` of inactivity, with no grace."""
        ms = to_millis(gap, "gap")
        if ms <= 0:
            raise KStateError("KSTATE_INVALID_WINDOW", {"reason": f"inactivity gap must be > 0, got {ms} ms"})
        return SessionWindows(ms, 0)

    def grace(self, grace: DurationLike) -> "SessionWindows":
        """The same windows with a grace period."""
        return replace(self, grace_ms=to_millis(grace, "grace"))

    def _to_jvm(self, jvm: Any) -> Any:
        return jvm.io.kstate.windows.SessionWindows.withInactivityGap(self.gap_ms).grace(self.grace_ms)


@dataclass(frozen=True)
class SlidingWindows:
    """Kafka's sliding windows: fixed-size windows placed by the records themselves.

    For a key's records the windows are each record's left window ``[ts - d, ts]`` (``[0, d]``
    for a record with ts < d) and its right window ``[ts + 1, ts + 1 + d]`` when that holds a
    record; both bounds inclusive, ``d`` the time difference. A window is closed once its end <
    stream time - grace. Aggregations only (not ``distinct()``).

    Examples
    --------
    >>> SlidingWindows.of_time_difference("10 seconds").grace("30 seconds")
    SlidingWindows(time_difference_ms=10000, grace_ms=30000)
    """

    time_difference_ms: int
    grace_ms: int = 0

    @staticmethod
    def of_time_difference(time_difference: DurationLike) -> "SlidingWindows":
        """Windows of records at most ``time_difference`` apart (inclusive), with no grace."""
        return SlidingWindows(to_millis(time_difference, "time difference"), 0)

    def grace(self, grace: DurationLike) -> "SlidingWindows":
        """The same windows with a grace period."""
        return replace(self, grace_ms=to_millis(grace, "grace"))

    def _to_jvm(self, jvm: Any) -> Any:
        return jvm.io.kstate.windows.SlidingWindows.ofTimeDifference(self.time_difference_ms).grace(self.grace_ms)


Windows = (TimeWindows, SessionWindows, SlidingWindows)
