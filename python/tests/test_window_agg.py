"""Windowed aggregations (``windowed_by(...).count()/agg(...)``) and their fused
``suppress(until_window_closes)``: KIP-328's examples, restart, a full buffer, construction-time
errors, and a property test against the independent reference model
(python/tests/models/window_agg_model.py) on random input split at random micro-batch
boundaries, on one and on three state partitions."""

from __future__ import annotations

import random
from typing import Any, Dict

import kstate
import pytest
from _property import PROPERTY_SETTINGS, micro_batches
from _streaming import FileStream, partition_map, session_conf, shuffle_partitions
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
from kstate import BufferConfig, Suppressed, TimeWindows
from kstate.testing import PipelineTestDriver
from models.window_agg_model import WindowAggModel
from pyspark.sql import functions as F

_aggregate = aggregate
_tuples = tuples
_stream = stream


# --- KIP-328's example: an alert when a user has fewer than 3 events in an hour -----------

MIN = 60_000


def test_kip_328_fewer_than_3_events_an_hour_final_results_only(spark, tmp_path) -> None:
    windows = TimeWindows.of_size("1 hour").grace("10 minutes")
    build = lambda df: _aggregate(windows, final=True)(df).where("n < 3")
    batches = [
        [
            dict(seq=0, k="alice", ts=5 * MIN, v=1),
            dict(seq=1, k="bob", ts=6 * MIN, v=1),
            dict(seq=2, k="alice", ts=20 * MIN, v=1),
            dict(seq=3, k="alice", ts=40 * MIN, v=1),
        ],
        [dict(seq=4, k="bob", ts=65 * MIN, v=1)],  # stream time 65 min: first hour still open (grace)
        [dict(seq=5, k="bob", ts=55 * MIN, v=1)],  # late but within grace: counted for bob
        [dict(seq=6, k="alice", ts=71 * MIN, v=1), dict(seq=7, k="bob", ts=72 * MIN, v=1)],
        [dict(seq=8, k="bob", ts=30 * MIN, v=1)],  # first hour closed: dropped
    ]
    got = _stream(spark, str(tmp_path), build, batches, partitions=1)
    assert got[0] == got[1] == got[2] == [] and got[4] == []
    # hour 0 closes at stream time 70 min: alice had 3 (no alert), bob 2 -> one alert
    assert got[3] == [("bob", 0, 60 * MIN, 2, 2, 1, 55 * MIN)]


def test_update_per_changed_window_per_batch_and_hopping_windows(spark, tmp_path) -> None:
    windows = TimeWindows.of_size("10 seconds").advance_by("5 seconds")
    batches = [
        [dict(seq=0, k="a", ts=1000, v=5), dict(seq=1, k="a", ts=7000, v=None), dict(seq=2, k="a", ts=8000, v=2)],
        [dict(seq=3, k="a", ts=12000, v=1)],
    ]
    got = _stream(spark, str(tmp_path), _aggregate(windows), batches, partitions=1)
    assert got[0] == [("a", 0, 10000, 3, 7, 5, 8000), ("a", 5000, 15000, 2, 2, 2, 8000)]
    # stream time 12 s, no grace: [0,10) is closed; [5,15) and [10,20) change
    assert got[1] == [("a", 10000, 20000, 1, 1, 1, 12000), ("a", 5000, 15000, 3, 3, 2, 12000)]


def test_timestamp_columns_give_timestamp_window_bounds(spark) -> None:
    df = spark.createDataFrame([("a", 1500), ("a", 2500)], "k string, ms long").select(
        "k", F.timestamp_millis("ms").alias("ts")
    )
    rows = df.kstate.windowed_by(TimeWindows.of_size("2 seconds"), key="k", timestamp="ts").count().collect()
    assert [
        (r["k"], r["window_start"].second, r["window_end"].second, r["count"], r["timestamp"].microsecond)
        for r in sorted(rows, key=lambda r: r["window_start"])
    ] == [("a", 0, 2, 1, 500000), ("a", 2, 4, 1, 500000)]
    assert (
        dict(df.kstate.windowed_by(TimeWindows.of_size("2 seconds"), key="k", timestamp="ts").count().dtypes)[
            "window_start"
        ]
        == "timestamp"
    )


def test_restart_between_every_batch_gives_the_same_output(spark, tmp_path) -> None:
    check_restart_between_every_batch(
        spark,
        str(tmp_path),
        TimeWindows.of_size("10 seconds").advance_by("5 seconds").grace("3 seconds"),
        seed=3,
        extra=(),
    )


def test_shut_down_when_full_then_restart_with_a_larger_buffer_loses_nothing(spark, tmp_path) -> None:
    windows = TimeWindows.of_size("10 seconds").grace("1 hour")  # nothing closes: the buffer fills
    small = BufferConfig.max_records(3).shut_down_when_full()
    first = [dict(seq=i, k=k, ts=1000 * i, v=i) for i, k in enumerate("abc")]
    src, ckpt = str(tmp_path / "src"), str(tmp_path / "ckpt")
    with shuffle_partitions(spark, 1):
        fs = FileStream(spark, src, ckpt, _aggregate(windows, True, small), schema=SCHEMA, output_mode="update").start()
        fs.add_batch(first)  # 3 open windows: at the limit, not over it
        fs.add_file([dict(seq=3, k="d", ts=4000, v=3)])  # a 4th open window
        with pytest.raises(Exception) as e:
            fs.process()
        fs.stop()
        msg = str(e.value)
        assert "KSTATE_BUFFER_FULL" in msg and "holds 4 records" in msg and "max_records=3" in msg, msg
        # restart on the same checkpoint with room for 5: the failed batch runs again, nothing lost
        fs = FileStream(
            spark,
            src,
            ckpt,
            _aggregate(windows, True, BufferConfig.max_records(5).shut_down_when_full()),
            schema=SCHEMA,
            output_mode="update",
        ).start()
        fs.process()
        fs.add_batch([dict(seq=4, k="a", ts=4_000_000, v=4)])  # closes the four windows
        rows = fs.rows()
        fs.stop()
    assert _tuples(rows) == [
        ("a", 0, 10000, 1, 0, 0, 0),
        ("b", 0, 10000, 1, 1, 1, 1000),
        ("c", 0, 10000, 1, 2, 2, 2000),
        ("d", 0, 10000, 1, 3, 3, 4000),
    ]


def test_spill_to_disk_gives_the_same_final_results_as_unbounded(spark, tmp_path) -> None:
    # 6000 keys in one batch: more changed windows than are kept on the heap between writes
    rnd = random.Random(9)
    windows = TimeWindows.of_size("10 seconds").grace("5 seconds")
    batches = [
        [dict(seq=i, k=f"k{rnd.randint(0, 5999)}", ts=4 * i + rnd.randint(0, 3000), v=i) for i in range(9000)],
        [dict(seq=9000, k="z", ts=100_000, v=0)],
    ]
    spill = BufferConfig.max_bytes(64 * 1024).spill_to_disk_when_full()
    unbounded = _stream(spark, str(tmp_path / "u"), _aggregate(windows, True), batches, partitions=1)
    spilled = _stream(spark, str(tmp_path / "s"), _aggregate(windows, True, spill), batches, partitions=1)
    assert spilled == unbounded and len(unbounded[0]) > 4096


def test_final_results_of_sparks_own_windowed_aggregation(spark, tmp_path) -> None:
    def build(df):
        counts = (
            df.withColumn("t", F.timestamp_millis("ts"))
            .withWatermark("t", "2 seconds")
            .groupBy(F.window("t", "10 seconds"), "k")
            .agg(F.count(F.lit(1)).alias("n"), F.max("ts").alias("last_ts"))
        )
        return counts.kstate.suppress(
            Suppressed.until_window_closes(BufferConfig.unbounded()),
            key=["k", "window"],
            window_end="window.end",
            timestamp="last_ts",
            grace="2 seconds",
        )

    batches = [
        [dict(seq=0, k="a", ts=1000, v=0), dict(seq=1, k="a", ts=4000, v=0)],
        [dict(seq=2, k="a", ts=13000, v=0), dict(seq=3, k="a", ts=8000, v=0)],
        [dict(seq=4, k="a", ts=25000, v=0)],
    ]
    with shuffle_partitions(spark, 1):
        fs = FileStream(
            spark, str(tmp_path / "src"), str(tmp_path / "ckpt"), build, schema=SCHEMA, output_mode="update"
        )
        with fs:
            emitted = []
            for b in batches:
                fs.add_batch(b)  # Spark adds no-data micro-batches as its watermark moves
                emitted.append(sorted((r["k"], r["window"]["start"].second, r["n"], r["last_ts"]) for r in fs.rows()))
    # Nothing is final after the first batch. The second updates [0,10) (count 3 at 8 s: Spark's
    # watermark is still 2 s) and opens [10,20) at 13 s, which closes [0,10) (13 >= 10 + 2): which
    # [0,10) row is final depends on the order of the two rows in Spark's output, (3, 8000) if it
    # comes first, else (2, 4000) and the late update is dropped. Either way exactly once.
    assert emitted[0] == []
    assert len(emitted[1]) == 1 and emitted[1][0] in [("a", 0, 3, 8000), ("a", 0, 2, 4000)]
    assert emitted[2] == emitted[1] + [("a", 10, 1, 13000)]


@pytest.mark.parametrize("follow", [False, True])
def test_idle_partitions_close_windows_only_when_stream_time_follows_the_watermark(spark, tmp_path, follow) -> None:
    pm = partition_map(spark, KEYS, "string", 2)
    busy = next(k for k in KEYS if pm[k] == 0)
    idle = next(k for k in KEYS if pm[k] == 1)

    def build(df):
        t = df.withColumn("t", F.timestamp_millis("ts")).withWatermark("t", "0 seconds")
        return (
            t.kstate.windowed_by(TimeWindows.of_size("10 seconds"), key="k", timestamp="ts")
            .count()
            .kstate.suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
        )

    batches = [
        [dict(seq=0, k=busy, ts=1000, v=0), dict(seq=1, k=idle, ts=2000, v=0)],
        [dict(seq=2, k=busy, ts=30_000, v=0)],
    ]  # the idle key's partition gets nothing
    with shuffle_partitions(spark, 2), session_conf(spark, {"spark.kstate.streamTime.followWatermark": follow}):
        fs = FileStream(
            spark, str(tmp_path / "src"), str(tmp_path / "ckpt"), build, schema=SCHEMA, output_mode="update"
        )
        with fs:
            for b in batches:
                fs.add_batch(b)
        emitted = sorted((r["k"], r["window_start"]) for r in fs.rows())
    if follow:
        # the watermark (30 s after batch 1) reaches the idle partition in a no-data micro-batch
        assert emitted == sorted([(busy, 0), (idle, 0)])
        batch_of = {r["k"]: b for b, rows in fs.batches.items() for r in rows}
        assert batch_of[idle] > batch_of[busy]  # a later micro-batch, run without new data
    else:  # default: the idle partition's stream time stays at 2 s, its window stays open
        assert emitted == [(busy, 0)]


def test_bad_arguments_fail_at_construction(spark, tmp_path) -> None:
    df = spark.createDataFrame([("a", 1, 2)], "k string, ts long, v long")
    w = df.kstate.windowed_by(TimeWindows.of_size("10s"), key="k", timestamp="ts")
    with pytest.raises(TypeError):
        Suppressed.until_window_closes(BufferConfig.max_records(10))  # emits early: not strict
    with pytest.raises(kstate.KStateError) as e:
        w.agg(F.col("v"))
    assert e.value.error_class == "KSTATE_UNSUPPORTED_AGGREGATE"
    with pytest.raises(kstate.KStateError) as e:
        w.agg(F.collect_list("v"))
    assert e.value.error_class == "KSTATE_UNSUPPORTED_AGGREGATE"
    with pytest.raises(kstate.KStateError) as e:
        w.agg(F.count_distinct("v"))
    assert e.value.error_class == "KSTATE_UNSUPPORTED_AGGREGATE"
    with pytest.raises(kstate.KStateError) as e:
        w.agg(F.sum("v").alias("timestamp"))
    assert e.value.error_class == "KSTATE_DUPLICATE_COLUMN"
    with pytest.raises(kstate.KStateError) as e:
        df.kstate.suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
    assert e.value.error_class == "KSTATE_UNSUPPORTED_SUPPRESS"
    with pytest.raises(kstate.KStateError) as e:
        BufferConfig.max_records(0)
    assert e.value.error_class == "KSTATE_INVALID_BUFFER_CONFIG"
    stream = spark.readStream.schema(SCHEMA).json(str(tmp_path))
    with pytest.raises(kstate.KStateError) as e:  # a windowed table kstate did not compute: window_end needed
        stream.kstate.suppress(
            Suppressed.until_window_closes(BufferConfig.unbounded()), key="k", timestamp="ts", grace="1s"
        )
    assert e.value.error_class == "KSTATE_MISSING_COLUMN" and "window_end" in str(e.value)


# --- property: kstate emits what the model emits, batch by batch ------------------------------


@st.composite
def scenarios(draw) -> Dict[str, Any]:
    recs = random_records(draw(st.randoms(use_true_random=True)), draw(st.integers(4, 24)))
    batches = draw(micro_batches(recs))
    size = draw(st.sampled_from([2000, 5000, 3000]))
    advance = draw(st.sampled_from([size, size // 2, 1000]))
    windows = TimeWindows.of_size(size).advance_by(advance).grace(draw(st.sampled_from([0, 1500, 4000])))
    return dict(records=recs, batches=batches, windows=windows, final=draw(st.booleans()))


def check(spark, tmp_factory, sc: Dict[str, Any], partitions: int) -> None:
    check_against_model(
        spark,
        str(tmp_factory.mktemp("wagg")),
        sc,
        partitions,
        lambda w, final: WindowAggModel(w.size_ms, w.advance_ms, w.grace_ms, final),
        extra=(),
    )


@pytest.mark.parametrize("partitions", [1, 3])
@PROPERTY_SETTINGS
@given(data=st.data())
def test_streaming_matches_model(spark, session_tmp, partitions, data) -> None:
    check(spark, session_tmp, data.draw(scenarios(), label="scenario"), partitions=partitions)


@pytest.mark.parametrize("follow", [False, True])
def test_spark_aggregation_downstream_drops_nothing_as_late(spark, tmp_path, follow) -> None:
    # One partition races ahead of the query's watermark, the other lags: the lagging
    # partition's final window comes out after the leading one's later windows. kstate's output
    # watermark (the smallest window end either partition may still emit) keeps Spark's
    # append-mode aggregation downstream from dropping it as late.
    pm = partition_map(spark, KEYS, "string", 2)
    lead = next(k for k in KEYS if pm[k] == 0)
    lag = next(k for k in KEYS if pm[k] == 1)

    def build(df):
        t = df.withColumn("t", F.timestamp_millis("ts")).withWatermark("t", "30 seconds")
        finals = (
            t.kstate.windowed_by(TimeWindows.of_size("10 seconds"), key="k", timestamp="t")
            .count()
            .kstate.suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
        )
        # no withWatermark here: window_end is the event-time column of kstate's output
        return finals.groupBy(F.window("window_end", "20 seconds")).agg(
            F.sum("count").alias("total"), F.count(F.lit(1)).alias("windows")
        )

    batches = [
        [dict(seq=0, k=lead, ts=1000, v=0), dict(seq=1, k=lag, ts=2000, v=0)],
        [dict(seq=2, k=lead, ts=45_000, v=0)],  # lead closes [0,10); the watermark passes 10 s
        [dict(seq=3, k=lead, ts=95_000, v=0)],  # lead closes [40,50); the watermark passes 60 s
        [dict(seq=4, k=lag, ts=96_000, v=0)],  # only now does lag close its [0,10)
        [dict(seq=5, k=lead, ts=300_000, v=0), dict(seq=6, k=lag, ts=300_000, v=0)],
        [dict(seq=7, k=lead, ts=400_000, v=0), dict(seq=8, k=lag, ts=400_000, v=0)],
    ]
    with shuffle_partitions(spark, 2), session_conf(spark, {"spark.kstate.streamTime.followWatermark": follow}):
        fs = FileStream(
            spark, str(tmp_path / "src"), str(tmp_path / "ckpt"), build, schema=SCHEMA, output_mode="append"
        )
        with fs:
            for b in batches:
                fs.add_batch(b)
            got = sorted(
                (r["window"]["start"].minute * 60 + r["window"]["start"].second, r["total"], r["windows"])
                for r in fs.rows()
            )
            dropped = sum(
                s.get("numRowsDroppedByWatermark", 0) for p in fs.query.recentProgress for s in p["stateOperators"]
            )
    # downstream windows by kstate window end: [0,20) gets both [0,10) windows, the lagging one too
    assert got == [(0, 2, 2), (40, 1, 1), (100, 2, 2), (300, 2, 2)]
    assert dropped == 0


def test_late_records_are_counted_per_micro_batch_and_in_total_across_restarts(spark) -> None:
    windows = TimeWindows.of_size("10 seconds")
    batches = [
        [dict(seq=0, k="a", ts=25_000, v=0), dict(seq=1, k="a", ts=3000, v=0)],  # 1 late
        [dict(seq=2, k="a", ts=4000, v=0), dict(seq=3, k="a", ts=5000, v=0)],
    ]  # 2 late
    seen = []
    with PipelineTestDriver(spark, SCHEMA, _aggregate(windows), output_mode="update") as driver:
        for b in batches:
            driver.pipe(b)
            custom = driver.custom_metrics()["kstate_windowed_aggregate"]
            seen.append((custom["lateRecordsDropped"], custom["lateRecordsDroppedTotal"]))
            driver.restart()  # a restart between the two micro-batches
    assert seen == [(1, 1), (2, 3)]
