"""``kstate.testing.PipelineTestDriver``: KIP-655's and KIP-328's examples through the driver,
restart in the middle, state and metrics after a batch, Spark's operators and two inputs in the
same query, determinism, and bad usage raising named errors before anything runs."""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal

import pytest
from kstate import BufferConfig, KStateError, Suppressed, TimeWindows, VersionedTable
from kstate.testing import PipelineTestDriver
from pyspark.sql import functions as F
from test_dedup_kip_examples import EXAMPLES

S, MIN = 1000, 60_000


# --- KIP-655: the deduplication examples ---------------------------------------------------


def _dedup(interval_ms):
    return lambda events: events.kstate.deduplicate_by_key(interval_ms, key="k", timestamp="ts")


SLOT = 1000 * S  # each example runs 1000 s after the previous one (KIP times are below 120 s)


@pytest.mark.parametrize("interval", sorted({iv for iv, _, _ in EXAMPLES.values()}))
def test_kip_655_examples_each_one_micro_batch(spark, interval) -> None:
    # Every KIP example of this interval through ONE operator, each example one micro-batch in
    # its own time slot: stream time has passed the previous example's records by more than the
    # interval, so each example starts as on a fresh operator (keys are also prefixed).
    examples = {name: ex for name, ex in EXAMPLES.items() if ex[0] == interval}
    with PipelineTestDriver(spark, "seq INT, k STRING, ts LONG", _dedup(interval)) as driver:
        got = {
            name: [
                r.seq for r in driver.pipe([(i, f"{name}/{k}", slot * SLOT + t * S) for i, (k, t) in enumerate(events)])
            ]
            for slot, (name, (_, events, _)) in enumerate(examples.items())
        }
    assert got == {name: [i for i, f in enumerate(fwd) if f] for name, (_, _, fwd) in examples.items()}


def test_kip_655_example_one_record_per_micro_batch(spark) -> None:
    # Late example 1 (k@20 fwd, k@25 dup, k@11 dup, k@9 fwd: more than 10 s before stream
    # time 25 and no stored duplicate within 10 s), one record per micro-batch, with TIMESTAMP
    # input given as epoch millis.
    interval, events, forwarded = EXAMPLES["late_example_1"]
    with PipelineTestDriver(spark, "seq INT, k STRING, ts TIMESTAMP", _dedup(interval)) as driver:
        got = [driver.pipe([dict(seq=i, k=k, ts=t * S)]) for i, (k, t) in enumerate(events)]
    assert [[r.seq for r in rows] for rows in got] == [[i] if f else [] for i, f in enumerate(forwarded)]
    assert got[3][0].ts == dt.datetime(1970, 1, 1, 0, 0, 9)  # session time zone: UTC


# --- KIP-328: final results, an alert for fewer than 3 events in an hour -------------------


def _fewer_than_3_an_hour(events):
    windows = TimeWindows.of_size("1 hour").grace("10 minutes")
    counts = events.kstate.windowed_by(windows, key="user", timestamp="ts").count()
    final = counts.kstate.suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
    return final.where("count < 3").select("user", "window_start", "count")


def test_kip_328_final_window_results_only(spark) -> None:
    with PipelineTestDriver(spark, "user STRING, ts LONG", _fewer_than_3_an_hour) as driver:
        assert driver.pipe([("alice", 5 * MIN), ("bob", 6 * MIN), ("alice", 20 * MIN), ("alice", 40 * MIN)]) == []
        assert driver.pipe([("bob", 65 * MIN)]) == []  # stream time 65 min: hour 0 in grace
        assert driver.pipe([("bob", 55 * MIN)]) == []  # late within grace: counted
        # stream time 70 min = end + grace: hour 0 closes, exactly one result per user;
        # alice had 3 events (no alert), bob 2
        closed = driver.pipe([("alice", 71 * MIN)])
        assert [tuple(r) for r in closed] == [("bob", 0, 2)]
        assert driver.pipe([("bob", 30 * MIN)]) == []  # after the window closed: dropped
        assert driver.custom_metrics()["kstate_windowed_aggregate"]["lateRecordsDropped"] == 1
        assert [tuple(r) for r in driver.outputs()] == [("bob", 0, 2)]


# --- restart in the middle, determinism ----------------------------------------------------

BATCHES = [
    [("a", 1 * S, 1), ("b", 2 * S, 2), ("a", 3 * S, 3), ("a", 3 * S, 3)],
    [("b", 12 * S, 4), ("a", 9 * S, 5), ("c", 14 * S, 6)],
    [("a", 2 * S, 7), ("c", 25 * S, 8), ("b", 26 * S, 9)],  # a@2 late
    [("a", 31 * S, 10), ("c", 29 * S, 11)],
]


def _dedup_then_count(events):
    deduped = events.kstate.deduplicate_by_key("5 seconds", key=["k", "v"], timestamp="ts")
    return deduped.kstate.windowed_by(TimeWindows.of_size("10 seconds"), key="k", timestamp="ts").count()


def _run(spark, restart_after=None):
    outputs = []
    with PipelineTestDriver(spark, "k STRING, ts LONG, v INT", _dedup_then_count, output_mode="update") as driver:
        for i, batch in enumerate(BATCHES):
            outputs.append(sorted(tuple(r) for r in driver.pipe(batch)))
            if i == restart_after:
                driver.restart()
        late = driver.custom_metrics()["kstate_windowed_aggregate"]["lateRecordsDroppedTotal"]
    return outputs, late


def test_restart_in_the_middle_equals_the_uninterrupted_run(spark) -> None:
    # One state partition: one stream time for all keys (no grace: a window closes at its end).
    expected = (
        [
            [("a", 0, 10 * S, 2, 3 * S), ("b", 0, 10 * S, 1, 2 * S)],  # (a, 3, 3) deduplicated
            [("b", 10 * S, 20 * S, 1, 12 * S), ("c", 10 * S, 20 * S, 1, 14 * S)],  # a@9 late
            [("b", 20 * S, 30 * S, 1, 26 * S), ("c", 20 * S, 30 * S, 1, 25 * S)],  # a@2 late
            [("a", 30 * S, 40 * S, 1, 31 * S)],
        ],  # c@29 late: stream time 31
        3,
    )
    assert _run(spark) == expected  # run twice (below): the same output on every run
    assert _run(spark, restart_after=1) == expected


def _open_windows(buffer):
    windows = TimeWindows.of_size("10 seconds").grace("1 hour")  # nothing closes: the buffer fills
    return lambda events: (
        events.kstate.windowed_by(windows, key="k", timestamp="ts")
        .count()
        .kstate.suppress(Suppressed.until_window_closes(buffer))
    )


def test_restart_with_a_larger_buffer_runs_the_failed_micro_batch_again(spark) -> None:
    small = _open_windows(BufferConfig.max_records(1).shut_down_when_full())
    with PipelineTestDriver(spark, "k STRING, ts LONG", small) as driver:
        driver.pipe([("a", 1 * S)])
        with pytest.raises(KStateError) as e:
            driver.pipe([("b", 2 * S)])  # a 2nd open window: over the limit
        assert e.value.error_class == "KSTATE_BUFFER_FULL" and sorted(driver.batches) == [0]
        # the same checkpoint with room for 5: the failed micro-batch runs again, nothing lost
        assert driver.restart(_open_windows(BufferConfig.max_records(5).shut_down_when_full())) == []
        assert sorted(driver.batches) == [0, 1]
        closed = driver.pipe([("z", 4_000 * S)])  # stream time past both windows' grace
        assert sorted((r.k, r["count"]) for r in closed) == [("a", 1), ("b", 1)]


# --- state, metrics, progress after a batch ------------------------------------------------


def test_state_and_progress_after_each_micro_batch(spark) -> None:
    with PipelineTestDriver(spark, "k STRING, ts LONG", _dedup(10 * S)) as driver:
        driver.pipe([("a", 5 * S), ("b", 6 * S)])
        # b@7 is a duplicate of b@6 (dropped, not stored); then a@17 replaces a@5. (Piped the
        # other way round, a@17 first, stream time 17 would have expired b@6 and forwarded b@7.)
        assert [tuple(r) for r in driver.pipe([("b", 7 * S), ("a", 17 * S)])] == [("a", 17 * S)]
        latest = driver.state("deduplicate_by_key-0").select("key.identity_0", "value.ts")
        first = driver.state("deduplicate_by_key-0", batch_id=0).select("key.identity_0", "value.ts")
        assert sorted(map(tuple, latest.collect())) == [("a", 17 * S)]  # b@6 expired: 17 - 10 > 6
        assert sorted(map(tuple, first.collect())) == [("a", 5 * S), ("b", 6 * S)]
        assert driver.progress(1).numInputRows == 2 and driver.progress(1).batchId == 1
        assert sorted(driver.batches) == [0, 1]
        assert os.path.isdir(driver.checkpoint)
        checkpoint = driver.checkpoint
    assert not os.path.exists(checkpoint)  # the driver removes its directories


# --- Spark's operators and two inputs in the same query -----------------------------------


def test_sparks_own_aggregation_after_kstate_dedup_in_update_mode(spark) -> None:
    def pipeline(events):
        return _dedup(10 * S)(events).groupBy("k").count()

    with PipelineTestDriver(spark, "k STRING, ts LONG", pipeline, output_mode="update") as driver:
        assert sorted(map(tuple, driver.pipe([("a", 1 * S), ("a", 2 * S), ("b", 3 * S)]))) == [("a", 1), ("b", 1)]
        assert list(map(tuple, driver.pipe([("a", 12 * S), ("b", 4 * S)]))) == [("a", 2)]


def test_sparks_drop_duplicates_within_watermark_before_a_kstate_window(spark) -> None:
    def pipeline(events):
        once = (
            events.withColumn("t", F.timestamp_millis("ts"))
            .withWatermark("t", "5 seconds")
            .dropDuplicatesWithinWatermark(["id"])
        )
        return once.kstate.windowed_by(TimeWindows.of_size("10 seconds"), key="k", timestamp="ts").count()

    with PipelineTestDriver(spark, "id STRING, k STRING, ts LONG", pipeline, output_mode="update") as driver:
        first = driver.pipe([("e1", "a", 1 * S), ("e1", "a", 1 * S), ("e2", "a", 2 * S)])
        again = driver.pipe([("e2", "a", 3 * S), ("e3", "a", 4 * S)])  # e2 repeated within 5 s
    assert [(r.k, r["count"]) for r in first] == [("a", 2)]
    assert [(r.k, r["count"]) for r in again] == [("a", 3)]


def test_two_inputs_stream_table_join_as_of_the_records_time(spark) -> None:
    # KIP-914: an out-of-order stream record joins the versioned table as of its own time.
    def pipeline(orders, rates):
        table = rates.kstate.to_table(key="k", timestamp="ts", versioned=VersionedTable("1 minute"))
        return orders.kstate.join(table, key="k", timestamp="ts").select("order", "rate")

    inputs = {"orders": "order STRING, k STRING, ts LONG", "rates": "k STRING, rate INT, ts LONG"}
    with PipelineTestDriver(spark, inputs, pipeline) as driver:
        assert driver.pipe([("eur", 1, 0), ("eur", 4, 4 * S)], input="rates") == []
        rows = driver.add_batch({"orders": [("o5", "eur", 5 * S), ("o2", "eur", 2 * S)]})
        assert [tuple(r) for r in rows] == [("o5", 4), ("o2", 1)]
        both = driver.add_batch({"rates": [("eur", 7, 7 * S)], "orders": [("o8", "eur", 8 * S)]})
        assert [tuple(r) for r in both] == [("o8", 7)]


# --- bad usage: named errors, before anything runs -----------------------------------------

BAD_RECORDS = [
    ([("a", "not a number")], "record 0"),
    ([("ok", 1), {"k": "a", "ts": 1, "typo": 2}], "record 1 has fields ['typo']"),
    ([("a",)], "has 1 values but the schema has 2 fields"),
    ("a", "must be a list of records"),
]


def test_records_not_matching_the_schema_fail_before_running(spark) -> None:
    with PipelineTestDriver(spark, "k STRING, ts LONG", _dedup(S)) as driver:
        driver.pipe([("ok", 1)])
        for records, why in BAD_RECORDS:
            with pytest.raises(KStateError) as e:
                driver.pipe(records)
            assert e.value.error_class == "KSTATE_TEST_DRIVER_INVALID_RECORD", records
            assert why in e.value.message and "input 'input'" in e.value.message, e.value.message
        assert sorted(driver.batches) == [0]  # nothing was written or run
        assert [r.k for r in driver.pipe([("next", 2)])] == ["next"]


def test_unknown_input_invalid_pipeline_and_closed_driver(spark) -> None:
    inputs = {"a": "k STRING, ts LONG", "b": "k STRING, ts LONG"}
    with PipelineTestDriver(spark, inputs, lambda a, b: a.unionByName(b)) as driver:
        with pytest.raises(KStateError, match=r"KSTATE_TEST_DRIVER_UNKNOWN_INPUT.*inputs are: a, b"):
            driver.pipe([("x", 1)])  # two inputs: which one?
        with pytest.raises(KStateError, match="KSTATE_TEST_DRIVER_UNKNOWN_INPUT.*'c'"):
            driver.add_batch({"c": [("x", 1)]})
    with pytest.raises(KStateError, match="KSTATE_TEST_DRIVER_NOT_RUNNING.*closed"):
        driver.pipe([("x", 1)], input="a")
    static = lambda df: df.sparkSession.range(1)  # noqa: E731
    with pytest.raises(KStateError, match="KSTATE_TEST_DRIVER_INVALID_PIPELINE.*not a streaming"):
        PipelineTestDriver(spark, "k STRING", static).start()
    with pytest.raises(KStateError, match="KSTATE_TEST_DRIVER_INVALID_PIPELINE.*not a valid DDL"):
        PipelineTestDriver(spark, "k STRNG", lambda df: df).start()
    with pytest.raises(KStateError, match="KSTATE_TEST_DRIVER_INVALID_PIPELINE.*output_mode"):
        PipelineTestDriver(spark, "k STRING", lambda df: df, output_mode="upsert")


@pytest.mark.parametrize(
    "schema,record",
    [
        # flat: written with pyarrow
        (
            "i BYTE, d DECIMAL(10,3), day DATE, t TIMESTAMP, n TIMESTAMP_NTZ, b BINARY, f FLOAT",
            (
                7,
                Decimal("1.250"),
                dt.date(2026, 11, 24),
                dt.datetime(2026, 11, 24, 10, 0, 0, 123456),
                dt.datetime(2026, 11, 24, 10, 0, 0, 1),
                bytearray(b"\x00\x01"),
                1.5,
            ),
        ),
        # nested: written by Spark
        (
            "s STRUCT<a: INT, t: TIMESTAMP>, xs ARRAY<STRING>, m MAP<STRING, INT>",
            ((1, dt.datetime(2026, 11, 24, 10, 0)), ["x", None], {"k": 1}),
        ),
    ],
)
def test_records_arrive_exactly_as_given(spark, schema, record) -> None:
    with PipelineTestDriver(spark, schema, lambda df: df) as driver:
        assert [tuple(r) for r in driver.pipe([record, tuple(None for _ in record)])] == [
            record,
            tuple(None for _ in record),
        ]


def test_readme_example(spark) -> None:
    def dedup(events):
        return events.kstate.deduplicate_by_key("10 seconds", key="user", timestamp="ts")

    with PipelineTestDriver(spark, "user STRING, ts LONG, v STRING", dedup) as driver:
        assert [r.v for r in driver.pipe([("a", 100_000, "first")])] == ["first"]
        assert driver.pipe([("a", 108_000, "dup")]) == []  # within 10 s: dropped
        driver.restart()  # from the checkpoint
        assert [r.v for r in driver.pipe([("a", 111_000, "again")])] == ["again"]
        assert driver.state("deduplicate_by_key-0").count() == 1
