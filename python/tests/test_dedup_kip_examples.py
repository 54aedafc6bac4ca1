"""KIP-655's worked examples, through batch DataFrames and streaming queries.

Each example is run for all three operations. An example's "dedup key" X becomes:
  by_key        key=X, id distinct per record (ignored)
  by_key_value  key="dev" (one key), id=X
  by_id         id=X, key distinct per record (deduplicate() ignores the key)
Batch: one record per row, in order (batch DataFrames process in DataFrame order).
Streaming: one record per micro-batch.
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Any, Dict, List, Sequence, Tuple

import pytest
from _streaming import (
    FileStream,
    dedup,
    file_name,
    partition_map,
    run_batch_df,
    run_stream,
    session_conf,
    with_ts_type,
    write_json_lines,
)
from pyspark.sql import functions as F

S = 1000
IV = 10 * S
T, D = True, False  # forwarded, dropped

TS_SCHEMA = "seq LONG, k STRING, id STRING, ts_ms LONG"

# name -> (interval ms, [(dedup key, t seconds)], KIP's expected forward flags)
EXAMPLES: Dict[str, Tuple[int, List[Tuple[str, int]], List[bool]]] = {
    # "Duplicate sequence": a1@t fwd, a2@t+8s dropped (store not updated), a3@t+11s fwd.
    "duplicate_sequence_in_order": (IV, [("a", 100), ("a", 108), ("a", 111)], [T, D, T]),
    # ... out of order: a1@t fwd, a2@t-8s dropped, a3@t-11s fwd (late event).
    "duplicate_sequence_out_of_order": (IV, [("a", 100), ("a", 92), ("a", 89)], [T, D, T]),
    # "Deduplication interval boundaries" are inclusive.
    "boundaries_in_order": (IV, [("a", 5), ("a", 15), ("a", 16)], [T, D, T]),
    "boundaries_out_of_order": (IV, [("a", 15), ("a", 5), ("a", 4)], [T, D, T]),
    "boundaries_interval_zero": (0, [("a", 5), ("a", 5), ("a", 6)], [T, D, T]),
    # "Late events by more than deduplicationInterval".
    "late_example_1": (IV, [("k", 20), ("k", 25), ("k", 11), ("k", 9)], [T, D, D, T]),
    "late_example_2": (IV, [("k1", 10), ("k2", 20), ("k1", 9)], [T, T, D]),
    "late_example_3": (IV, [("k1", 10), ("k2", 21), ("k1", 9)], [T, T, T]),
}

MODES = ("by_key", "by_key_value", "by_id")
TS_TYPES = ("long", "timestamp", "timestamp_ntz")

# Every accepted interval form, so the examples also exercise them end to end.
INTERVAL_FORMS = {
    IV: ("10 seconds", dt.timedelta(seconds=10), IV, "PT10S"),
    0: ("0 seconds", dt.timedelta(0), 0, "PT0S"),
}


def interval_arg(example: str, mode: str) -> Any:
    iv = EXAMPLES[example][0]
    forms = INTERVAL_FORMS[iv]
    return forms[(list(EXAMPLES).index(example) + MODES.index(mode)) % len(forms)]


def example_records(example: str, mode: str) -> List[Dict[str, Any]]:
    _, events, _ = EXAMPLES[example]
    out = []
    for i, (x, t) in enumerate(events):
        seq = i + 1
        if mode == "by_key":
            out.append(dict(seq=seq, k=x, id=f"id{seq}", ts_ms=t * S))
        elif mode == "by_key_value":
            out.append(dict(seq=seq, k="dev", id=x, ts_ms=t * S))
        else:
            out.append(dict(seq=seq, k=f"key{seq}", id=x, ts_ms=t * S))
    return out


def expected_seqs(example: str) -> List[int]:
    return [i + 1 for i, fwd in enumerate(EXAMPLES[example][2]) if fwd]


_premise_checked: Dict[Tuple[str, str], bool] = {}


def check_one_task(spark, example: str, mode: str) -> None:
    """Examples 2 and 3 need k1 and k2 in ONE Kafka task, i.e. one state partition."""
    labels = sorted({x for x, _ in EXAMPLES[example][1]})
    if len(labels) < 2 or mode == "by_key_value" or (example, mode) in _premise_checked:
        return
    n = int(spark.conf.get("spark.sql.shuffle.partitions"))
    parts = partition_map(spark, labels, "string", n)
    assert len(set(parts.values())) == 1, f"test premise: {labels} must share a state partition: {parts}"
    _premise_checked[(example, mode)] = True


def build(example: str, mode: str, ts_type: str = "long"):
    iv = interval_arg(example, mode)
    return lambda df: dedup(with_ts_type(df, ts_type), mode, iv)


# Every mode with epoch-millis timestamps; every timestamp type with by_key (the timestamp
# handling does not depend on the mode; the property test mixes modes and types).
BATCH_CASES = [(e, m, "long") for e in EXAMPLES for m in MODES] + [
    (e, "by_key", t) for e in EXAMPLES for t in TS_TYPES if t != "long"
]


@pytest.mark.parametrize("example,mode,ts_type", BATCH_CASES)
def test_kip_example_batch(spark, example: str, mode: str, ts_type: str) -> None:
    check_one_task(spark, example, mode)
    rows = run_batch_df(spark, build(example, mode, ts_type), example_records(example, mode), schema=TS_SCHEMA)
    assert sorted(r["seq"] for r in rows) == expected_seqs(example)
    # Output rows are the input rows, unchanged (plus the derived ts column).
    by_seq = {r["seq"]: r for r in example_records(example, mode)}
    for r in rows:
        src = by_seq[r["seq"]]
        assert (r["k"], r["id"], r["ts_ms"]) == (src["k"], src["id"], src["ts_ms"])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("example", list(EXAMPLES))
def test_kip_example_streaming_one_record_per_batch(spark, session_tmp, example: str, mode: str) -> None:
    check_one_task(spark, example, mode)
    recs = example_records(example, mode)
    res = run_stream(spark, str(session_tmp.mktemp("kip")), build(example, mode), [[r] for r in recs], schema=TS_SCHEMA)
    flags = EXAMPLES[example][2]
    assert res.batches == {i: ([i + 1] if fwd else []) for i, fwd in enumerate(flags)}


@pytest.mark.parametrize("ts_type", ("long", "int", "timestamp", "timestamp_ntz"))
def test_timestamp_types_agree_streaming(spark, session_tmp, ts_type: str) -> None:
    recs = example_records("late_example_1", "by_key")
    res = run_stream(
        spark,
        str(session_tmp.mktemp("tstype")),
        build("late_example_1", "by_key", ts_type),
        [[r] for r in recs],
        schema=TS_SCHEMA,
    )
    assert res.seqs == expected_seqs("late_example_1")


def test_int_epoch_millis_timestamps_batch(spark) -> None:
    for example in EXAMPLES:
        rows = run_batch_df(
            spark, build(example, "by_key", "int"), example_records(example, "by_key"), schema=TS_SCHEMA
        )
        assert sorted(r["seq"] for r in rows) == expected_seqs(example), example


def test_sub_second_timestamps_inclusive_boundary(spark) -> None:
    # Millisecond precision: 10s apart is a duplicate, 10.001s apart is not (TIMESTAMP input).
    recs = [
        dict(seq=1, k="a", id="x", ts_ms=5_000),
        dict(seq=2, k="a", id="x", ts_ms=15_000),
        dict(seq=3, k="b", id="x", ts_ms=5_000),
        dict(seq=4, k="b", id="x", ts_ms=15_001),
    ]
    rows = run_batch_df(spark, lambda df: dedup(with_ts_type(df, "timestamp"), "by_key", "10s"), recs, schema=TS_SCHEMA)
    assert sorted(r["seq"] for r in rows) == [1, 3, 4]


# --- null key / id / timestamp -------------------------------------------------------------

NULL_IDENTITY_CASES = {
    # by_key: null keys always forwarded; "a" is the control (second one dropped).
    "by_key": ([(None, "x", 0), (None, "x", 0), (None, "y", 1), ("a", "x", 0), ("a", "y", 1)], [1, 2, 3, 4]),
    # by_key_value: a null key OR a null id is always forwarded.
    "by_key_value": (
        [(None, "x", 0), (None, "x", 0), ("a", None, 0), ("a", None, 0), ("a", "x", 0), ("a", "x", 1)],
        [1, 2, 3, 4, 5],
    ),
    # deduplicate: null ids always forwarded (even with equal keys).
    "by_id": ([("a", None, 0), ("a", None, 0), ("b", None, 1), ("a", "x", 0), ("b", "x", 1)], [1, 2, 3, 4]),
}


def _recs(spec: Sequence[Tuple[Any, Any, Any]]) -> List[Dict[str, Any]]:
    return [dict(seq=i + 1, k=k, id=i_, ts=None if t is None else t * S) for i, (k, i_, t) in enumerate(spec)]


@pytest.mark.parametrize("runner", ["batch", "stream"])
@pytest.mark.parametrize("mode", MODES)
def test_null_identity_always_forwarded(spark, session_tmp, mode: str, runner: str) -> None:
    spec, expected = NULL_IDENTITY_CASES[mode]
    recs = _recs(spec)
    b = lambda df: dedup(df, mode, "10 seconds")  # noqa: E731
    if runner == "batch":
        got = sorted(r["seq"] for r in run_batch_df(spark, b, recs))
    else:
        got = run_stream(spark, str(session_tmp.mktemp("nullid")), b, [recs[:3], recs[3:]]).seqs
    assert got == expected


NULL_TS_IDENTITY = {"by_key": ("a", "z"), "by_key_value": ("a", "x"), "by_id": ("z", "a")}
NULL_TS_NULL_IDENTITY = {"by_key": (None, "x"), "by_key_value": ("a", None), "by_id": ("a", None)}


@pytest.mark.parametrize("runner", ["batch", "stream"])
@pytest.mark.parametrize("mode", MODES)
def test_null_timestamp_forwarded_not_stored(spark, session_tmp, mode: str, runner: str) -> None:
    k, i = NULL_TS_IDENTITY[mode]
    nk, ni = NULL_TS_NULL_IDENTITY[mode]
    spec = [
        (k, i, 10),  # 1 forwarded, stored
        (k, i, None),  # 2 null timestamp: forwarded, not a duplicate
        (k, i, None),  # 3 ... again (never stored)
        (k, i, 15),  # 4 dropped: the store still holds @10 (not replaced by a null ts)
        (k, i, 21),  # 5 forwarded: 11s after the stored @10
        (nk, ni, None),  # 6 null identity and null timestamp: forwarded
    ]
    recs = _recs(spec)
    b = lambda df: dedup(df, mode, "10 seconds")  # noqa: E731
    if runner == "batch":
        got = sorted(r["seq"] for r in run_batch_df(spark, b, recs))
    else:
        got = run_stream(spark, str(session_tmp.mktemp("nullts")), b, [[r] for r in recs]).seqs
    assert got == [1, 2, 3, 5, 6]


@pytest.mark.parametrize("runner", ["batch", "stream"])
@pytest.mark.parametrize("mode", MODES)
def test_null_identity_record_advances_stream_time(spark, session_tmp, mode: str, runner: str) -> None:
    # KIP Example 3 with k2 replaced by a null-identity record of the same task: stream time is
    # per task, so @21 still expires k1@10 and k1@9 is a late event with no stored duplicate.
    n = int(spark.conf.get("spark.sql.shuffle.partitions"))
    spec = {
        "by_key": [("a", "x", 10), (None, "y", 21), ("a", "x", 9)],
        "by_key_value": [("a", "x", 10), ("a", None, 21), ("a", "x", 9)],
        "by_id": [("p", "a", 10), ("q", None, 21), ("r", "a", 9)],
    }[mode]
    if mode != "by_key_value":  # the null must land in the partition of "a" (pmod(42, n))
        parts = partition_map(spark, ["a", None], "string", n)
        assert parts["a"] == parts[None], f"test premise: {parts}"
    recs = _recs(spec)
    b = lambda df: dedup(df, mode, "10 seconds")  # noqa: E731
    if runner == "batch":
        got = sorted(r["seq"] for r in run_batch_df(spark, b, recs))
        # control: without the @21 record, k1@9 is a duplicate of k1@10
        assert sorted(r["seq"] for r in run_batch_df(spark, b, [recs[0], recs[2]])) == [1]
    else:
        got = run_stream(spark, str(session_tmp.mktemp("nulladv")), b, [[r] for r in recs]).seqs
    assert got == [1, 2, 3]


# --- struct keys -------------------------------------------------------------------------

STRUCT_SPEC = [
    ("a", "1", 0),  # 1 forwarded
    ("a", "1", 5),  # 2 duplicate of 1
    ("a", "2", 5),  # 3 other struct value
    ("b", "1", 5),  # 4 other struct value
    (None, None, 6),  # 5 struct(null, null) is a non-null key
    (None, None, 7),  # 6 ... so this is its duplicate
    ("a", "1", 20),  # 7 20s after 1: forwarded
]

STRUCT_CASES = {
    "by_key_struct_column": (lambda df: dedup(df, "by_key", "10s", key=F.struct("k", "id")), [1, 3, 4, 5, 7]),
    "by_key_list_of_names": (lambda df: dedup(df, "by_key", "10s", key=["k", "id"]), [1, 3, 4, 5, 7]),
    "by_key_list_of_columns": (lambda df: dedup(df, "by_key", "10s", key=[F.col("k"), "id"]), [1, 3, 4, 5, 7]),
    "by_id_struct_id": (lambda df: dedup(df, "by_id", "10s", id=F.struct("k", "id")), [1, 3, 4, 5, 7]),
    # key struct<k> is never null, but a null id is always forwarded (5 and 6).
    "by_key_value_list_key": (lambda df: dedup(df, "by_key_value", "10s", key=["k"], id="id"), [1, 3, 4, 5, 6, 7]),
    # a NULL struct is a null key: always forwarded.
    "by_key_null_struct": (
        lambda df: dedup(df, "by_key", "10s", key=F.when(F.col("k").isNotNull(), F.struct("k", "id"))),
        [1, 3, 4, 5, 6, 7],
    ),
}


@pytest.mark.parametrize("runner", ["batch", "stream"])
@pytest.mark.parametrize("case", list(STRUCT_CASES))
def test_struct_keys(spark, session_tmp, case: str, runner: str) -> None:
    b, expected = STRUCT_CASES[case]
    recs = _recs(STRUCT_SPEC)
    if runner == "batch":
        got = sorted(r["seq"] for r in run_batch_df(spark, b, recs))
    else:
        got = run_stream(spark, str(session_tmp.mktemp("struct")), b, [recs[:2], recs[2:5], recs[5:]]).seqs
    assert got == expected


# --- floating point keys -------------------------------------------------------------------

FLOAT_KEYS = {
    "double": lambda: F.col("x"),
    "struct_of_double": lambda: F.struct("x"),
    "array_of_double": lambda: F.array("x"),
}


FLOAT_CASES = [(k, m, "batch") for k in FLOAT_KEYS for m in MODES] + [("double", m, "stream") for m in MODES]


@pytest.mark.parametrize("key_kind,mode,runner", FLOAT_CASES)
def test_floating_point_keys_normalised(spark, session_tmp, key_kind: str, mode: str, runner: str) -> None:
    # Keys compare like Spark grouping keys: -0.0 equals 0.0 and NaN equals NaN.
    schema = "seq LONG, x DOUBLE, ts LONG"
    recs = [
        dict(seq=1, x=0.0, ts=0),
        dict(seq=2, x=-0.0, ts=S),
        dict(seq=3, x=float("nan"), ts=0),
        dict(seq=4, x=float("nan"), ts=S),
        dict(seq=5, x=1.5, ts=0),
        dict(seq=6, x=1.5, ts=S),
    ]

    def b(df):
        key = FLOAT_KEYS[key_kind]()
        if mode == "by_key_value":
            return dedup(df, mode, "10s", key=key, id=F.lit("v"))
        return dedup(df, mode, "10s", key=key, id=key)

    if runner == "batch":
        got = sorted(r["seq"] for r in run_batch_df(spark, b, recs, schema=schema))
    else:
        got = run_stream(spark, str(session_tmp.mktemp("float")), b, [recs[:3], recs[3:]], schema=schema).seqs
    assert got == [1, 3, 5]


# --- processing order with several input partitions in one micro-batch -----------------------


def test_streaming_merges_input_partitions_by_head_timestamp(spark, session_tmp) -> None:
    # One micro-batch of two files, each its own input partition (files are packed largest
    # first, so the padded file is input partition 0). A Kafka task takes, at each step, the
    # partition whose next record has the smallest timestamp:
    #   p0: k@30        p1: k@10, k@21
    # -> k@10 forwarded, k@21 forwarded (11 s later; expires k@10), k@30 dropped (9 s after 21).
    # (Partition order would instead forward k@30 and the late k@10, and drop k@21.)
    root = str(session_tmp.mktemp("merge"))
    schema = "seq LONG, k STRING, ts LONG, pad STRING"
    build_ = lambda df: df.withColumn("input_partition", F.spark_partition_id()).kstate.deduplicate_by_key(  # noqa: E731
        "10 seconds", key="k", timestamp="ts"
    )
    big = 64 << 20
    with session_conf(spark, {"spark.sql.files.openCostInBytes": big, "spark.sql.files.maxPartitionBytes": big}):
        fs = FileStream(
            spark,
            os.path.join(root, "src"),
            os.path.join(root, "checkpoint"),
            build_,
            schema=schema,
            max_files_per_trigger=2,
        )
        write_json_lines(fs.src, file_name(0), [dict(seq=1, k="k", ts=30 * S, pad="x" * 500)])
        write_json_lines(fs.src, file_name(1), [dict(seq=2, k="k", ts=10 * S), dict(seq=3, k="k", ts=21 * S)])
        with fs:
            fs.process()
    assert list(fs.batches) == [0], "both files must be one micro-batch"
    rows = fs.batches[0]
    assert {r["seq"]: r["input_partition"] for r in rows} == {2: 1, 3: 1}
