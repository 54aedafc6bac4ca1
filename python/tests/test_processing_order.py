"""The processing order policy (docs/operators.md, "Processing order").

Issue reproducer, scaled down: the same files read one per micro-batch, two, ten, or all at once
(a catch-up batch) give identical results under the default order (auto: event time for files),
whereas Kafka task order, right for an ordered log, turns the catch-up batch into late records.
"""

from __future__ import annotations

import os
import random
from typing import Any, Dict, List, Optional

import pytest
from _streaming import file_name, partition_map, session_conf, shuffle_partitions, unique, write_json_lines
from kstate import BufferConfig, KStateError, Suppressed, TimeWindows
from models.dedup_model import DedupModel, Rec
from models.window_agg_model import WindowAggModel
from pyspark.sql import functions as F

SCHEMA = "seq LONG, k STRING, ts LONG, v LONG"
KEYS = [f"k{i}" for i in range(30)]
FILES = 12
SPAN = 1000  # each file holds event times [i * SPAN, (i + 1) * SPAN), in random order
WINDOW, GRACE = 400, 1000  # in-file disorder (< SPAN) stays within grace
INTERVAL = 300


def _files(seed: int) -> List[List[Dict[str, Any]]]:
    """Files of different sizes (Spark packs the largest first), each covering its own time span."""
    rnd = random.Random(seed)
    out, seq = [], 0
    for i in range(FILES):
        recs = []
        for _ in range(rnd.randint(40, 400)):
            recs.append(dict(seq=seq, k=rnd.choice(KEYS), ts=i * SPAN + rnd.randrange(SPAN), v=rnd.randint(0, 9)))
            seq += 1
        out.append(recs)
    return out


def _windowed(order: Optional[str] = None):
    def build(df):
        return (
            df.kstate.windowed_by(TimeWindows.of_size(WINDOW).grace(GRACE), key="k", timestamp="ts", order=order)
            .agg(F.count(F.lit(1)).alias("n"), F.sum("v").alias("s"))
            .kstate.suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
        )

    return build


def _dedup(order: Optional[str] = None):
    return lambda df: df.kstate.deduplicate_by_key(INTERVAL, key="k", timestamp="ts", order=order)


def _run(spark, tmp_path, files, build, max_files: Optional[int], settings: Dict[str, Any]):
    """All output rows (sorted) and the summed custom metrics of a query over ``files``."""
    run = tmp_path / unique("run")
    src = str(run / "src")
    os.makedirs(src)
    for i, recs in enumerate(files):  # increasing modification times: Spark reads them in this order
        write_json_lines(src, file_name(i), recs, mtime=1_700_000_000 + i)
    reader = spark.readStream.schema(SCHEMA)
    if max_files is not None:
        reader = reader.option("maxFilesPerTrigger", max_files)
    rows: List[Any] = []
    with shuffle_partitions(spark, 2), session_conf(spark, settings):
        q = (
            build(reader.json(src))
            .writeStream.outputMode("append")
            .option("checkpointLocation", str(run / "ckpt"))
            .foreachBatch(lambda b, _: rows.extend(b.collect()))
            .start()
        )
        try:
            q.processAllAvailable()
            metrics: Dict[str, int] = {}
            for p in q.recentProgress:
                for op in p["stateOperators"]:
                    for k, v in op["customMetrics"].items():
                        metrics[k] = metrics.get(k, 0) + v
        finally:
            q.stop()
    return sorted(tuple(r) for r in rows), metrics


def _event_time_model_windows(spark, files) -> List[tuple]:
    """Final windows of the reference model fed each state partition's records in event-time order."""
    pm = partition_map(spark, KEYS, "string", 2)
    models: Dict[int, WindowAggModel] = {}
    recs = sorted((r for f in files for r in f), key=lambda r: (r["ts"], r["seq"]))
    for r in recs:
        models.setdefault(pm[r["k"]], WindowAggModel(WINDOW, WINDOW, GRACE, final=True)).process(
            r["k"], r["ts"], r["v"]
        )
    out = []
    for m in models.values():
        out += [tuple(row[:5]) for row in m.end_batch()]
    return sorted(out)


AUTO = {"spark.kstate.processingOrder": "auto"}
TASK = {"spark.kstate.processingOrder": "task"}


@pytest.mark.parametrize("max_files", [2, 10, None])
def test_windowed_results_do_not_depend_on_files_per_trigger_by_default(spark, tmp_path, max_files) -> None:
    files = _files(1)
    one, m1 = _run(spark, tmp_path, files, _windowed(), 1, AUTO)
    got, m = _run(spark, tmp_path, files, _windowed(), max_files, AUTO)
    assert got == one
    assert m["lateRecordsDropped"] == 0 and m1["lateRecordsDropped"] == 0
    assert [(r[0], r[1], r[2], r[3], r[4]) for r in got] == _event_time_model_windows(spark, files)


@pytest.mark.parametrize("max_files", [2, 10, None])
def test_dedup_results_do_not_depend_on_files_per_trigger_by_default(spark, tmp_path, max_files) -> None:
    files = _files(2)
    one, _ = _run(spark, tmp_path, files, _dedup(), 1, AUTO)
    got, _ = _run(spark, tmp_path, files, _dedup(), max_files, AUTO)
    assert [r[0] for r in got] == [r[0] for r in one]
    # the reference model, each key's records in event-time order (keys are independent)
    pm = partition_map(spark, KEYS, "string", 2)
    models: Dict[int, DedupModel] = {}
    expected = []
    for r in sorted((r for f in files for r in f), key=lambda r: (r["ts"], r["seq"])):
        if models.setdefault(pm[r["k"]], DedupModel(INTERVAL, "by_key")).process(Rec(r["k"], None, r["ts"])):
            expected.append(r["seq"])
    assert sorted(r[0] for r in got) == sorted(expected)


def test_operator_order_overrides_the_session(spark, tmp_path) -> None:
    files = _files(3)
    one, _ = _run(spark, tmp_path, files, _windowed(), 1, AUTO)
    got, m = _run(spark, tmp_path, files, _windowed(order="event_time"), 10, TASK)
    assert got == one and m["lateRecordsDropped"] == 0


def test_task_order_turns_a_catch_up_batch_of_files_into_late_records(spark, tmp_path) -> None:
    """Documented: Kafka task order is for ordered logs. Files packed into one input partition
    (largest first) are not one: records of later files come first and earlier ones are late."""
    files = _files(4)
    one, m1 = _run(spark, tmp_path, files, _windowed(), 1, TASK)
    got, m = _run(spark, tmp_path, files, _windowed(), 10, TASK)
    assert m1["lateRecordsDropped"] == 0
    assert m["lateRecordsDropped"] > 0 and got != one


def test_a_micro_batch_many_times_the_spill_threshold_spills_and_gives_the_same_results(spark, tmp_path) -> None:
    files = _files(5)
    whole, m = _run(spark, tmp_path, files, _windowed(), None, AUTO)
    spilled, ms = _run(
        spark, tmp_path, files, _windowed(), None, dict(AUTO, **{"spark.kstate.processingOrder.spillThreshold": "8k"})
    )
    assert m["inputSpilledBytes"] == 0
    assert ms["inputSpilledBytes"] > 20 * 8 * 1024  # the batch is > 20x the threshold
    assert spilled == whole


def test_static_dataframes_keep_their_listed_order_under_auto(spark) -> None:
    # one key, listed out of event-time order: in listed order the second record is late
    df = spark.createDataFrame([(0, "a", 5000, 1), (1, "a", 100, 1)], SCHEMA).coalesce(1)
    with session_conf(spark, AUTO):
        listed = df.kstate.windowed_by(TimeWindows.of_size(1000), key="k", timestamp="ts").count().collect()
        by_time = (
            df.kstate.windowed_by(TimeWindows.of_size(1000), key="k", timestamp="ts", order="event_time")
            .count()
            .collect()
        )
    assert sorted((r["window_start"], r["count"]) for r in listed) == [(5000, 1)]
    assert sorted((r["window_start"], r["count"]) for r in by_time) == [(0, 1), (5000, 1)]


@pytest.mark.parametrize("bad", ["random", "", 3])
def test_an_unknown_order_is_a_named_error_at_construction(spark, bad) -> None:
    df = spark.createDataFrame([(0, "a", 1, 1)], SCHEMA)
    with pytest.raises(KStateError) as e:
        df.kstate.deduplicate_by_key(10, key="k", timestamp="ts", order=bad)
    assert e.value.error_class == "KSTATE_INVALID_PROCESSING_ORDER"


def test_explain_shows_the_order(spark) -> None:
    df = spark.createDataFrame([(0, "a", 1, 1)], SCHEMA)
    plan = (
        df.kstate.deduplicate_by_key(10, key="k", timestamp="ts", order="event_time")
        ._jdf.queryExecution()
        .executedPlan()
        .toString()
    )
    assert "order=event_time" in plan
    auto = df.kstate.deduplicate_by_key(10, key="k", timestamp="ts")._jdf.queryExecution().executedPlan().toString()
    assert "order=auto(listed)" in auto


def test_auto_resolves_to_event_time_for_a_file_stream(spark, tmp_path) -> None:
    src = str(tmp_path / "src")
    os.makedirs(src)
    write_json_lines(src, file_name(0), [dict(seq=0, k="a", ts=1, v=1)])
    with session_conf(spark, AUTO):
        q = (
            _dedup()(spark.readStream.schema(SCHEMA).json(src))
            .writeStream.format("noop")
            .option("checkpointLocation", str(tmp_path / "ckpt"))
            .start()
        )
    try:
        q.processAllAvailable()
        plan = q._jsq.streamingQuery().lastExecution().executedPlan().toString()
    finally:
        q.stop()
    assert "order=auto(event_time)" in plan, plan
