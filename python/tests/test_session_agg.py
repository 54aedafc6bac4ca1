"""Session-window aggregations (``windowed_by(SessionWindows...).count()/agg(...)``) and their
fused ``suppress(until_window_closes)``: Kafka's merge rule, tombstones for merged sessions, the
close time (grace + gap), restart, and a property test against the independent reference model
(python/tests/models/session_agg_model.py) on random input split at random micro-batch
boundaries, on one and on three state partitions."""

from __future__ import annotations

import random
from typing import Any, Dict, List, Optional

import pytest
from _property import PROPERTY_SETTINGS, micro_batches
from _streaming import FileStream, partition_map, shuffle_partitions
from _windowed import (
    KEYS,
    SCHEMA,
    aggregate,
    check_against_model,
    check_restart_between_every_batch,
    random_records,
    stream,
    tuples,
)
from hypothesis import given
from hypothesis import strategies as st
from kstate import BufferConfig, SessionWindows
from models.session_agg_model import SessionAggModel
from pyspark.sql import functions as F


def _aggregate(windows: SessionWindows, final: bool = False):
    return aggregate(windows, final)


def _tuples(rows) -> List[tuple]:
    return tuples(rows, extra=("tombstone",))


def _stream(spark, workdir: str, build, batches, partitions: Optional[int] = None) -> Dict[int, List[Any]]:
    return stream(spark, workdir, build, batches, partitions, extra=("tombstone",))


def test_a_record_bridging_two_sessions_merges_them_and_tombstones_both(spark, tmp_path) -> None:
    windows = SessionWindows.with_inactivity_gap("10 seconds").grace("1 minute")
    batches = [
        [
            dict(seq=0, k="a", ts=0, v=1),
            dict(seq=1, k="a", ts=10_000, v=2),  # gap inclusive
            dict(seq=2, k="a", ts=25_000, v=3),
        ],
        [dict(seq=3, k="a", ts=17_000, v=None)],
    ]  # within 10 s of both sessions
    got = _stream(spark, str(tmp_path), _aggregate(windows), batches, partitions=1)
    assert got[0] == [("a", 0, 10_000, 2, 3, 2, 10_000, False), ("a", 25_000, 25_000, 1, 3, 3, 25_000, False)]
    assert got[1] == [
        ("a", 0, 10_000, None, None, None, 10_000, True),
        ("a", 0, 25_000, 4, 6, 3, 25_000, False),
        ("a", 25_000, 25_000, None, None, None, 25_000, True),
    ]


def test_final_results_close_after_grace_plus_gap_exactly_once(spark, tmp_path) -> None:
    windows = SessionWindows.with_inactivity_gap("5 seconds").grace("2 seconds")
    batches = [
        [dict(seq=0, k="a", ts=1000, v=1), dict(seq=1, k="a", ts=4000, v=1)],
        [dict(seq=2, k="b", ts=10_999, v=1)],  # close time 3.999 s: [1,4] is still open (4 > 3.999)
        [dict(seq=3, k="b", ts=11_000, v=1)],  # close time 4 s: [1,4] closes (4 <= 4, Kafka's)
        [dict(seq=4, k="a", ts=8_000, v=1)],
    ]  # within 5 s of the closed session: a new one
    got = _stream(spark, str(tmp_path), _aggregate(windows, final=True), batches, partitions=1)
    assert got[0] == got[1] == [] and got.get(3, []) == []
    assert got[2] == [("a", 1000, 4000, 2, 2, 1, 4000, False)]


def _final_counts_gap_2s(spark, tmp_path, batches: List[List[tuple]]) -> List[List[tuple]]:
    """Final session counts (gap 2 s, grace 0) of batches of (key, ts in s): (key, start s, end s,
    count) per micro-batch."""
    windows = SessionWindows.with_inactivity_gap("2 seconds").grace("0 seconds")
    seq = iter(range(100))
    rows = [[dict(seq=next(seq), k=k, ts=t * 1000, v=1) for k, t in b] for b in batches]
    got = _stream(spark, str(tmp_path), _aggregate(windows, final=True), rows, partitions=1)
    return [[(r[0], r[1] // 1000, r[2] // 1000, r[3]) for r in got.get(i, [])] for i in range(len(batches))]


def test_kafka_emits_the_session_ending_at_close_time_and_never_merges_into_it(spark, tmp_path) -> None:
    """Issue 13, as Kafka Streams 4.3 (TopologyTestDriver) does: gap 2, grace 0,
    (a,4),(b,6) | (a,5) | (c,20) gives a[4,4]=1, then a[5,5]=1 and b[6,6]=1 (was a[4,5]=2)."""
    got = _final_counts_gap_2s(spark, tmp_path, [[("a", 4), ("b", 6)], [("a", 5)], [("c", 20)]])
    assert got == [[("a", 4, 4, 1)], [], [("a", 5, 5, 1), ("b", 6, 6, 1)]]


def test_kafka_drops_a_record_whose_only_session_within_the_gap_is_closed(spark, tmp_path) -> None:
    """Issue 13: gap 2, grace 0, (c,5),(x,7) | (c,4): c[5,5] is final at close time 5, and c@4
    is late (Kafka drops it; kstate merged it before)."""
    got = _final_counts_gap_2s(spark, tmp_path, [[("c", 5), ("x", 7)], [("c", 4)], [("z", 30)]])
    assert got == [[("c", 5, 5, 1)], [], [("x", 7, 7, 1)]]


def test_session_windows_over_timestamp_columns_and_batch_dataframes(spark) -> None:
    df = spark.createDataFrame([("a", 1500), ("a", 2500), ("a", 9000)], "k string, ms long").select(
        "k", F.timestamp_millis("ms").alias("ts")
    )
    out = df.kstate.windowed_by(SessionWindows.with_inactivity_gap("2 seconds"), key="k", timestamp="ts").count()
    assert [c for c, _ in out.dtypes] == ["k", "window_start", "window_end", "count", "timestamp", "tombstone"]
    assert dict(out.dtypes)["window_end"] == "timestamp"
    rows = sorted(out.collect(), key=lambda r: r["window_start"])
    assert [(r["window_start"].microsecond, r["window_end"].second, r["count"], r["tombstone"]) for r in rows] == [
        (500000, 2, 2, False),
        (0, 9, 1, False),
    ]


def test_restart_between_every_batch_gives_the_same_output(spark, tmp_path) -> None:
    check_restart_between_every_batch(
        spark,
        str(tmp_path),
        SessionWindows.with_inactivity_gap("2 seconds").grace("1 second"),
        seed=5,
        extra=("tombstone",),
    )


def test_lateness_metrics_report_the_average_and_the_largest(spark, tmp_path) -> None:
    windows = SessionWindows.with_inactivity_gap("1 second").grace("1 minute")
    batches = [
        [
            dict(seq=0, k="a", ts=10_000, v=1),
            dict(seq=1, k="d", ts=4_000, v=1),
            dict(seq=2, k="g", ts=9_000, v=1),
            dict(seq=3, k="y", ts=10_000, v=1),
        ]
    ]
    with shuffle_partitions(spark, 3):
        fs = FileStream(
            spark,
            str(tmp_path / "src"),
            str(tmp_path / "ckpt"),
            _aggregate(windows),
            schema=SCHEMA,
            output_mode="update",
        )
        with fs:
            fs.add_batch(batches[0])
            progress = fs.query.lastProgress
    custom = progress["stateOperators"][0]["customMetrics"]
    # lateness = stream time of the record's partition - ts, when positive; which keys share a
    # partition decides each record's stream time
    pm = partition_map(spark, KEYS, "string", 3)
    lateness, seen = [], {}
    for r in batches[0]:
        p = pm[r["k"]]
        st_ = seen.get(p)
        lateness.append(max(0, st_ - r["ts"]) if st_ is not None else 0)
        seen[p] = max(st_ or r["ts"], r["ts"])
    assert custom["recordsAggregated"] == 4
    assert custom["recordLatenessMaxMs"] == max(lateness)
    assert custom["recordLatenessTotalMs"] == sum(lateness)
    assert custom["recordLatenessAvgMs"] == sum(lateness) // 4


# --- property: kstate emits what the model emits, batch by batch ------------------------------


@st.composite
def scenarios(draw) -> Dict[str, Any]:
    recs = random_records(draw(st.randoms(use_true_random=True)), draw(st.integers(4, 24)), jump=(-6, 8))
    batches = draw(micro_batches(recs))
    windows = SessionWindows.with_inactivity_gap(draw(st.sampled_from([500, 1000, 2500]))).grace(
        draw(st.sampled_from([0, 1000, 3000]))
    )
    return dict(records=recs, batches=batches, windows=windows, final=draw(st.booleans()))


def check(spark, tmp_factory, sc: Dict[str, Any], partitions: int) -> None:
    check_against_model(
        spark,
        str(tmp_factory.mktemp("sagg")),
        sc,
        partitions,
        lambda w, final: SessionAggModel(w.gap_ms, w.grace_ms, final),
        extra=("tombstone",),
    )


@pytest.mark.parametrize("partitions", [1, 3])
@PROPERTY_SETTINGS
@given(data=st.data())
def test_streaming_matches_model(spark, session_tmp, partitions, data) -> None:
    check(spark, session_tmp, data.draw(scenarios(), label="scenario"), partitions=partitions)


def test_spilling_final_results_equal_unbounded_ones(spark, tmp_path) -> None:
    rnd = random.Random(4)
    windows = SessionWindows.with_inactivity_gap("3 seconds").grace("2 seconds")
    batches = [
        [dict(seq=i, k=f"k{rnd.randint(0, 2999)}", ts=5 * i + rnd.randint(0, 4000), v=i) for i in range(6000)],
        [dict(seq=6000, k="z", ts=200_000, v=0)],
    ]
    spill = BufferConfig.max_bytes(64 * 1024).spill_to_disk_when_full()
    unbounded = _stream(spark, str(tmp_path / "u"), aggregate(windows, True), batches, partitions=1)
    spilled = _stream(spark, str(tmp_path / "s"), aggregate(windows, True, spill), batches, partitions=1)
    assert spilled == unbounded and sum(len(rows) for rows in unbounded.values()) > 2000
