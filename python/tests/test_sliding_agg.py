"""Sliding-window aggregations (``windowed_by(SlidingWindows...).count()/agg(...)``, Kafka's
KIP-450) and their fused ``suppress(until_window_closes)``: Kafka's example, early records,
restart, construction-time errors, and a property test against the independent reference model
(python/tests/models/sliding_agg_model.py, which recomputes each key's window set from scratch)
on random input split at random micro-batch boundaries, on one and on three state partitions."""
from __future__ import annotations

import random
from typing import Any, Dict, List, Optional, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql import functions as F

import kstate
from kstate import BufferConfig, SlidingWindows, Suppressed
from _property import PROPERTY_SETTINGS, micro_batches
from _streaming import FileStream, partition_map, run_batch_df, run_stream_batches, shuffle_partitions
from models.sliding_agg_model import SlidingAggModel

SCHEMA = "seq LONG, k STRING, ts LONG, v LONG"
KEYS = ["a", "d", "g", "y"]


def _aggregate(windows: SlidingWindows, final: bool = False):
    def build(df):
        out = df.kstate.windowed_by(windows, key="k", timestamp="ts").agg(
            F.count(F.lit(1)).alias("n"), F.sum("v").alias("s"), F.max("v").alias("m"))
        if final:
            out = out.kstate.suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
        return out
    return build


def _tuples(rows) -> List[tuple]:
    return sorted(((r["k"], r["window_start"], r["window_end"], r["n"], r["s"], r["m"], r["timestamp"])
                   for r in rows), key=repr)


def _stream(spark, workdir: str, build, batches: Sequence[Sequence[Dict[str, Any]]],
            partitions: Optional[int] = None) -> Dict[int, List[Any]]:
    out = run_stream_batches(spark, workdir, build, batches, SCHEMA, partitions)
    return {b: _tuples(rows) for b, rows in out.items()}


def _model(batches, windows: SlidingWindows, final: bool, part) -> List[List[tuple]]:
    models: Dict[int, SlidingAggModel] = {}
    out = []
    for b in batches:
        for r in b:
            p = part(r["k"])
            models.setdefault(p, SlidingAggModel(windows.time_difference_ms, windows.grace_ms, final))
            models[p].process(r["k"], r["ts"], r["v"])
        rows = []
        for m in models.values():
            rows += m.end_batch()
        out.append(sorted(rows, key=repr))
    return out


def test_kafkas_example_and_windows_created_by_a_later_batch(spark, tmp_path) -> None:
    windows = SlidingWindows.of_time_difference("5 seconds").grace("30 seconds")
    batches = [[dict(seq=0, k="A", ts=8000, v=1), dict(seq=1, k="A", ts=9200, v=2)],
               [dict(seq=2, k="A", ts=12400, v=3)]]
    got = _stream(spark, str(tmp_path), _aggregate(windows), batches, partitions=1)
    assert got[0] == [("A", 3000, 8000, 1, 1, 1, 8000), ("A", 4200, 9200, 2, 3, 2, 9200),
                      ("A", 8001, 13001, 1, 2, 2, 9200)]
    # 12400 joins [8001,13001], creates its left window from all three records and 9200's right window
    assert got[1] == [("A", 7400, 12400, 3, 6, 3, 12400), ("A", 8001, 13001, 2, 5, 3, 12400),
                      ("A", 9201, 14201, 1, 3, 3, 12400)]


def test_final_results_and_early_records(spark, tmp_path) -> None:
    windows = SlidingWindows.of_time_difference("10 seconds")
    batches = [[dict(seq=0, k="a", ts=3000, v=1), dict(seq=1, k="a", ts=7000, v=1)],
               [dict(seq=2, k="a", ts=30_000, v=1)]]  # closes [0,10] and [3001,13001]
    got = _stream(spark, str(tmp_path), _aggregate(windows, final=True), batches, partitions=1)
    assert got[0] == []
    assert got[1] == [("a", 0, 10_000, 2, 2, 1, 7000), ("a", 3001, 13_001, 1, 1, 1, 7000)]


def test_a_record_is_kept_until_its_right_window_closes(spark, tmp_path) -> None:
    # d = 10 ms, no grace. After the first batch the close time is 111: a@100's own windows are
    # closed, but its right window [101, 111] would still be open, so a@100 must stay in state for
    # a later record to create that window from.
    windows = SlidingWindows.of_time_difference(10)
    batches = [[dict(seq=0, k="a", ts=100, v=1), dict(seq=1, k="d", ts=111, v=1)],
               [dict(seq=2, k="a", ts=105, v=7)]]  # 105 + 10 >= 111: on time; its left window is closed
    got = _stream(spark, str(tmp_path), _aggregate(windows), batches, partitions=1)
    assert got[1] == [("a", 101, 111, 1, 7, 7, 105)]


def test_restart_between_every_batch_gives_the_same_output(spark, tmp_path) -> None:
    windows = SlidingWindows.of_time_difference("2 seconds").grace("1 second")
    rnd = random.Random(11)
    recs = [dict(seq=i, k=rnd.choice(KEYS), ts=rnd.randint(0, 60) * 500, v=rnd.randint(-3, 9)) for i in range(40)]
    batches = [recs[i:i + 8] for i in range(0, 40, 8)]
    for final in (False, True):
        whole = _stream(spark, str(tmp_path / f"whole{final}"), _aggregate(windows, final), batches, partitions=2)
        src, ckpt = str(tmp_path / f"src{final}"), str(tmp_path / f"ckpt{final}")
        restarted = {}
        with shuffle_partitions(spark, 2):
            for i, b in enumerate(batches):
                fs = FileStream(spark, src, ckpt, _aggregate(windows, final), schema=SCHEMA, output_mode="update").start()
                fs.add_batch(b)
                restarted[i] = _tuples(fs.batches[i])
                fs.stop()
        assert restarted == whole


def test_sliding_windows_are_rejected_for_distinct_and_bad_specs_are_named_errors(spark) -> None:
    df = spark.createDataFrame([("a", 1)], "k string, ts long")
    with pytest.raises(kstate.KStateError) as e:
        df.kstate.windowed_by(SlidingWindows.of_time_difference("5s"), key="k", timestamp="ts").distinct()
    assert e.value.error_class == "KSTATE_UNSUPPORTED_WINDOWS"
    with pytest.raises(kstate.KStateError) as e:
        SlidingWindows.of_time_difference(-1)
    assert e.value.error_class == "KSTATE_INVALID_DURATION"


# --- property: kstate emits what the model emits, batch by batch ------------------------------

def _records(rnd: random.Random, n: int) -> List[Dict[str, Any]]:
    recs, prev = [], rnd.randint(0, 20) * 500
    for i in range(n):
        r = rnd.random()
        ts = None if r < 0.07 else (rnd.randint(-4, 60) * 500 + (1 if rnd.random() < 0.3 else 0)
                                    if r < 0.2 else prev + rnd.randint(-6, 8) * 500)
        prev = prev if ts is None else ts
        k = None if rnd.random() < 0.1 else rnd.choice(KEYS)
        v = None if rnd.random() < 0.1 else rnd.randint(-5, 20)
        recs.append(dict(seq=i, k=k, ts=ts, v=v))
    return recs


@st.composite
def scenarios(draw) -> Dict[str, Any]:
    recs = _records(draw(st.randoms(use_true_random=True)), draw(st.integers(4, 24)))
    batches = draw(micro_batches(recs))
    windows = SlidingWindows.of_time_difference(draw(st.sampled_from([0, 1000, 2500, 4000]))) \
        .grace(draw(st.sampled_from([0, 1000, 3000])))
    return dict(records=recs, batches=batches, windows=windows, final=draw(st.booleans()))


def check(spark, tmp_factory, sc: Dict[str, Any], partitions: int) -> None:
    pm = partition_map(spark, KEYS, "string", partitions)
    part = lambda k: pm.get(k, 0)
    expected = _model(sc["batches"], sc["windows"], sc["final"], part)
    got = _stream(spark, str(tmp_factory.mktemp("slagg")), _aggregate(sc["windows"], sc["final"]),
                  sc["batches"], partitions=partitions)
    detail = (f"windows={sc['windows']} final={sc['final']} partitions={partitions}\n"
              f"batches={[[(r['k'], r['ts'], r['v']) for r in b] for b in sc['batches']]}")
    assert [got.get(i, []) for i in range(len(sc["batches"]))] == expected, detail
    batch = _tuples(run_batch_df(spark, _aggregate(sc["windows"], sc["final"]), sc["records"],
                                 schema=SCHEMA, partitions=partitions))
    assert batch == _model([sc["records"]], sc["windows"], sc["final"], part)[0], detail


@pytest.mark.parametrize("partitions", [1, 3])
@PROPERTY_SETTINGS
@given(data=st.data())
def test_streaming_matches_model(spark, session_tmp, partitions, data) -> None:
    check(spark, session_tmp, data.draw(scenarios(), label="scenario"), partitions=partitions)
