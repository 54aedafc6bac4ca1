"""KIP-328's ``suppress``: :class:`Suppressed` and the buffer configs it takes.

Mirrors Kafka Streams' ``Suppressed`` and ``Suppressed.BufferConfig``. Whether a buffer config is
strict (never emits early) is its type: :class:`StrictBufferConfig` or :class:`EagerBufferConfig`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Optional

from ._durations import DurationLike, to_millis
from .errors import KStateError

__all__ = ["BufferConfig", "EagerBufferConfig", "StrictBufferConfig", "Suppressed"]

_UNBOUNDED = 2**63 - 1


def _limit(what: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, got {type(value).__name__}")
    if value <= 0 or value > _UNBOUNDED:
        raise KStateError(
            "KSTATE_INVALID_BUFFER_CONFIG",
            {
                "reason": f"{what} must be between 1 and 2**63 - 1 ({_UNBOUNDED}), got {value}. "
                "For no limit use BufferConfig.unbounded() or with_no_bound()"
            },
        )
    return value


@dataclass(frozen=True)
class BufferConfig:
    """How much a suppression buffer holds (records: keys or windows; bytes: serialized key and
    value) and what happens when it is full. Build one with :meth:`max_records`,
    :meth:`max_bytes` or :meth:`unbounded`.

    Examples
    --------
    >>> BufferConfig.max_bytes(5_000_000).shut_down_when_full()
    StrictBufferConfig(record_limit=None, byte_limit=5000000, when_full='shut_down')
    """

    record_limit: Optional[int] = None
    byte_limit: Optional[int] = None
    when_full: str = "emit_early"

    @staticmethod
    def max_records(record_limit: int) -> "EagerBufferConfig":
        """At most ``record_limit`` records; emits the oldest early when full (not strict)."""
        return EagerBufferConfig(record_limit=_limit("max_records", record_limit))

    @staticmethod
    def max_bytes(byte_limit: int) -> "EagerBufferConfig":
        """At most ``byte_limit`` bytes; emits the oldest early when full (not strict)."""
        return EagerBufferConfig(byte_limit=_limit("max_bytes", byte_limit))

    @staticmethod
    def unbounded() -> "StrictBufferConfig":
        """No limits (strict)."""
        return StrictBufferConfig(when_full="shut_down")

    def with_max_records(self, record_limit: int):
        """The same config with a record limit."""
        return replace(self, record_limit=_limit("max_records", record_limit))

    def with_max_bytes(self, byte_limit: int):
        """The same config with a byte limit."""
        return replace(self, byte_limit=_limit("max_bytes", byte_limit))

    def with_no_bound(self) -> "StrictBufferConfig":
        """No limits (strict)."""
        return StrictBufferConfig(when_full="shut_down")

    def shut_down_when_full(self) -> "StrictBufferConfig":
        """Strict: the query stops with ``KSTATE_BUFFER_FULL`` when a limit is passed; the failed
        micro-batch is not committed, so a restart with a larger buffer loses nothing."""
        return StrictBufferConfig(self.record_limit, self.byte_limit, "shut_down")

    def spill_to_disk_when_full(self) -> "StrictBufferConfig":
        """Strict: past the limits the buffer's contents go to local disk."""
        return StrictBufferConfig(self.record_limit, self.byte_limit, "spill_to_disk")

    def emit_early_when_full(self) -> "EagerBufferConfig":
        """Not strict: the oldest records are emitted early when a limit is passed."""
        return EagerBufferConfig(self.record_limit, self.byte_limit, "emit_early")

    @property
    def is_strict(self) -> bool:
        return self.when_full != "emit_early"

    def _to_jvm(self, jvm: Any) -> Any:
        b = jvm.io.kstate.suppress.BufferConfig.unbounded()
        if self.record_limit is not None:
            b = b.withMaxRecords(self.record_limit)
        if self.byte_limit is not None:
            b = b.withMaxBytes(self.byte_limit)
        return {
            "shut_down": b.shutDownWhenFull,
            "spill_to_disk": b.spillToDiskWhenFull,
            "emit_early": b.emitEarlyWhenFull,
        }[self.when_full]()


@dataclass(frozen=True)
class EagerBufferConfig(BufferConfig):
    """A buffer config that may emit early when full (not strict)."""


@dataclass(frozen=True)
class StrictBufferConfig(BufferConfig):
    """A buffer config that never emits early: unbounded, shut down when full, or spill to disk."""


@dataclass(frozen=True)
class Suppressed:
    """What ``df.kstate.suppress(...)`` holds back. Build with :meth:`until_window_closes` or
    :meth:`until_time_limit`."""

    mode: str
    buffer_config: BufferConfig
    time_limit_ms: Optional[int] = None

    @staticmethod
    def until_window_closes(buffer_config: StrictBufferConfig) -> "Suppressed":
        """Exactly one final result per key and window, emitted once stream time >= window end +
        grace. Windowed input only; the buffer config must be strict (a ``TypeError`` otherwise:
        emitting early would break the one-final-result promise).

        Examples
        --------
        >>> counts.kstate.suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
        """
        if not isinstance(buffer_config, BufferConfig):
            raise TypeError(f"until_window_closes takes a StrictBufferConfig, got {type(buffer_config).__name__}")
        if not isinstance(buffer_config, StrictBufferConfig):
            raise TypeError(
                "until_window_closes needs a strict buffer config (BufferConfig.unbounded(), or "
                ".shut_down_when_full() / .spill_to_disk_when_full()): a buffer that emits early "
                f"would emit more than one result per window; got {buffer_config!r}"
            )
        return Suppressed("until_window_closes", buffer_config)

    @staticmethod
    def until_time_limit(time_to_wait_for_more_events: DurationLike, buffer_config: BufferConfig) -> "Suppressed":
        """Per-key rate limit: a key's first update starts its timer, later updates replace the
        value without restarting it, and the latest value is emitted once stream time >= first
        buffered time + ``time_to_wait_for_more_events``."""
        if not isinstance(buffer_config, BufferConfig):
            raise TypeError(f"until_time_limit takes a BufferConfig, got {type(buffer_config).__name__}")
        ms = to_millis(time_to_wait_for_more_events, "time_to_wait_for_more_events")
        return Suppressed("until_time_limit", buffer_config, ms)

    def _to_jvm(self, jvm: Any) -> Any:
        b = self.buffer_config._to_jvm(jvm)
        if self.mode == "until_window_closes":
            return jvm.io.kstate.suppress.UntilWindowCloses(b)
        return jvm.io.kstate.suppress.UntilTimeLimit(self.time_limit_ms, b)
