"""Sliding-window aggregations (``windowed_by(SlidingWindows...).count()/agg(...)``, Kafka's
KIP-450) and their fused ``suppress(until_window_closes)``: Kafka's example, early records,
restart, construction-time errors, and a property test against the independent reference model
(python/tests/models/sliding_agg_model.py, which recomputes each key's window set from scratch)
on random input split at random micro-batch boundaries, on one and on three state partitions."""

from __future__ import annotations

import random
from typing import Any, Dict

import kstate
import pytest
from _property import PROPERTY_SETTINGS, micro_batches
from _windowed import aggregate, check_against_model, check_restart_between_every_batch, random_records, stream, tuples
from hypothesis import given
from hypothesis import strategies as st
from kstate import BufferConfig, SlidingWindows, Suppressed
from models.sliding_agg_model import SlidingAggModel
from pyspark.sql import functions as F


def _aggregate(windows: SlidingWindows, final: bool = False):
    return aggregate(windows, final)


_tuples = tuples
_stream = stream


def test_kafkas_example_and_windows_created_by_a_later_batch(spark, tmp_path) -> None:
    windows = SlidingWindows.of_time_difference("5 seconds").grace("30 seconds")
    batches = [
        [dict(seq=0, k="A", ts=8000, v=1), dict(seq=1, k="A", ts=9200, v=2)],
        [dict(seq=2, k="A", ts=12400, v=3)],
    ]
    got = _stream(spark, str(tmp_path), _aggregate(windows), batches, partitions=1)
    assert got[0] == [
        ("A", 3000, 8000, 1, 1, 1, 8000),
        ("A", 4200, 9200, 2, 3, 2, 9200),
        ("A", 8001, 13001, 1, 2, 2, 9200),
    ]
    # 12400 joins [8001,13001], creates its left window from all three records and 9200's right window
    assert got[1] == [
        ("A", 7400, 12400, 3, 6, 3, 12400),
        ("A", 8001, 13001, 2, 5, 3, 12400),
        ("A", 9201, 14201, 1, 3, 3, 12400),
    ]


def test_final_results_and_early_records(spark, tmp_path) -> None:
    windows = SlidingWindows.of_time_difference("10 seconds")
    batches = [
        [dict(seq=0, k="a", ts=3000, v=1), dict(seq=1, k="a", ts=7000, v=1)],
        [dict(seq=2, k="a", ts=30_000, v=1)],
    ]  # closes [0,10] and [3001,13001]
    got = _stream(spark, str(tmp_path), _aggregate(windows, final=True), batches, partitions=1)
    assert got[0] == []
    assert got[1] == [("a", 0, 10_000, 2, 2, 1, 7000), ("a", 3001, 13_001, 1, 1, 1, 7000)]


def test_a_record_is_kept_until_its_right_window_closes(spark, tmp_path) -> None:
    # d = 10 ms, no grace. After the first batch the close time is 111: a@100's own windows are
    # closed, but its right window [101, 111] would still be open, so a@100 must stay in state for
    # a later record to create that window from.
    windows = SlidingWindows.of_time_difference(10)
    batches = [
        [dict(seq=0, k="a", ts=100, v=1), dict(seq=1, k="d", ts=111, v=1)],
        [dict(seq=2, k="a", ts=105, v=7)],
    ]  # 105 + 10 >= 111: on time; its left window is closed
    got = _stream(spark, str(tmp_path), _aggregate(windows), batches, partitions=1)
    assert got[1] == [("a", 101, 111, 1, 7, 7, 105)]


def test_restart_between_every_batch_gives_the_same_output(spark, tmp_path) -> None:
    check_restart_between_every_batch(
        spark, str(tmp_path), SlidingWindows.of_time_difference("2 seconds").grace("1 second"), seed=11, extra=()
    )


@pytest.mark.parametrize("final", [False, True])
def test_an_order_sensitive_aggregate_updates_per_record_with_the_same_windows_as_the_folded_path(
    spark, tmp_path, final
) -> None:
    # count, sum and max of integers are folded once per micro-batch; with avg beside them (a
    # floating-point sum) every record updates its windows one by one: same windows and values.
    windows = SlidingWindows.of_time_difference("3 seconds").grace("1 second")
    rnd = random.Random(7)  # three keys, up to 1.5 s of disorder, a few null values
    recs = [
        dict(seq=i, k=rnd.choice("abc"), ts=400 * i - rnd.randint(0, 1500), v=rnd.choice([None, *range(-3, 10)]))
        for i in range(60)
    ]
    batches = [recs[i : i + 12] for i in range(0, 60, 12)]

    def with_avg(df):
        out = df.kstate.windowed_by(windows, key="k", timestamp="ts").agg(
            F.count(F.lit(1)).alias("n"), F.sum("v").alias("s"), F.max("v").alias("m"), F.avg("v").alias("a")
        )
        return out.kstate.suppress(Suppressed.until_window_closes(BufferConfig.unbounded())) if final else out

    folded = _stream(spark, str(tmp_path / "folded"), _aggregate(windows, final), batches, partitions=2)
    per_record = _stream(spark, str(tmp_path / "per_record"), with_avg, batches, partitions=2)
    assert sum(len(v) for v in folded.values()) > 40
    assert per_record == folded


def test_sliding_windows_are_rejected_for_distinct_and_bad_specs_are_named_errors(spark) -> None:
    df = spark.createDataFrame([("a", 1)], "k string, ts long")
    with pytest.raises(kstate.KStateError) as e:
        df.kstate.windowed_by(SlidingWindows.of_time_difference("5s"), key="k", timestamp="ts").distinct()
    assert e.value.error_class == "KSTATE_UNSUPPORTED_WINDOWS"
    with pytest.raises(kstate.KStateError) as e:
        SlidingWindows.of_time_difference(-1)
    assert e.value.error_class == "KSTATE_INVALID_DURATION"


# --- property: kstate emits what the model emits, batch by batch ------------------------------


@st.composite
def scenarios(draw) -> Dict[str, Any]:
    recs = random_records(draw(st.randoms(use_true_random=True)), draw(st.integers(4, 24)), jump=(-6, 8), low=-4)
    batches = draw(micro_batches(recs))
    windows = SlidingWindows.of_time_difference(draw(st.sampled_from([0, 1000, 2500, 4000]))).grace(
        draw(st.sampled_from([0, 1000, 3000]))
    )
    return dict(records=recs, batches=batches, windows=windows, final=draw(st.booleans()))


def check(spark, tmp_factory, sc: Dict[str, Any], partitions: int) -> None:
    check_against_model(
        spark,
        str(tmp_factory.mktemp("slagg")),
        sc,
        partitions,
        lambda w, final: SlidingAggModel(w.time_difference_ms, w.grace_ms, final),
        extra=(),
    )


@pytest.mark.parametrize("partitions", [1, 3])
@PROPERTY_SETTINGS
@given(data=st.data())
def test_streaming_matches_model(spark, session_tmp, partitions, data) -> None:
    check(spark, session_tmp, data.draw(scenarios(), label="scenario"), partitions=partitions)
