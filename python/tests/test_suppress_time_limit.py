"""``suppress(Suppressed.until_time_limit(...))``: KIP-328's 30-second rate limit with 1000 keys,
rate limiting a kstate windowed aggregation, a full buffer (emit early, shut down then restart),
construction-time errors, and a property test against the independent reference model
(python/tests/models/time_limit_model.py) on random input split at random micro-batch
boundaries, on one and on three state partitions."""

from __future__ import annotations

import random
from typing import Any, Dict, List, Optional, Sequence

import kstate
import pytest
from _property import PROPERTY_SETTINGS, micro_batches
from _streaming import FileStream, partition_map, run_stream_batches, shuffle_partitions
from hypothesis import given
from hypothesis import strategies as st
from kstate import BufferConfig, Suppressed, TimeWindows
from models.time_limit_model import TimeLimitModel

SCHEMA = "seq LONG, k STRING, ts LONG, v LONG"
KEYS = ["a", "d", "g", "y"]  # one letter each: the buffer's tie order (key bytes) is the letter order


def _limited(limit: Any, buffer: Any):
    return lambda df: df.kstate.suppress(Suppressed.until_time_limit(limit, buffer), key="k", timestamp="ts")


def _stream(
    spark, workdir: str, build, batches: Sequence[Sequence[Dict[str, Any]]], partitions: Optional[int] = None
) -> Dict[int, List[Any]]:
    """Output seqs of each micro-batch (batch id -> sorted seqs) of a fresh query."""
    out = run_stream_batches(spark, workdir, build, batches, SCHEMA, partitions)
    return {b: sorted(r["seq"] for r in rows) for b, rows in out.items()}


def _model(batches, limit: int, max_records: Optional[int], part) -> List[List[int]]:
    models: Dict[int, TimeLimitModel] = {}
    out = []
    for b in batches:
        seqs: List[int] = []
        for r in b:
            m = models.setdefault(part(r["k"]), TimeLimitModel(limit, max_records))
            seqs += m.process(r["k"], r["ts"], r["seq"])
        out.append(sorted(seqs))
    return out


def test_kip_328_thirty_second_rate_limit_with_1000_keys(spark, tmp_path) -> None:
    # 1000 keys, each updated every 7 s for 100 s (keys staggered by 1 ms); limit 30 s
    rnd = random.Random(5)
    recs = sorted(
        (
            {"seq": 0, "k": f"key-{i:04d}", "ts": t * 1000 + i, "v": rnd.randint(0, 9)}
            for i in range(1000)
            for t in range(0, 100, 7)
        ),
        key=lambda r: r["ts"],
    )
    for s, r in enumerate(recs):
        r["seq"] = s
    batches = [recs[i : i + 3000] for i in range(0, len(recs), 3000)]
    build = _limited("30 seconds", BufferConfig.max_records(1000))
    got = _stream(spark, str(tmp_path), build, batches, partitions=2)
    pm = partition_map(spark, sorted({r["k"] for r in recs}), "string", 2)
    expected = _model(batches, 30_000, 1000, lambda k: pm[k])
    assert [got.get(i, []) for i in range(len(batches))] == expected
    emitted = [recs[s] for b in expected for s in b]
    per_key: Dict[str, List[int]] = {}
    for r in emitted:
        per_key.setdefault(r["k"], []).append(r["ts"])
    assert len(per_key) == 1000  # every key emitted...
    for ts in per_key.values():  # ...at most once per 30 s of its updates (the latest one)
        assert all(b - a >= 28_000 for a, b in zip(ts, ts[1:])), ts
    assert len(emitted) < len(recs) / 3


def test_rate_limits_a_windowed_aggregation_without_naming_columns(spark, tmp_path) -> None:
    build = lambda df: (
        df.kstate.windowed_by(TimeWindows.of_size("1 minute"), key="k", timestamp="ts")
        .count()
        .kstate.suppress(Suppressed.until_time_limit("10 seconds", BufferConfig.unbounded()))
    )
    batches = [
        [dict(seq=0, k="a", ts=1000, v=0), dict(seq=1, k="a", ts=5000, v=0)],
        [dict(seq=2, k="a", ts=12000, v=0)],
        [dict(seq=3, k="a", ts=30000, v=0)],
    ]
    with shuffle_partitions(spark, 1):
        fs = FileStream(
            spark, str(tmp_path / "src"), str(tmp_path / "ckpt"), build, schema=SCHEMA, output_mode="update"
        )
        with fs:
            for b in batches:
                fs.add_batch(b)
        got = {b: [(r["window_start"], r["count"], r["timestamp"]) for r in rows] for b, rows in fs.batches.items()}
    # window [0, 60 s) of "a": its first update (count 2, timestamp 5 s) starts the timer; the
    # update of batch 1 (count 3, 12 s) replaces it without restarting it (12 < 5 + 10); the
    # update of batch 2 (count 4, 30 s) replaces it and, 30 >= 5 + 10, is emitted
    assert got[0] == [] and got[1] == [] and got[2] == [(0, 4, 30000)]


def test_emit_early_when_full_emits_the_oldest(spark, tmp_path) -> None:
    batches = [
        [
            dict(seq=0, k="g", ts=1000, v=0),
            dict(seq=1, k="a", ts=2000, v=0),
            dict(seq=2, k="d", ts=2000, v=0),
            dict(seq=3, k="y", ts=3000, v=0),
        ]
    ]
    got = _stream(spark, str(tmp_path), _limited("1 hour", BufferConfig.max_records(2)), batches, partitions=1)
    # full at "d": the oldest, "g" (1 s), goes; at "y": the oldest of a/d (both 2 s) by key, "a"
    assert got[0] == [0, 1]


def test_shut_down_when_full_then_restart_with_a_larger_buffer(spark, tmp_path) -> None:
    src, ckpt = str(tmp_path / "src"), str(tmp_path / "ckpt")
    with shuffle_partitions(spark, 1):
        fs = FileStream(
            spark,
            src,
            ckpt,
            _limited("1 minute", BufferConfig.max_records(2).shut_down_when_full()),
            schema=SCHEMA,
            output_mode="update",
        ).start()
        fs.add_batch([dict(seq=0, k="a", ts=1000, v=0), dict(seq=1, k="d", ts=2000, v=0)])
        fs.add_file([dict(seq=2, k="g", ts=3000, v=0)])
        with pytest.raises(Exception) as e:
            fs.process()
        fs.stop()
        assert "KSTATE_BUFFER_FULL" in str(e.value) and "max_records=2" in str(e.value)
        fs = FileStream(
            spark,
            src,
            ckpt,
            _limited("1 minute", BufferConfig.max_records(3).shut_down_when_full()),
            schema=SCHEMA,
            output_mode="update",
        ).start()
        fs.process()
        fs.add_batch([dict(seq=3, k="a", ts=90_000, v=0)])
        seqs = fs.seqs()
        fs.stop()
    # nothing lost: d (seq 1) and g (seq 2, the batch that failed) are emitted; "a" was still
    # buffered since 1 s, so its update at 90 s replaced seq 0 and is emitted at once (timer not
    # restarted)
    assert seqs == [1, 2, 3]


def test_bad_arguments_fail_at_construction(spark, tmp_path) -> None:
    batch = spark.createDataFrame([("a", 1)], "k string, ts long")
    with pytest.raises(kstate.KStateError) as e:
        batch.kstate.suppress(Suppressed.until_time_limit("1s", BufferConfig.unbounded()), key="k", timestamp="ts")
    assert e.value.error_class == "KSTATE_UNSUPPORTED_SUPPRESS"
    stream = spark.readStream.schema(SCHEMA).json(str(tmp_path))
    with pytest.raises(kstate.KStateError) as e:
        stream.kstate.suppress(Suppressed.until_time_limit("1s", BufferConfig.unbounded()))
    assert e.value.error_class == "KSTATE_MISSING_COLUMN"
    with pytest.raises(kstate.KStateError) as e:
        stream.kstate.suppress(Suppressed.until_time_limit("1s", BufferConfig.unbounded()), key="nope", timestamp="ts")
    assert e.value.error_class == "KSTATE_MISSING_COLUMN"
    with pytest.raises(kstate.KStateError) as e:
        Suppressed.until_time_limit("-1s", BufferConfig.unbounded())
    assert e.value.error_class == "KSTATE_INVALID_DURATION"


# --- property ---------------------------------------------------------------------------------


def _records(rnd: random.Random, n: int) -> List[Dict[str, Any]]:
    recs, prev = [], rnd.randint(0, 20) * 500
    for i in range(n):
        r = rnd.random()
        ts = None if r < 0.07 else (rnd.randint(-10, 60) * 500 if r < 0.2 else prev + rnd.randint(-6, 10) * 500)
        prev = prev if ts is None else ts
        recs.append(dict(seq=i, k=None if rnd.random() < 0.1 else rnd.choice(KEYS), ts=ts, v=i))
    return recs


@st.composite
def scenarios(draw) -> Dict[str, Any]:
    recs = _records(draw(st.randoms(use_true_random=True)), draw(st.integers(4, 24)))
    batches = draw(micro_batches(recs))
    return dict(
        records=recs,
        batches=batches,
        limit=draw(st.sampled_from([2000, 0, 500, 5000])),
        max_records=draw(st.sampled_from([None, 1, 2, 3])),
    )


def check(spark, tmp_factory, sc: Dict[str, Any], partitions: int) -> None:
    pm = partition_map(spark, KEYS, "string", partitions)
    expected = _model(sc["batches"], sc["limit"], sc["max_records"], lambda k: pm.get(k, 0))
    buffer = BufferConfig.unbounded() if sc["max_records"] is None else BufferConfig.max_records(sc["max_records"])
    got = _stream(spark, str(tmp_factory.mktemp("tl")), _limited(sc["limit"], buffer), sc["batches"], partitions)
    detail = (
        f"limit={sc['limit']} max_records={sc['max_records']} partitions={partitions}\n"
        f"batches={[[(r['seq'], r['k'], r['ts']) for r in b] for b in sc['batches']]}"
    )
    assert [got.get(i, []) for i in range(len(sc["batches"]))] == expected, detail


@pytest.mark.parametrize("partitions", [1, 3])
@PROPERTY_SETTINGS
@given(data=st.data())
def test_streaming_matches_model(spark, session_tmp, partitions, data) -> None:
    check(spark, session_tmp, data.draw(scenarios(), label="scenario"), partitions=partitions)


def test_buffer_metrics_report_the_peak_and_where_the_buffer_lives(spark, tmp_path) -> None:
    # five keys buffered, then a record 1 hour later evicts them: the peak is 6 rows, 1 at the end
    batch = [dict(seq=i, k=k, ts=1000 * i, v=0) for i, k in enumerate(["a", "d", "g", "y", "b"])] + [
        dict(seq=5, k="c", ts=4_000_000, v=0)
    ]
    with shuffle_partitions(spark, 1):
        for name, buffer in (
            ("heap", BufferConfig.unbounded()),
            ("spill", BufferConfig.max_bytes(64).spill_to_disk_when_full()),
        ):
            fs = FileStream(
                spark,
                str(tmp_path / f"src{name}"),
                str(tmp_path / f"ckpt{name}"),
                _limited("1 hour", buffer),
                schema=SCHEMA,
                output_mode="append",
            )
            with fs:
                fs.add_batch(batch)
                op = fs.query.lastProgress["stateOperators"][0]
            custom = op["customMetrics"]
            assert (custom["bufferRecordsMax"], custom["bufferRecords"], custom["resultsEmitted"]) == (6, 1, 5), name
            assert custom["bufferBytesMax"] > custom["bufferBytes"] > 0, name
            if name == "heap":  # the committed buffer stays on the heap
                assert custom["kstateStoreHeapBytes"] > 0 and custom["kstateStoreDbBytes"] == 0, custom
            else:  # a 64-byte bound: the store spilled its changes and keeps its state in RocksDB
                assert custom["kstateStoreSpills"] > 0 and custom["kstateStoreHeapBytes"] == 0, custom
                assert custom["kstateStoreDbBytes"] > 0, custom
