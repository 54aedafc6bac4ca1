"""``kstate.read_table``: a versioned table as of a time, read from its query's checkpoint while
the query runs and after it stopped, compared with a Python reference (the table's versions per
state partition, Kafka's versioned key query rules)."""

from __future__ import annotations

import datetime as dt
import os
import random
from typing import Any, Dict, List, Optional, Tuple

import kstate
import pytest
from _streaming import FileStream, partition_map, shuffle_partitions
from kstate import KStateError, VersionedTable
from pyspark.sql import functions as F

SCHEMA = "k STRING, v STRING, n INT, ts LONG"
RETENTION, GRACE = 50, 20


def _build(name, versioned=None):
    versioned = versioned or VersionedTable(RETENTION, grace=GRACE)
    return lambda df: df.kstate.to_table(key="k", timestamp="ts", versioned=versioned, name=name).to_stream()


def _build_joined(name, versioned=None):
    """The table joined by a stream straight from its source: the join keeps the table's only
    materialization (docs/tables.md, "One materialization per joined table"); the stream is empty."""
    versioned = versioned or VersionedTable(RETENTION, grace=GRACE)

    def build(df):
        table = df.kstate.to_table(key="k", timestamp="ts", versioned=versioned, name=name)
        stream = df.filter(F.col("k") == "none").select("k", F.col("ts").alias("t"))
        return stream.kstate.join(table, key="k", timestamp="t", how="left")

    return build


def _build_table_joined(side: str):
    """The table as one side of a table–table join that reads both tables' sources: the join keeps
    the table's only materialization (docs/tables.md, "One materialization per table: the join
    reads its tables' sources"); the other table is empty."""

    def make(name, versioned=None):
        versioned = versioned or VersionedTable(RETENTION, grace=GRACE)

        def build(df):
            table = df.kstate.to_table(key="k", timestamp="ts", versioned=versioned, name=name)
            other = df.filter(F.col("k") == "none").select("k", F.col("v").alias("w"), "ts").kstate.to_table("k", "ts")
            joined = table.join(other, how="left") if side == "left" else other.join(table, how="outer")
            return joined.to_stream()

        build.operators = {"kstate_table_join"}  # one operator: the join stores both tables
        return build

    return make


class Reference:
    """The table's versions per state partition, fed the updates in the query's processing order
    (files in order, each file's rows in list order: the tests' queries run in task order)."""

    def __init__(self, partition_of, retention: int, grace: int) -> None:
        self.partition_of, self.retention, self.grace = partition_of, retention, grace
        self.stream_time: Dict[int, int] = {}
        self.versions: Dict[str, Dict[int, Optional[Tuple[Any, Any]]]] = {}

    def put(self, r: Dict[str, Any]) -> None:
        p = self.partition_of(r["k"])
        st = self.stream_time.get(p)
        if st is not None and r["ts"] < st - self.grace:
            return  # not stored: older than stream time - grace
        self.stream_time[p] = r["ts"] if st is None else max(st, r["ts"])
        value = None if r["v"] is None and r["n"] is None else (r["v"], r["n"])
        self.versions.setdefault(r["k"], {})[r["ts"]] = value

    def as_of(self, t: Optional[int]) -> List[Tuple]:
        out = []
        for k, vs in self.versions.items():
            if t is None:
                ts = max(vs)
            elif t < self.stream_time[self.partition_of(k)] - self.retention:
                ts = max(vs)  # past the history retention: only the latest version answers
                if ts > t:
                    continue
            else:
                older = [x for x in vs if x <= t]
                if not older:
                    continue
                ts = max(older)
            if vs[ts] is not None:
                out.append((k, vs[ts][0], vs[ts][1], ts))
        return sorted(out)


def _read(spark, ckpt, name, as_of=None):
    return sorted((r["k"], r["v"], r["n"], r["ts"]) for r in kstate.read_table(spark, ckpt, name, as_of).collect())


def _random_batches(seed: int, n_batches: int = 6, per_batch: int = 12) -> List[List[Dict[str, Any]]]:
    """Keys a..p, values or tombstones, mostly increasing times with out-of-order and late rows."""
    rnd = random.Random(seed)
    batches, now = [], 0
    for _ in range(n_batches):
        rows = []
        for _ in range(per_batch):
            now += rnd.randint(0, 6)
            ts = now - rnd.choice([0, 0, 0, 3, 10, 30])  # in order, out of order, late past grace
            tomb = rnd.random() < 0.2
            rows.append(
                {
                    "k": rnd.choice("abcdefghijklmnop"),
                    "v": None if tomb else f"v{rnd.randint(0, 99)}",
                    "n": None if tomb else rnd.randint(0, 9),
                    "ts": ts,
                }
            )
        batches.append(rows)
    return batches


AS_OFS = [None, -1, 0, 5, 17, 40, 75, 110, 150, 180, 10_000]


@pytest.mark.parametrize(
    "build",
    [_build, _build_joined, _build_table_joined("left"), _build_table_joined("right")],
    ids=["to_stream", "joined", "table_join_left", "table_join_right"],
)
def test_running_then_stopped_query_matches_the_reference_on_three_partitions(spark, tmp_path, build):
    batches = _random_batches(7)
    keys = sorted({r["k"] for b in batches for r in b})
    pm = partition_map(spark, keys, "string", 3)
    assert len(set(pm.values())) == 3, "the keys must spread over all three partitions"
    ref = Reference(pm.__getitem__, RETENTION, GRACE)
    ckpt = str(tmp_path / "ckpt")
    with shuffle_partitions(spark, 3):
        query = build("profiles")
        fs = FileStream(spark, str(tmp_path / "src"), ckpt, query, schema=SCHEMA)
        with fs:
            for i, b in enumerate(batches):
                fs.add_batch(b)
                for r in b:
                    ref.put(r)
                if i in (2, len(batches) - 1):  # read while the query runs
                    assert fs.query.isActive
                    for t in AS_OFS:
                        assert _read(spark, ckpt, "profiles", t) == ref.as_of(t), f"as of {t} after batch {i}"
            if hasattr(query, "operators"):
                assert {o["operatorName"] for o in fs.query.lastProgress["stateOperators"]} == query.operators
    # the query stopped: the same committed state
    for t in AS_OFS:
        assert _read(spark, ckpt, "profiles", t) == ref.as_of(t), f"as of {t}, stopped"
    # the test covers reads past the retention, between and before versions, and tombstones
    assert max(ref.stream_time.values()) - RETENTION > 40
    assert any(v is None for vs in ref.versions.values() for v in vs.values())


def test_as_of_before_between_and_after_versions_with_tombstones(spark, tmp_path):
    """One key per case, all in one micro-batch: a@10=x, a@20=y, a@30 deleted; b@15=p."""
    rows = [
        {"k": "a", "v": "x", "n": 1, "ts": 10},
        {"k": "a", "v": "y", "n": 2, "ts": 20},
        {"k": "b", "v": "p", "n": 3, "ts": 15},
        {"k": "a", "v": None, "n": None, "ts": 30},
    ]
    ckpt = str(tmp_path / "ckpt")
    with FileStream(spark, str(tmp_path / "src"), ckpt, _build("t", VersionedTable(1000)), schema=SCHEMA) as fs:
        fs.add_batch(rows)
    expect = {
        9: [],
        10: [("a", "x", 1, 10)],
        15: [("a", "x", 1, 10), ("b", "p", 3, 15)],
        19: [("a", "x", 1, 10), ("b", "p", 3, 15)],
        20: [("a", "y", 2, 20), ("b", "p", 3, 15)],
        29: [("a", "y", 2, 20), ("b", "p", 3, 15)],
        30: [("b", "p", 3, 15)],  # the tombstone hides a from 30 on
        None: [("b", "p", 3, 15)],
    }
    for t, rows_at in expect.items():
        assert _read(spark, ckpt, "t", t) == rows_at, f"as of {t}"


def test_past_the_history_retention_only_the_latest_version_answers(spark, tmp_path):
    """Retention 10, grace 0: a@0, a@4, b@30 (stream time 30, cutoff 20). As of 2 (past the
    retention) a's history is not served: its latest version a4@4 is after 2, so a has no row; as of
    5, a4 answers (it is the latest, and at or before 5). Kafka's rule, as the join's lookups."""
    rows = [
        {"k": "a", "v": "a0", "n": 0, "ts": 0},
        {"k": "a", "v": "a4", "n": 4, "ts": 4},
        {"k": "b", "v": "b30", "n": 30, "ts": 30},
    ]
    ckpt = str(tmp_path / "ckpt")
    with shuffle_partitions(spark, 1):
        with FileStream(
            spark, str(tmp_path / "src"), ckpt, _build("t", VersionedTable(10, grace=0)), schema=SCHEMA
        ) as fs:
            fs.add_batch(rows)
    assert _read(spark, ckpt, "t", 2) == []
    assert _read(spark, ckpt, "t", 5) == [("a", "a4", 4, 4)]
    assert _read(spark, ckpt, "t", 25) == [("a", "a4", 4, 4)]  # within the retention: a4 [4, ...)
    assert _read(spark, ckpt, "t", 30) == [("a", "a4", 4, 4), ("b", "b30", 30, 30)]


def test_timestamp_table_keeps_its_columns_and_takes_strings_and_datetimes(spark, tmp_path):
    def build(df):
        t = df.withColumn("at", F.timestamp_millis("ts")).drop("ts")
        return t.kstate.to_table(
            key="k", timestamp="at", versioned=VersionedTable("1 hour"), name="ts_table"
        ).to_stream()

    base = 1_700_000_000_000  # 2023-11-14T22:13:20Z
    rows = [{"k": "a", "v": "x", "n": 1, "ts": base}, {"k": "a", "v": "y", "n": 2, "ts": base + 60_000}]
    ckpt = str(tmp_path / "ckpt")
    with FileStream(spark, str(tmp_path / "src"), ckpt, build, schema=SCHEMA) as fs:
        fs.add_batch(rows)
    df = kstate.read_table(spark, ckpt, "ts_table")
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
        ("k", "string"),
        ("v", "string"),
        ("n", "int"),
        ("at", "timestamp"),
    ]

    def vs(as_of):
        return [r["v"] for r in kstate.read_table(spark, ckpt, "ts_table", as_of).collect()]

    utc = dt.timezone.utc
    assert vs(base + 59_999) == ["x"]
    assert vs(dt.datetime(2023, 11, 14, 22, 14, 19, 999_999, tzinfo=utc)) == ["x"]  # sub-ms dropped
    assert vs(dt.datetime(2023, 11, 14, 22, 14, 20, tzinfo=utc)) == ["y"]
    assert vs(dt.datetime(2023, 11, 14, 23, 14, 20, tzinfo=dt.timezone(dt.timedelta(hours=1)))) == ["y"]
    # strings and naive datetimes: the session time zone (UTC in the tests) unless they name one
    assert vs("2023-11-14 22:13:20") == ["x"]
    assert vs("2023-11-14 22:13:19.999") == []
    assert vs("2023-11-14T23:14:20+01:00") == ["y"]
    assert vs(dt.datetime(2023, 11, 14, 22, 14, 20)) == ["y"]
    row = kstate.read_table(spark, ckpt, "ts_table").collect()[0]
    assert row["at"].astimezone(utc) == dt.datetime(2023, 11, 14, 22, 14, 20, tzinfo=utc)


def test_named_errors(spark, tmp_path):
    ckpt = str(tmp_path / "ckpt")

    def build(df):
        versioned = df.kstate.to_table(key="k", timestamp="ts", versioned=VersionedTable(100), name="vt")
        plain = df.select("k", F.col("v").alias("w"), "ts").kstate.to_table(key="k", timestamp="ts", name="plain")
        return versioned.join(plain, how="left").to_stream()

    with shuffle_partitions(spark, 2):
        with FileStream(spark, str(tmp_path / "src"), ckpt, build, schema=SCHEMA) as fs:
            fs.add_batch([{"k": "a", "v": "x", "n": 1, "ts": 1}])
    assert _read(spark, ckpt, "vt") == [("a", "x", 1, 1)]

    def error_of(*args, **kw):
        with pytest.raises(KStateError) as e:
            kstate.read_table(spark, *args, **kw)
        return e.value

    missing = error_of(str(tmp_path / "no_such_checkpoint"), "vt")
    assert missing.error_class == "KSTATE_CHECKPOINT_NOT_FOUND"
    unknown = error_of(ckpt, "nope")
    assert unknown.error_class == "KSTATE_TABLE_NOT_FOUND"
    assert "vt (versioned_table)" in str(unknown) and "plain (table)" in str(unknown)
    assert error_of(ckpt, "plain").error_class == "KSTATE_TABLE_NOT_VERSIONED"
    # the join is a kstate operator of the checkpoint but not a table
    assert error_of(ckpt, "table_join-0").error_class == "KSTATE_TABLE_NOT_FOUND"
    assert error_of(ckpt, "vt", as_of="yesterday").error_class == "KSTATE_INVALID_STATE_READ"
    assert error_of(ckpt, "vt", as_of=1.5).error_class == "KSTATE_INVALID_STATE_READ"
    assert error_of(ckpt, "vt", as_of=True).error_class == "KSTATE_INVALID_STATE_READ"
    empty = str(tmp_path / "empty")
    os.makedirs(empty)
    assert error_of(empty, "vt").error_class == "KSTATE_STATE_NOT_FOUND"  # nothing committed yet
