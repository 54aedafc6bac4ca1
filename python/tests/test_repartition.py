"""Rescaling a stopped query's state: ``kstate.repartition_state`` (docs/operators.md,
"Rescaling state"), and what Spark's own ``StreamingCheckpointManager.repartition`` does to a
checkpoint holding kstate operators.

Semantics. A query runs its first micro-batches with N state partitions, stops, is repartitioned
to M, and continues on the same checkpoint; it is compared with a query that ran all of them with
N partitions (and, for the rule's own example, with the record-by-record model moved at the cut as
the documented rule says):

- input in event-time order (every record at least as new as every earlier one): no record is
  late under any partitioning, so each operator's output does not depend on the partition count,
  and the rescaled run must give exactly the uninterrupted run's output: micro-batch by micro-batch
  where the operator emits as records arrive (deduplication, distinct, window updates), and in
  total after a last micro-batch that moves every key's stream time past its windows and buffers
  where it emits on stream time (final window results, the join's grace buffer), and per key for
  tables;
- ``until_time_limit`` emits on its partition's stream time, so its output depends on how keys
  share partitions even in order: it is compared with the model run per partition, its buffers
  moved to the new partitions at the cut and every new partition's stream time the largest old
  one (the rule), incl. a buffer that spills to disk;
- the rule's example: a record on time in its old partition is late after the rescale because
  its new partition took the stream time of another.

Pairs (N, M): (2, 5), (5, 2) and (1, 3): up, down, and from one partition. (3, 3) is
``KSTATE_REPARTITION_NOT_NEEDED``; every refused call leaves the checkpoint's files as they were.
"""

from __future__ import annotations

import os
import random
import zlib
from collections import Counter
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import kstate
import pytest
from _streaming import FileStream, checkpoint_files, partition_map, shuffle_partitions
from kstate import BufferConfig, KStateError, SessionWindows, SlidingWindows, Suppressed, TimeWindows, VersionedTable
from models.time_limit_model import TimeLimitModel
from pyspark.sql import functions as F

S = 1000
KEYS = [f"k{i}" for i in range(12)]
PAIRS = [(2, 5), (5, 2), (1, 3)]
SCHEMA = "seq LONG, side STRING, k STRING, id STRING, v LONG, ts LONG"
FAR = 3600 * S  # a flush record's distance ahead: past every window, grace and time limit


def _in_order(seed: int, n: int, sides: Sequence[str] = ("s",), start: int = 0) -> List[Dict[str, Any]]:
    """``n`` records, event times strictly increasing (1 s apart), random keys, ids and values."""
    rnd = random.Random(seed)
    return [
        dict(
            seq=start + i,
            side=rnd.choice(list(sides)),
            k=rnd.choice(KEYS),
            id=f"i{rnd.randint(0, 5)}",
            v=rnd.randint(0, 9),
            ts=(start + i) * S,
        )
        for i in range(n)
    ]


def _split(records: List[Dict[str, Any]], sizes: Sequence[int]) -> List[List[Dict[str, Any]]]:
    out, i = [], 0
    for n in sizes:
        out.append(records[i : i + n])
        i += n
    return out


def _flush(after: int, sides: Sequence[str]) -> List[Dict[str, Any]]:
    """One record per key and side, far ahead: every key's partition passes its windows and buffers."""
    return [
        dict(seq=100000 + i, side=side, k=k, id="flush", v=0, ts=after + FAR + i)
        for i, (side, k) in enumerate((s, k) for s in sides for k in KEYS)
    ]


def _run(
    spark,
    workdir: str,
    build,
    batches,
    partitions: Tuple[int, ...],
    cut: Optional[int] = None,
    output_mode: str = "append",
    progress: Optional[Dict[int, Any]] = None,
) -> Dict[int, List[Any]]:
    """Runs ``batches`` (one micro-batch each): with ``partitions[0]`` state partitions, and when
    ``cut`` is set, stops after that many micro-batches, repartitions to ``partitions[1]`` and
    continues on the same checkpoint. Returns batch id -> rows (the repartition's micro-batch has
    none); ``progress`` gets each micro-batch's last progress."""
    src, ckpt = os.path.join(workdir, "src"), os.path.join(workdir, "ckpt")
    out: Dict[int, List[Any]] = {}
    with shuffle_partitions(spark, partitions[0]):
        fs = FileStream(spark, src, ckpt, build, schema=SCHEMA, output_mode=output_mode)
        with fs:
            for b in batches[:cut] if cut is not None else batches:
                fs.add_batch(b)
                if progress is not None:
                    progress[fs.query.lastProgress["batchId"]] = fs.query.lastProgress
        out.update(fs.batches)
    if cut is not None:
        batch = kstate.repartition_state(spark, ckpt, partitions[1])
        assert batch == max(out) + 1
        fs = FileStream(spark, src, ckpt, build, schema=SCHEMA, output_mode=output_mode)
        with fs:
            for b in batches[cut:]:
                fs.add_batch(b)
                if progress is not None:
                    progress[fs.query.lastProgress["batchId"]] = fs.query.lastProgress
        assert min(fs.batches) == batch + 1
        out.update(fs.batches)
    return out


def _tuples(rows: List[Any]) -> List[tuple]:
    return sorted((tuple(r) for r in rows), key=repr)


def _per_batch(out: Dict[int, List[Any]]) -> List[List[tuple]]:
    """Rows per input micro-batch, in order (the repartition's own micro-batch left out)."""
    return [_tuples(out[b]) for b in sorted(out)]


def _total(out: Dict[int, List[Any]]) -> Counter:
    return Counter(t for rows in out.values() for t in _tuples(rows))


# --- operators whose output does not depend on the partition count on ordered input ------------


def _dedup_chain(df):
    """The three KIP-655 operations, one after the other (three operators in one query)."""
    out = df.kstate.deduplicate("seq", "30 seconds", timestamp="ts", name="by-id")
    out = out.kstate.deduplicate_by_key_value("id", "20 seconds", key="k", timestamp="ts", name="by-kv")
    return out.kstate.deduplicate_by_key("8 seconds", key="k", timestamp="ts", name="by-k").select("seq")


def _windows(windows, final: bool = False):
    def build(df):
        out = df.kstate.windowed_by(windows, key="k", timestamp="ts").agg(
            F.count(F.lit(1)).alias("n"), F.sum("v").alias("s")
        )
        if final:
            out = out.kstate.suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
        return out.select("k", "window_start", "window_end", "n", "s")

    return build


def _distinct(windows):
    return lambda df: df.kstate.windowed_by(windows, key="k", timestamp="ts").distinct().select("seq")


def _stream_table_join(df):
    table = (
        df.filter(F.col("side") == "t")
        .select("k", F.col("v").alias("tv"), "ts")
        .kstate.to_table("k", "ts", versioned=VersionedTable("1 hour", grace="10 seconds"))
    )
    stream = df.filter(F.col("side") == "s").select("seq", "k", "ts")
    return stream.kstate.join(table, key="k", timestamp="ts", how="left", grace="3 seconds").select("seq", "tv")


def _table_aggregate(df):
    t = df.select("k", "v", "ts").kstate.to_table("k", "ts", versioned=VersionedTable("1 hour"))
    grouped = t.group_by((F.col("v") % 3).cast("string"), value="v")
    return grouped.sum("v").to_stream()


def _table_join(df):
    a = df.filter(F.col("side") == "s").select("k", F.col("v").alias("a"), "ts").kstate.to_table("k", "ts")
    # b versioned: the join reading both tables' sources stores it in its versioned store
    b = (
        df.filter(F.col("side") == "t")
        .select("k", F.col("v").alias("b"), "ts")
        .kstate.to_table("k", "ts", versioned=VersionedTable("1 hour"))
    )
    return a.join(b, how="outer").to_stream()


def _fk_join(df):
    left = (
        df.filter(F.col("side") == "s")
        .select("k", F.col("v").alias("lv"), "ts")
        .kstate.to_table("k", "ts", versioned=VersionedTable("1 hour"))
    )
    right = (
        df.filter(F.col("side") == "t")
        .select(F.concat(F.lit("c"), (F.col("v") % 4).cast("string")).alias("k"), F.col("v").alias("rv"), "ts")
        .kstate.to_table("k", "ts")
    )
    return left.join(right, foreign_key=F.concat(F.lit("c"), (F.col("lv") % 4).cast("string")), how="left").to_stream()


def _last_per_key(out: Dict[int, List[Any]], key: Callable[[Any], Any]) -> List[Dict[Any, tuple]]:
    """Per input micro-batch, each key's last output row: the table's content the batch left."""
    res = []
    for b in sorted(out):
        last: Dict[Any, tuple] = {}
        for r in out[b]:
            last[key(r)] = tuple(r)
        res.append(last)
    return res


# name -> (build, sides, output mode, compare(whole, rescaled), flush at the end)
CASES: Dict[str, Tuple[Any, Sequence[str], str, str, bool]] = {
    "dedup": (_dedup_chain, ("s",), "append", "per_batch", False),
    "time_windows_updates": (
        _windows(TimeWindows.of_size("10 seconds").grace("2 seconds")),
        ("s",),
        "update",
        "per_batch",
        False,
    ),
    "time_windows_final": (
        _windows(TimeWindows.of_size("10 seconds").grace("2 seconds"), final=True),
        ("s",),
        "append",
        "total",
        True,
    ),
    "session_windows": (
        _windows(SessionWindows.with_inactivity_gap("4 seconds").grace("2 seconds")),
        ("s",),
        "update",
        "per_batch",
        False,
    ),
    "sliding_windows": (
        _windows(SlidingWindows.of_time_difference("5 seconds").grace("2 seconds")),
        ("s",),
        "update",
        "per_batch",
        False,
    ),
    "distinct_tumbling": (_distinct(TimeWindows.of_size("10 seconds")), ("s",), "append", "per_batch", False),
    "distinct_sessions": (
        _distinct(SessionWindows.with_inactivity_gap("4 seconds")),
        ("s",),
        "append",
        "per_batch",
        False,
    ),
    "stream_table_join": (_stream_table_join, ("s", "t"), "append", "total", True),
    "table_aggregate": (_table_aggregate, ("s",), "update", "last_per_key", False),
    "table_join": (_table_join, ("s", "t"), "update", "last_per_key", False),
    "fk_join": (_fk_join, ("s", "t"), "update", "last_per_key", False),
}


def _case_batches(name: str) -> List[List[Dict[str, Any]]]:
    _, sides, _, _, flush = CASES[name]
    recs = _in_order(zlib.crc32(name.encode()), 60, sides)
    batches = _split(recs, [12, 14, 10, 12, 12])
    if flush:
        batches.append(_flush(recs[-1]["ts"], sides))
    return batches


def _compare(name: str, whole: Dict[int, List[Any]], rescaled: Dict[int, List[Any]]) -> None:
    how = CASES[name][3]
    assert len(whole) == len(_case_batches(name)) and len(rescaled) == len(whole)
    if how == "per_batch":
        assert _per_batch(rescaled) == _per_batch(whole)
    elif how == "total":
        assert _total(rescaled) == _total(whole)
    else:
        assert _last_per_key(rescaled, lambda r: r[0]) == _last_per_key(whole, lambda r: r[0])
    assert sum(len(rows) for rows in whole.values()) > 0


@pytest.fixture(scope="module")
def uninterrupted(spark, session_tmp) -> Dict[str, Dict[int, List[Any]]]:
    """Every case run with 2 state partitions throughout."""
    out = {}
    for name, (build, _, mode, _, _) in CASES.items():
        out[name] = _run(
            spark, str(session_tmp.mktemp(f"whole_{name}")), build, _case_batches(name), (2,), output_mode=mode
        )
    return out


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0]}to{p[1]}")
@pytest.mark.parametrize("name", list(CASES))
def test_rescaled_run_equals_the_uninterrupted_run(spark, tmp_path, uninterrupted, name, pair) -> None:
    build, _, mode, _, _ = CASES[name]
    got = _run(spark, str(tmp_path), build, _case_batches(name), pair, cut=2, output_mode=mode)
    _compare(name, uninterrupted[name], {i: rows for i, (_, rows) in enumerate(sorted(got.items()))})


# --- until_time_limit: compared with the model moved at the cut as the rule says ---------------


def _time_limit_model(
    batches, limit: int, parts: Tuple[int, ...], cut: int, spark, buffered: Optional[List[int]] = None
) -> List[List[int]]:
    """Emitted seqs per micro-batch: one model per partition; at the cut every buffered key moves
    to its new partition and every new partition's stream time is the largest old one; every
    partition evicts what is due at the end of each micro-batch (kstate's tasks do)."""
    before, after = (partition_map(spark, KEYS, "string", n) for n in parts)
    models: Dict[int, TimeLimitModel] = {}
    out = []
    for i, batch in enumerate(batches):
        if i == cut:
            moved: Dict[int, TimeLimitModel] = {p: TimeLimitModel(limit) for p in range(parts[1])}
            top = max(m.stream_time for m in models.values())
            for m in models.values():
                for k, entry in m.buffer.items():
                    moved[after[k]].buffer[k] = entry
            for m in moved.values():
                m.stream_time = top
            models = moved
        part = before if i < cut else after
        n = parts[0] if i < cut else parts[1]
        for p in range(n):
            models.setdefault(p, TimeLimitModel(limit))
        seqs: List[int] = []
        for r in batch:
            seqs += models[part[r["k"]]].process(r["k"], r["ts"], r["seq"])
        for m in models.values():  # the end of the micro-batch: what the stream time makes due
            while m.buffer and m.buffer[m._oldest()][0] <= m.stream_time - m.limit:
                seqs.append(m.buffer.pop(m._oldest())[1])
        out.append(sorted(seqs))
        if buffered is not None:
            buffered.append(sum(len(m.buffer) for m in models.values()))
    return out


@pytest.mark.parametrize("spill", [False, True], ids=["heap", "spill"])
@pytest.mark.parametrize("pair", [(2, 5), (5, 2)], ids=lambda p: f"{p[0]}to{p[1]}")
def test_until_time_limit_follows_the_rule_after_a_rescale(spark, tmp_path, pair, spill) -> None:
    buffer = BufferConfig.max_bytes(256).spill_to_disk_when_full() if spill else BufferConfig.unbounded()
    build = lambda df: df.kstate.suppress(
        Suppressed.until_time_limit("6 seconds", buffer), key="k", timestamp="ts"
    ).select("seq")  # noqa: E731
    rnd = random.Random(7)
    recs = [
        dict(seq=i, side="s", k=rnd.choice(KEYS), id="x", v=0, ts=i * S + rnd.randint(0, 2500)) for i in range(70)
    ]  # slight disorder: kept keys' timers differ between partitions
    batches = _split(recs, [15, 15, 10, 15, 15])
    # one old partition's stream time 20 s ahead of the others' at the cut: after it, every new
    # partition has that stream time and emits what it makes due (with the old partitions' own
    # stream times, or their smallest, it would not)
    ahead = next(k for k in KEYS if partition_map(spark, KEYS, "string", pair[0])[k] == 0)
    batches[1].append(dict(seq=999, side="s", k=ahead, id="x", v=0, ts=batches[1][-1]["ts"] + 20 * S))
    progress: Dict[int, Any] = {}
    got = _run(spark, str(tmp_path), build, batches, pair, cut=2, progress=progress)
    seqs = [sorted(r[0] for r in got[b]) for b in sorted(got)]
    buffered: List[int] = []
    assert seqs == _time_limit_model(batches, 6 * S, pair, 2, spark, buffered)
    assert sum(map(len, seqs)) > 20
    # the buffer's record count, kept in each partition's state, moved and recounted exactly
    counts = [progress[b]["stateOperators"][0]["customMetrics"]["bufferRecords"] for b in sorted(progress)]
    assert counts == buffered


# --- the rule's own example -------------------------------------------------------------------


def test_a_record_on_time_before_the_rescale_can_be_late_after_it(spark, tmp_path) -> None:
    """Keys a and b in different partitions of 2: a's has stream time 100 s, b's 50 s. After the
    rescale every partition has 100 s, so b@45 (on time before: within 10 s of b@50, a duplicate)
    is 55 s behind its partition's stream time: late, forwarded and not stored, as a second b@46."""
    pm = partition_map(spark, KEYS, "string", 2)
    a = next(k for k in KEYS if pm[k] == 0)
    b = next(k for k in KEYS if pm[k] == 1)
    first = [dict(seq=0, side="s", k=a, id="x", v=0, ts=100 * S), dict(seq=1, side="s", k=b, id="x", v=0, ts=50 * S)]
    second = [dict(seq=2, side="s", k=b, id="x", v=0, ts=45 * S), dict(seq=3, side="s", k=b, id="x", v=0, ts=46 * S)]
    build = lambda df: df.kstate.deduplicate_by_key("10 seconds", key="k", timestamp="ts").select("seq")  # noqa: E731
    whole = _run(spark, str(tmp_path / "whole"), build, [first, second], (2,))
    rescaled = _run(spark, str(tmp_path / "rescaled"), build, [first, second], (2, 3), cut=1)
    assert [r[0] for r in whole[1]] == []  # duplicates of b@50
    assert sorted(r[0] for r in rescaled[2]) == [2, 3]  # late: forwarded, not stored
    state = kstate.read_state(spark, str(tmp_path / "rescaled" / "ckpt"), "deduplicate_by_key-0")
    assert sorted((r.key.identity_0, r.value.ts) for r in state.collect()) == [(a, 100 * S)]


# --- refused calls write nothing ----------------------------------------------------------------


def _checkpoint(spark, workdir: str, partitions: int = 3, batches: int = 2) -> str:
    recs = _in_order(1, 20)
    _run(spark, workdir, _dedup_chain, _split(recs, [10, 10][:batches]), (partitions,))
    return os.path.join(workdir, "ckpt")


def test_refused_calls_name_the_problem_and_leave_the_checkpoint_as_it_was(spark, tmp_path) -> None:
    ckpt = _checkpoint(spark, str(tmp_path))
    before = checkpoint_files(ckpt)
    cases = [
        (lambda: kstate.repartition_state(spark, ckpt, 3), "KSTATE_REPARTITION_NOT_NEEDED"),
        (lambda: kstate.repartition_state(spark, ckpt, 0), "KSTATE_INVALID_REPARTITION"),
        (lambda: kstate.repartition_state(spark, ckpt, -2), "KSTATE_INVALID_REPARTITION"),
        (lambda: kstate.repartition_state(spark, ckpt, "4"), "KSTATE_INVALID_REPARTITION"),
        (lambda: kstate.repartition_state(spark, ckpt, True), "KSTATE_INVALID_REPARTITION"),
        (lambda: kstate.repartition_state(spark, "", 4), "KSTATE_INVALID_REPARTITION"),
        (lambda: kstate.repartition_state(spark, None, 4), "KSTATE_INVALID_REPARTITION"),
        (lambda: kstate.repartition_state(spark, str(tmp_path / "nowhere"), 4), "KSTATE_CHECKPOINT_NOT_FOUND"),
    ]
    for call, error_class in cases:
        with pytest.raises(KStateError) as ei:
            call()
        assert ei.value.error_class == error_class, str(ei.value)
        assert checkpoint_files(ckpt) == before, error_class


def test_a_micro_batch_planned_but_not_committed_is_refused(spark, tmp_path) -> None:
    ckpt = _checkpoint(spark, str(tmp_path))
    os.remove(os.path.join(ckpt, "commits", "1"))  # as if the query stopped inside micro-batch 1
    before = checkpoint_files(ckpt)
    with pytest.raises(KStateError) as ei:
        kstate.repartition_state(spark, ckpt, 4)
    assert ei.value.error_class == "KSTATE_REPARTITION_UNCOMMITTED_BATCH"
    assert "micro-batch 1" in ei.value.message
    assert checkpoint_files(ckpt) == before


def test_a_checkpoint_without_a_committed_micro_batch_is_refused(spark, tmp_path) -> None:
    ckpt = _checkpoint(spark, str(tmp_path), batches=1)
    os.remove(os.path.join(ckpt, "commits", "0"))
    with pytest.raises(KStateError) as ei:
        kstate.repartition_state(spark, ckpt, 4)
    assert ei.value.error_class == "KSTATE_INVALID_REPARTITION"
    assert "no committed micro-batch" in ei.value.message


# --- Spark's own repartition on a kstate checkpoint ----------------------------------------------


def _spark_manager(spark):
    return spark._streamingCheckpointManager


def test_sparks_repartition_from_python_is_refused_before_it_writes(spark, tmp_path) -> None:
    ckpt = _checkpoint(spark, str(tmp_path))
    before = checkpoint_files(ckpt)
    with pytest.raises(KStateError) as ei:
        _spark_manager(spark).repartition(ckpt, 4)
    assert ei.value.error_class == "KSTATE_REPARTITION_NEEDS_KSTATE"
    assert "kstate.repartition_state" in ei.value.message and "by-id" in ei.value.message
    assert checkpoint_files(ckpt) == before


def _sparks_failed_repartition(spark, ckpt: str, n: int) -> None:
    """Spark's repartition as a Scala program calls it (no kstate check in between): it writes its
    offset log entry, then fails on the state it cannot move."""
    from pyspark.errors import SparkRuntimeException

    with pytest.raises(SparkRuntimeException, match="STDS_FAILED_TO_READ_STATE_SCHEMA"):
        spark._jsparkSession.streamingCheckpointManager().repartition(ckpt, n, True)
    assert os.path.exists(os.path.join(ckpt, "offsets", "2")) and not os.path.exists(os.path.join(ckpt, "commits", "2"))


def test_what_sparks_repartition_leaves_is_undone_when_the_query_restarts(spark, tmp_path) -> None:
    """Before: the checkpoint could not restart (STREAMING_UNFINISHED_REPARTITION_DETECTED)."""
    recs = _in_order(3, 30)
    batches = _split(recs, [10, 10, 10])
    whole = _run(spark, str(tmp_path / "whole"), _dedup_chain, batches, (3,))
    work = str(tmp_path / "undone")
    _run(spark, work, _dedup_chain, batches[:2], (3,))
    ckpt = os.path.join(work, "ckpt")
    _sparks_failed_repartition(spark, ckpt, 4)
    fs = FileStream(spark, os.path.join(work, "src"), ckpt, _dedup_chain, schema=SCHEMA)
    with fs:
        fs.add_batch(batches[2])
    assert sorted(fs.batches) == [2]  # micro-batch 2 is an input batch again, on 3 partitions
    assert _tuples(fs.batches[2]) == _tuples(whole[2])
    assert {r.partition_id for r in kstate.read_state(spark, ckpt, "by-k").collect()} <= {0, 1, 2}


def test_kstate_finishes_what_sparks_repartition_started(spark, tmp_path) -> None:
    recs = _in_order(4, 30)
    batches = _split(recs, [10, 10, 10])
    whole = _run(spark, str(tmp_path / "whole"), _dedup_chain, batches, (3,))
    work = str(tmp_path / "finished")
    _run(spark, work, _dedup_chain, batches[:2], (3,))
    ckpt = os.path.join(work, "ckpt")
    _sparks_failed_repartition(spark, ckpt, 4)
    with pytest.raises(KStateError) as ei:  # it must be finished with the number it started with
        kstate.repartition_state(spark, ckpt, 5)
    assert ei.value.error_class == "KSTATE_REPARTITION_UNFINISHED"
    assert kstate.repartition_state(spark, ckpt, 4) == 2  # resumed: the same micro-batch
    fs = FileStream(spark, os.path.join(work, "src"), ckpt, _dedup_chain, schema=SCHEMA)
    with fs:
        fs.add_batch(batches[2])
    assert sorted(fs.batches) == [3]
    assert _tuples(fs.batches[3]) == _tuples(whole[2])
    assert {r.partition_id for r in kstate.read_state(spark, ckpt, "by-k").collect()} == {0, 1, 2, 3}
