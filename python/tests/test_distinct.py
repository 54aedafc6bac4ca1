"""KIP-655's windowed distinct(): the KIP's examples, restarts, and a property test against
the independent reference model (python/tests/models/distinct_model.py)."""

from __future__ import annotations

import os
import random
from typing import Any, Dict, List, Optional, Tuple

import kstate
import pytest
from _streaming import FileStream, run_batch_df, run_stream
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from kstate import SessionWindows, TimeWindows
from models.distinct_model import SessionDistinct, TumblingDistinct

SCHEMA = "seq LONG, k STRING, ts LONG"
BURSTS = [[4, 5, 6], [23, 22, 24], [34, 33, 32], [7, 22, 35]]  # seconds; last: late arrivals


def _records(bursts: List[List[int]]) -> List[List[Dict[str, Any]]]:
    seq = iter(range(1_000))
    return [[{"seq": next(seq), "k": "key", "ts": s * 1000} for s in b] for b in bursts]


def _distinct(windows: Any):
    return lambda df: df.kstate.windowed_by(windows, key="k", timestamp="ts").distinct()


def _emitted(rows) -> List[Tuple[int, int, int]]:
    return sorted((r["ts"], r["window_start"], r["window_end"]) for r in rows)


@pytest.mark.parametrize(
    "windows, expected",
    [
        (TimeWindows.of_size("10 seconds"), [(4000, 0, 10000), (23000, 20000, 30000), (34000, 30000, 40000)]),
        (SessionWindows.with_inactivity_gap("10 seconds"), [(4000, 4000, 4000), (23000, 23000, 23000)]),
        (
            SessionWindows.with_inactivity_gap("9 seconds"),
            [(4000, 4000, 4000), (23000, 23000, 23000), (34000, 34000, 34000)],
        ),
    ],
)
def test_kip_examples_batch_and_streaming(spark, tmp_path, windows, expected) -> None:
    batches = _records(BURSTS)
    assert _emitted(run_batch_df(spark, _distinct(windows), sum(batches, []), schema=SCHEMA)) == expected
    streamed = run_stream(spark, str(tmp_path), _distinct(windows), batches, schema=SCHEMA)
    assert _emitted(streamed.rows) == expected


def test_restart_between_every_batch_gives_the_same_output(spark, tmp_path) -> None:
    windows = SessionWindows.with_inactivity_gap("9 seconds").grace("2 seconds")
    batches = _records(BURSTS)
    whole = run_stream(spark, str(tmp_path / "whole"), _distinct(windows), batches, schema=SCHEMA)
    rows = []
    src, ckpt = str(tmp_path / "src"), str(tmp_path / "ckpt")
    for b in batches:
        fs = FileStream(spark, src, ckpt, _distinct(windows), schema=SCHEMA).start()
        fs.add_batch(b)
        rows += fs.rows()
        fs.stop()
    assert _emitted(rows) == _emitted(whole.rows)


def test_changed_windows_on_restart_is_a_named_error(spark, tmp_path) -> None:
    src, ckpt = str(tmp_path / "src"), str(tmp_path / "ckpt")
    with FileStream(spark, src, ckpt, _distinct(TimeWindows.of_size("10 seconds")), schema=SCHEMA) as fs:
        fs.add_batch([{"seq": 1, "k": "a", "ts": 1000}])
    fs = FileStream(spark, src, ckpt, _distinct(TimeWindows.of_size("20 seconds")), schema=SCHEMA).start()
    fs.add_file([{"seq": 2, "k": "a", "ts": 2000}])
    with pytest.raises(Exception) as e:
        fs.process()
    fs.stop()
    assert "KSTATE_OPERATOR_CONFIG_CHANGED" in str(e.value)


def test_bad_window_arguments_fail_at_construction(spark) -> None:
    df = spark.createDataFrame([("a", 1)], "k string, ts long")
    with pytest.raises(kstate.KStateError) as e:
        df.kstate.windowed_by(TimeWindows.of_size("10s").advance_by("5s"), key="k", timestamp="ts").distinct()
    assert e.value.error_class == "KSTATE_UNSUPPORTED_WINDOWS"
    with pytest.raises(kstate.KStateError) as e:
        TimeWindows.of_size("0s")
    assert e.value.error_class == "KSTATE_INVALID_WINDOW"
    with pytest.raises(kstate.KStateError) as e:
        df.kstate.windowed_by("10s", key="k", timestamp="ts")
    assert e.value.error_class == "KSTATE_INVALID_WINDOW"
    with pytest.raises(kstate.KStateError) as e:
        df.kstate.windowed_by(TimeWindows.of_size("10s"), key="k", timestamp="k")
    assert e.value.error_class == "KSTATE_INVALID_TIMESTAMP_TYPE"


# --- property: kstate == model -------------------------------------------------------------

PROPERTY_SETTINGS = settings(
    max_examples=int(os.environ.get("KSTATE_HYPOTHESIS_EXAMPLES", "7")),
    deadline=None,
    derandomize=True,
    database=None,
    phases=(
        [Phase.explicit, Phase.generate, Phase.shrink]
        if os.environ.get("KSTATE_HYPOTHESIS_SHRINK")
        else [Phase.explicit, Phase.generate]
    ),
    suppress_health_check=list(HealthCheck),
)


def _random_records(rnd: random.Random, n: int) -> List[Dict[str, Any]]:
    """Keys from a small alphabet (None one time in ten), timestamps mostly near the previous
    one on a 500 ms grid (bursts, disorder), some anywhere (late records), some null."""
    out, prev = [], rnd.randint(0, 20) * 500
    for i in range(n):
        r = rnd.random()
        ts: Optional[int] = (
            None
            if r < 0.08
            else (rnd.randint(-4, 60) * 500 if r < 0.2 else max(-2000, prev + rnd.randint(-6, 8) * 500))
        )
        if ts is not None:
            prev = ts
        key = None if rnd.random() < 0.1 else rnd.choice("abc")
        out.append({"seq": i, "k": key, "ts": ts})
    return out


def _model(windows: Any):
    if isinstance(windows, TimeWindows):
        return TumblingDistinct(windows.size_ms, windows.grace_ms)
    return SessionDistinct(windows.gap_ms, windows.grace_ms)


@PROPERTY_SETTINGS
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 40),
    kind=st.sampled_from(["tumbling", "session"]),
    length=st.sampled_from([500, 2000, 5000]),
    grace=st.sampled_from([0, 1000, 4000]),
)
def test_distinct_matches_model_on_random_input_and_batch_splits(
    spark, tmp_path_factory, seed, n, kind, length, grace
) -> None:
    rnd = random.Random(seed)
    records = _random_records(rnd, n)
    windows = (TimeWindows.of_size(length) if kind == "tumbling" else SessionWindows.with_inactivity_gap(length)).grace(
        grace
    )
    model = _model(windows)  # one state partition: shuffle partitions = 1
    expected = sorted((r["seq"], w) for r in records if (w := model.process(r["k"], r["ts"])) is not None)

    cuts = sorted(rnd.sample(range(1, n), k=min(n - 1, rnd.randint(0, 4)))) if n > 1 else []
    batches = [records[a:b] for a, b in zip([0] + cuts, cuts + [n])]
    workdir = str(tmp_path_factory.mktemp("distinct"))
    streamed = run_stream(spark, workdir, _distinct(windows), batches, schema=SCHEMA, partitions=1)
    got = sorted((r["seq"], (r["window_start"], r["window_end"])) for r in streamed.rows)
    assert got == expected, f"windows={windows} batches={batches}"

    batch_rows = run_batch_df(spark, _distinct(windows), records, schema=SCHEMA, partitions=1)
    assert sorted((r["seq"], (r["window_start"], r["window_end"])) for r in batch_rows) == expected
