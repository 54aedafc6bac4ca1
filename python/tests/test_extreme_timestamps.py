"""Epoch-millisecond timestamps at the ends of the BIGINT range: window bounds saturate at
-2^63 and 2^63 - 1 instead of wrapping (docs/windows.md, "Timestamps at the ends of the range")."""

from __future__ import annotations

import pytest
from kstate import SessionWindows, SlidingWindows, TimeWindows

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
NEAR_MIN, NEAR_MAX = LONG_MIN + 5, LONG_MAX - 5


def _counts(spark, windows, ts_values):
    df = spark.createDataFrame([("a", t, 1) for t in ts_values], "k string, ts long, v long")
    rows = df.kstate.windowed_by(windows, key="k", timestamp="ts").count().collect()
    return sorted((r["window_start"], r["window_end"], r["count"]) for r in rows)


@pytest.mark.parametrize(
    "windows", [TimeWindows.of_size("10s"), TimeWindows.of_size("10s").advance_by("5s")], ids=["tumbling", "hopping"]
)
def test_time_window_near_long_min_starts_at_long_min(spark, windows) -> None:
    # was: window_start = 9223372036854771616 (wrapped)
    assert _counts(spark, windows, [NEAR_MIN, NEAR_MIN + 3]) == [(LONG_MIN, LONG_MIN + 10_000, 2)]


def test_time_window_near_long_max_ends_at_long_max(spark) -> None:
    [(start, end, n)] = _counts(spark, TimeWindows.of_size("10s"), [NEAR_MAX])
    assert start <= NEAR_MAX < end == LONG_MAX and n == 1


def test_session_near_long_min_is_its_records(spark) -> None:
    assert _counts(spark, SessionWindows.with_inactivity_gap("10s"), [NEAR_MIN, NEAR_MIN + 3]) == [
        (NEAR_MIN, NEAR_MIN + 3, 2)
    ]


def test_sliding_windows_drop_negative_timestamps_without_wrapping(spark) -> None:
    # sliding windows reject negative timestamps (Kafka's rule): no window, in particular no wrapped one
    assert _counts(spark, SlidingWindows.of_time_difference("10s"), [NEAR_MIN, NEAR_MIN + 3]) == []


def test_windowed_distinct_near_long_min_starts_at_long_min(spark) -> None:
    df = spark.createDataFrame([("a", NEAR_MIN), ("a", NEAR_MIN + 3)], "k string, ts long")
    rows = df.kstate.windowed_by(TimeWindows.of_size("10s"), key="k", timestamp="ts").distinct().collect()
    assert [(r["ts"], r["window_start"], r["window_end"]) for r in rows] == [(NEAR_MIN, LONG_MIN, LONG_MIN + 10_000)]
