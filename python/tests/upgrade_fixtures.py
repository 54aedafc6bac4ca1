"""The upgrade fixtures (docs/upgrades.md): one small streaming query per kstate operator, run
for a couple of micro-batches on one Spark minor, its checkpoint and sink output committed as
test data that ``test_upgrades.py`` restarts on the other minor.

Generate (or regenerate, after a change of a persisted format) under each minor's venv, after
building that minor's jar (``make jar`` / ``make jar-spark42``)::

    PYTHONPATH=python .venv/bin/python python/tests/upgrade_fixtures.py              # Spark 4.3
    PYTHONPATH=python .venv-spark42/bin/python python/tests/upgrade_fixtures.py      # Spark 4.2

which writes ``python/tests/fixtures/checkpoints/spark-<minor>/<pipeline>/`` (``--out DIR`` for
another parent directory, ``--only NAME`` for some pipelines).

Layout of one fixture, ``spark-<minor>/<pipeline>/``::

    input/part-00000<i>.json   the micro-batches' input, one JSON-lines file per micro-batch
    checkpoint/                 the query's checkpoint (offsets, commits, sources, state, ...)
    output/                     the query's file sink (JSON files and its _spark_metadata log)

The query reads ``input/`` with Spark's file source (one file per micro-batch) and writes
``output/`` with Spark's JSON file sink, in append mode. Both record absolute paths in the
checkpoint: the file source the input files it has read (``checkpoint/sources/0/<batch>``), the
file sink the files each batch wrote (``output/_spark_metadata/<batch>``). The generator replaces
the run's absolute root directory in those logs by :data:`ROOT_TOKEN`; :func:`install` copies a
fixture to a new directory and writes that directory in its place, so the restarted query sees
its input files as already read and its sink as already holding the first micro-batches. Hadoop's
``.crc`` checksum files are left out (Hadoop reads a file without one; a rewritten log would not
match its old checksum). No other file of a checkpoint holds a path (the generator checks).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
if os.path.dirname(HERE) not in sys.path:
    sys.path.insert(0, os.path.dirname(HERE))  # the kstate package (python/)

from pyspark.sql import DataFrame, SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

FIXTURES = os.path.join(HERE, "fixtures", "checkpoints")
ROOT_TOKEN = "@KSTATE_FIXTURE_ROOT@"
SCHEMA = "seq LONG, side STRING, k STRING, id STRING, v LONG, ts LONG"
FIXTURE_BATCHES = 2  # micro-batches in a fixture
BATCHES = 4  # micro-batches in all: the restart on the other minor runs the last two
PER_BATCH = 8
KEYS = ["a", "d", "g", "y"]
ORDERS, CUSTOMERS = ["o1", "o2", "o3", "o4", "o5"], ["c0", "c1", "c2"]


class Pipeline(NamedTuple):
    build: Callable[[DataFrame], DataFrame]
    sides: Sequence[str]  # the input's sides (a side is one input of a two-input operator)
    tables: Sequence[str] = ()  # its versioned tables (names), for kstate.read_table
    snapshot: bool = False  # the fixture holds a snapshot of its last version (besides changelogs)
    # session settings of a run on a new checkpoint (the fixture's, the uninterrupted run's); a
    # restart runs with the defaults, so the checkpoint decides what depends on its layout
    conf: Optional[Dict[str, str]] = None


def _spilling():
    from kstate import BufferConfig

    # 256 bytes: a micro-batch's eight records pass it, so the buffer's store spills to disk
    return BufferConfig.max_bytes(256).spill_to_disk_when_full()


def _dedup(mode: str):
    def build(df):
        if mode == "by_key":
            return df.kstate.deduplicate_by_key("6 seconds", key="k", timestamp="ts", name="dedup")
        if mode == "by_key_value":
            return df.kstate.deduplicate_by_key_value("id", "6 seconds", key="k", timestamp="ts", name="dedup")
        return df.kstate.deduplicate("id", "3 seconds", timestamp="ts", name="dedup")

    return build


def _windowed(windows: Any):
    def build(df):
        from kstate import BufferConfig, Suppressed

        return (
            df.kstate.windowed_by(windows, key="k", timestamp="ts")
            .agg(F.count(F.lit(1)).alias("n"), F.sum("v").alias("s"), F.max("v").alias("m"), name="agg")
            .kstate.suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
        )

    return build


def _distinct(df):
    from kstate import TimeWindows

    return df.kstate.windowed_by(TimeWindows.of_size("5 seconds").grace("1 second"), key="k", timestamp="ts").distinct(
        name="distinct"
    )


def _time_limit(buffer: Callable[[], Any]):
    def build(df):
        from kstate import Suppressed

        return df.kstate.suppress(
            Suppressed.until_time_limit("5 seconds", buffer()), key="k", timestamp="ts", name="limit"
        )

    return build


def _unbounded():
    from kstate import BufferConfig

    return BufferConfig.unbounded()


def _versioned():
    from kstate import VersionedTable

    return VersionedTable("20 seconds", grace="5 seconds")


def _table(df, side: str, value: str, versioned: bool, name: str):
    return (
        df.filter(F.col("side") == side)
        .select("k", F.col("v").alias(value), "ts")
        .kstate.to_table("k", "ts", versioned=_versioned() if versioned else None, name=name)
    )


def _to_table(versioned: bool):
    return lambda df: _table(df, "t", "v", versioned, "table").to_stream()


def _table_join(df):
    return (
        _table(df, "A", "a", False, "left")
        .join(_table(df, "B", "b", True, "right"), how="outer", name="join")
        .to_stream()
    )


def _fk_join(df):
    left = _table(df, "L", "lv", False, "orders")
    right = _table(df, "R", "rv", True, "customers")
    fk = F.when(F.col("lv") % 4 == 3, F.lit(None)).otherwise(F.concat(F.lit("c"), (F.col("lv") % 3).cast("string")))
    return left.join(right, foreign_key=fk, how="left", name="fk_join").to_stream()


def _table_aggregate(df):
    t = _table(df, "t", "v", True, "table")
    return t.group_by(F.upper("k"), value="v").sum("v", name="sum").to_stream()


def _table_count(df):
    return _table(df, "t", "v", False, "table").group_by(F.col("v") % 3).count(name="count").to_stream()


def _stream_table_join(df):
    table = _table(df, "t", "tv", True, "table")
    stream = df.filter(F.col("side") == "s").select("seq", "k", "ts")
    return stream.kstate.join(table, key="k", timestamp="ts", how="left", grace="3 seconds", name="join")


def _pipelines() -> Dict[str, Pipeline]:
    from kstate import SessionWindows, SlidingWindows, TimeWindows

    return {
        "deduplicate_by_key": Pipeline(_dedup("by_key"), ["e"]),
        "deduplicate_by_key_value": Pipeline(_dedup("by_key_value"), ["e"]),
        "deduplicate": Pipeline(_dedup("by_id"), ["e"], snapshot=True),
        "windowed_distinct": Pipeline(_distinct, ["e"]),
        "time_windows_until_window_closes": Pipeline(
            _windowed(TimeWindows.of_size("5 seconds").advance_by("2500ms").grace("2 seconds")), ["e"]
        ),
        "session_windows_until_window_closes": Pipeline(
            _windowed(SessionWindows.with_inactivity_gap("2 seconds").grace("1 second")), ["e"], snapshot=True
        ),
        "sliding_windows_until_window_closes": Pipeline(
            _windowed(SlidingWindows.of_time_difference("3 seconds").grace("2 seconds")), ["e"]
        ),
        "until_time_limit": Pipeline(_time_limit(_unbounded), ["e"]),
        "until_time_limit_spilling": Pipeline(_time_limit(_spilling), ["e"], snapshot=True),
        "to_table": Pipeline(_to_table(False), ["t"]),
        "to_table_versioned": Pipeline(_to_table(True), ["t"], tables=["table"], snapshot=True),
        # three operators (each table its own source), as kstate wrote it before the join read its
        # tables' sources; restarted with the default setting, it keeps that layout
        "table_table_join": Pipeline(
            _table_join, ["A", "B"], tables=["right"], conf={"spark.kstate.tableJoin.readsSources": "false"}
        ),
        # one operator: the join reads both tables' sources (the default since)
        "table_table_join_reading_sources": Pipeline(_table_join, ["A", "B"], tables=["right"]),
        "foreign_key_join": Pipeline(_fk_join, ["L", "R"], tables=["customers"], snapshot=True),
        "table_aggregate_sum": Pipeline(_table_aggregate, ["t"], tables=["table"]),
        "table_aggregate_count": Pipeline(_table_count, ["t"]),
        "stream_table_join": Pipeline(_stream_table_join, ["s", "t"], tables=["table"]),
    }


PIPELINES = _pipelines()
NAMES = sorted(PIPELINES)


def batches(name: str) -> List[List[Dict[str, Any]]]:
    """The pipeline's input: BATCHES micro-batches of PER_BATCH records, from a seed of its own.
    Event time rises by about 4 s a micro-batch with disorder of up to 3 s each way, so windows,
    deduplication intervals, time limits and grace periods span the micro-batch boundaries (the
    state a fixture hands over decides the later results); about one table update in eight is a
    tombstone."""
    rnd = random.Random(sum(map(ord, name)))
    sides = PIPELINES[name].sides
    out, seq = [], 0
    for b in range(BATCHES):
        recs = []
        for _ in range(PER_BATCH):
            side = rnd.choice(list(sides))
            keys = ORDERS if side == "L" else CUSTOMERS if side == "R" else KEYS
            tombstone = side not in ("e", "s") and rnd.random() < 0.125
            recs.append(
                dict(
                    seq=seq,
                    side=side,
                    k=rnd.choice(keys),
                    id=rnd.choice("xyz"),
                    v=None if tombstone else rnd.randint(0, 9),
                    ts=max(0, b * 4000 + rnd.randint(-3000, 3000)),
                )
            )
            seq += 1
        out.append(recs)
    return out


# --- running a pipeline ---------------------------------------------------------------------


def paths(root: str) -> Dict[str, str]:
    return {d: os.path.join(root, d) for d in ("input", "checkpoint", "output")}


def start(spark: SparkSession, name: str, root: str, conf: Optional[Dict[str, str]] = None):
    """Starts the pipeline's query on ``root``'s input, checkpoint and output (new or existing),
    with session settings ``conf`` besides the tests' processing order."""
    from _streaming import STREAM_ORDER, session_conf

    p = paths(root)
    os.makedirs(p["input"], exist_ok=True)
    with session_conf(spark, dict(STREAM_ORDER, **(conf or {}))):
        source = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(p["input"])
        return (
            PIPELINES[name]
            .build(source)
            .writeStream.format("json")
            .outputMode("append")
            .option("checkpointLocation", p["checkpoint"])
            .option("path", p["output"])
            .start()
        )


def run(
    spark: SparkSession,
    name: str,
    root: str,
    indexes: Sequence[int],
    before_stop: Callable[[], None] = lambda: None,
    conf: Optional[Dict[str, str]] = None,
) -> List[Dict[str, Any]]:
    """Runs micro-batches ``indexes`` of the pipeline (one input file each) on ``root``, from
    its checkpoint if it has one, calls ``before_stop`` and stops; returns the query's progress
    reports."""
    from _streaming import file_name, write_json_lines

    # Spark's file source skips a file older than the newest it has read minus maxFileAge (7
    # days), and forgets the files it has read that are older than the newest minus maxFileAge:
    # a forgotten file whose modification time is recent (a fixture's input, dated when the
    # repository was checked out) is read again as new. So a file added on a checkpoint is dated
    # just after the newest its source log records, not by this machine's clock, which may be
    # days after the one that wrote a fixture (or before it).
    floor = _newest_source_file(paths(root)["checkpoint"])
    if not os.path.isdir(os.path.join(paths(root)["checkpoint"], "commits")):
        conf = dict(PIPELINES[name].conf or {}, **(conf or {}))
    q = start(spark, name, root, conf)
    try:
        recs = batches(name)
        for n, i in enumerate(indexes):
            mtime = floor + 1 + n if floor else time.time()
            write_json_lines(paths(root)["input"], file_name(i), recs[i], mtime=mtime)
            q.processAllAvailable()
        before_stop()
        return [json.loads(p.json) if hasattr(p, "json") else p for p in q.recentProgress]
    finally:
        q.stop()


def _newest_source_file(checkpoint: str) -> float:
    """The newest modification time (seconds) of a file the checkpoint's file source has read, 0
    for none."""
    newest = 0
    log = os.path.join(checkpoint, "sources", "0")
    if os.path.isdir(log):
        for n in os.listdir(log):
            if n.split(".")[0].isdigit() and not n.endswith(".crc"):
                with open(os.path.join(log, n)) as f:
                    newest = max([newest] + [json.loads(x)["timestamp"] for x in f.read().splitlines()[1:]])
    return newest / 1000.0


def output_files(root: str) -> Dict[int, List[str]]:
    """batch id -> the files the file sink wrote for it, from its log (``output/_spark_metadata``)."""
    log = os.path.join(paths(root)["output"], "_spark_metadata")
    out = {}
    for n in os.listdir(log):
        if n.isdigit():
            with open(os.path.join(log, n)) as f:
                lines = f.read().splitlines()
            assert lines[0] == "v1", (n, lines[0])
            out[int(n)] = [json.loads(x)["path"] for x in lines[1:] if json.loads(x)["action"] == "add"]
    return out


def output_rows(spark: SparkSession, name: str, root: str) -> Dict[int, List[str]]:
    """batch id -> the rows the file sink holds for it (as sorted JSON, all columns, nulls too),
    read with the pipeline's output schema."""
    schema = PIPELINES[name].build(spark.readStream.schema(SCHEMA).json(paths(root)["input"])).schema
    out = {}
    for batch, files in output_files(root).items():
        rows = spark.read.schema(schema).json(files).collect() if files else []
        out[batch] = sorted(json.dumps(r.asDict(recursive=True), sort_keys=True) for r in rows)
    return out


def operators(checkpoint: str) -> List[str]:
    """The names of the checkpoint's kstate operators, from their recorded configurations."""
    names = []
    state = os.path.join(checkpoint, "state")
    for op in sorted(os.listdir(state)):
        record = os.path.join(state, op, "_kstate", "operator.properties")
        if os.path.isfile(record):
            with open(record) as f:
                names += [ln.split("=", 1)[1].strip() for ln in f if ln.startswith("name=")]
    return sorted(names)


def _table_entries(table: bytes) -> List[Any]:
    """The (key, value) pairs of a RocksDB table file's bytes, in key order, read by RocksDB's
    ``SstFileReader`` in the active Spark session's JVM (Spark ships RocksDB's Java library)."""
    from pyspark import SparkContext

    jvm = SparkContext._active_spark_context._jvm
    with tempfile.NamedTemporaryFile(suffix=".sst") as f:
        f.write(table)
        f.flush()
        jvm.org.rocksdb.RocksDB.loadLibrary()
        options = jvm.org.rocksdb.Options()
        reader = jvm.org.rocksdb.SstFileReader(options)
        out = []
        try:
            reader.open(f.name)
            it = reader.newIterator(jvm.org.rocksdb.ReadOptions())
            it.seekToFirst()
            while it.isValid():
                out.append((bytes(it.key()), bytes(it.value())))
                it.next()
            it.close()
        finally:
            reader.close()
            options.close()
        return out


def _read_state_file(path: str, visit: Callable[[str, Any], None]) -> None:
    """Feeds the records of a kstate state file (docs/state-store.md, "State file format") to
    ``visit(kind, args)`` in order: ``put (key, value)``, ``delete key``, ``family (cf, name)``,
    ``drop cf``. Reads formats 1 and 2, and 4, a snapshot whose entries are one RocksDB table file,
    read with RocksDB's own table reader in the running Spark's JVM (no checksum check: kstate
    verifies its files itself)."""
    import struct

    with open(path, "rb") as f:
        data = f.read()
    magic, fv = struct.unpack_from(">ii", data, 0)
    assert magic == 0x4B53544C and fv in (1, 2, 4), (path, magic, fv)
    pos = 4 + 4 + 1 + 8
    if fv in (2, 4):  # identity: operator id, store name (modified UTF-8), partition
        pos += 8
        (n,) = struct.unpack_from(">H", data, pos)
        pos += 2 + n + 4

    def blob() -> bytes:
        nonlocal pos
        (n,) = struct.unpack_from(">i", data, pos)
        pos += 4 + n
        return data[pos - n : pos]

    while True:
        tag = data[pos]
        pos += 1
        if tag == 0:
            return
        if tag == 1:
            k = blob()
            visit("put", (k, blob()))
        elif tag == 2:
            visit("delete", blob())
        elif tag == 3:
            (cf, n) = struct.unpack_from(">hH", data, pos)
            pos += 4 + n
            visit("family", (cf, data[pos - n : pos].decode()))
        elif tag == 4:
            (cf,) = struct.unpack_from(">h", data, pos)
            pos += 2
            visit("drop", cf)
        elif tag == 5:
            (entries, n) = struct.unpack_from(">qq", data, pos)
            pos += 16
            table = _table_entries(data[pos : pos + n])
            assert len(table) == entries, (path, len(table), entries)
            for kv in table:
                visit("put", kv)
            pos += n
        else:
            raise AssertionError(f"{path}: unknown record tag {tag}")


def store_contents(checkpoint: str, version: int) -> Dict[str, Dict[str, str]]:
    """Every state store of the checkpoint (by its directory under ``state/``) at ``version``, as
    its files hold it: the newest snapshot at or below the version, then the changelogs after it,
    replayed; entries as ``family name/key hex -> value hex``, over all column families (what
    ``kstate.read_state`` shows is the default family only)."""
    out = {}
    for d in store_dirs(checkpoint):
        names = os.listdir(d)
        snaps = [v for v in range(version + 1) if f"{v}.kstate.snapshot" in names]
        base = max(snaps) if snaps else 0
        files = ([f"{base}.kstate.snapshot"] if snaps else []) + [
            f"{v}.kstate.changelog" for v in range(base + 1, version + 1)
        ]
        families: Dict[int, str] = {0: "default"}  # Spark's default family is id 0, never declared
        entries: Dict[bytes, bytes] = {}

        def visit(kind: str, arg: Any, entries=entries, families=families) -> None:
            if kind == "put":
                entries[arg[0]] = arg[1]
            elif kind == "delete":
                entries.pop(arg, None)
            elif kind == "family":
                families[arg[0]] = arg[1]
            else:
                prefix = arg.to_bytes(2, "big", signed=True)
                for k in [k for k in entries if k[:2] == prefix]:
                    del entries[k]

        for f in files:
            _read_state_file(os.path.join(d, f), visit)
        out[os.path.relpath(d, os.path.join(checkpoint, "state"))] = {
            f"{families[int.from_bytes(k[:2], 'big', signed=True)]}/{k[2:].hex()}": v.hex() for k, v in entries.items()
        }
    return out


# --- fixtures -------------------------------------------------------------------------------

_SAFE_PATH = re.compile(r"^/[A-Za-z0-9_./-]+$")
_PATH_LOGS = (os.path.join("checkpoint", "sources"), os.path.join("output", "_spark_metadata"))


def _path_logs(root: str) -> List[str]:
    out = []
    for sub in _PATH_LOGS:
        d = os.path.join(root, sub)
        for dirpath, _, files in os.walk(d):
            out += [os.path.join(dirpath, f) for f in files if not f.endswith(".crc")]
    return out


def _copy_tree(src: str, dst: str) -> None:
    """``src`` to ``dst`` without Hadoop's checksum files and the writer's staging directory."""
    shutil.copytree(
        src, dst, ignore=lambda d, names: [n for n in names if n.endswith(".crc") or n.startswith("_staging_")]
    )


def save(root: str, dst: str) -> None:
    """Copies the run on ``root`` to fixture directory ``dst``, its absolute paths made
    :data:`ROOT_TOKEN`; fails if any other file of the copy still names ``root``."""
    assert _SAFE_PATH.match(root), f"the run's directory must be a plain path: {root}"
    if os.path.exists(dst):
        shutil.rmtree(dst)
    _copy_tree(root, dst)
    for f in _path_logs(dst):
        with open(f) as fh:
            text = fh.read()
        with open(f, "w") as fh:
            fh.write(text.replace(root, ROOT_TOKEN))
    for dirpath, _, files in os.walk(dst):
        for f in files:
            with open(os.path.join(dirpath, f), "rb") as fh:
                assert root.encode() not in fh.read(), f"{os.path.join(dirpath, f)} names the run's directory {root}"


def install(fixture: str, root: str) -> None:
    """Copies fixture directory ``fixture`` to ``root`` (which must not exist), with ``root`` in
    place of :data:`ROOT_TOKEN`: the checkpoint then resumes on ``root``'s input and output."""
    root = os.path.abspath(root)
    assert _SAFE_PATH.match(root), f"a fixture is installed in a plain path only: {root}"
    _copy_tree(fixture, root)
    found = 0
    for f in _path_logs(root):
        with open(f) as fh:
            text = fh.read()
        found += text.count(ROOT_TOKEN)
        with open(f, "w") as fh:
            fh.write(text.replace(ROOT_TOKEN, root))
    assert found > 0, f"no {ROOT_TOKEN} in the logs of {fixture}"
    os.makedirs(os.path.join(root, "input"), exist_ok=True)


SNAPSHOT_WAIT_SECONDS = 60


def store_dirs(checkpoint: str) -> List[str]:
    """Every state store directory of a checkpoint's kstate operators (those holding state files)."""
    out = []
    for dirpath, _, files in os.walk(os.path.join(checkpoint, "state")):
        if any(f.endswith(".kstate.changelog") for f in files):
            out.append(dirpath)
    return sorted(out)


def _await_snapshots(root: str, version: int) -> None:
    """Waits until Spark's maintenance thread wrote ``<version>.kstate.snapshot`` in every store."""

    deadline = time.monotonic() + SNAPSHOT_WAIT_SECONDS
    dirs = store_dirs(paths(root)["checkpoint"])
    assert dirs
    while not all(os.path.exists(os.path.join(d, f"{version}.kstate.snapshot")) for d in dirs):
        assert time.monotonic() < deadline, f"no snapshot of version {version} in all of {dirs}"
        time.sleep(0.2)


def spark_minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def generate(spark: SparkSession, out: str, names: Sequence[str]) -> str:
    import pyspark

    minor_dir = os.path.join(out, f"spark-{spark_minor(pyspark.__version__)}")
    os.makedirs(minor_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="kstate-fixtures-")
    try:
        for name in names:
            root = os.path.join(work, name)
            if PIPELINES[name].snapshot:
                run(
                    spark,
                    name,
                    root,
                    range(FIXTURE_BATCHES),
                    lambda root=root: _await_snapshots(root, FIXTURE_BATCHES),
                    {"spark.sql.streaming.stateStore.minDeltasForSnapshot": str(FIXTURE_BATCHES)},
                )
            else:
                run(spark, name, root, range(FIXTURE_BATCHES))
            rows = output_rows(spark, name, root)
            assert sorted(rows) == list(range(FIXTURE_BATCHES)), (name, sorted(rows))
            save(root, os.path.join(minor_dir, name))
            print(
                f"{name}: {sum(len(r) for r in rows.values())} output rows, operators {operators(root + '/checkpoint')}",
                flush=True,
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    with open(os.path.join(minor_dir, "README.md"), "w") as f:
        f.write(
            f"Upgrade fixtures written by kstate on pyspark {pyspark.__version__} with "
            f"`python/tests/upgrade_fixtures.py` ({FIXTURE_BATCHES} micro-batches each; "
            "docs/upgrades.md). Regenerate, do not edit.\n"
        )
    return minor_dir


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=FIXTURES, help="parent directory of spark-<minor>/ (default: %(default)s)")
    ap.add_argument("--only", action="append", choices=NAMES, help="only this pipeline (repeatable)")
    args = ap.parse_args(argv)
    from _streaming import session_builder

    # Spark's maintenance thread writes the snapshots of the pipelines that have them
    # (minDeltasForSnapshot, per query) within a fraction of a second.
    spark = session_builder().config("spark.sql.streaming.stateStore.maintenanceInterval", "250ms").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    try:
        print(f"wrote {generate(spark, args.out, args.only or NAMES)}")
    finally:
        # Spark's maintenance task would otherwise run once more on a stopped SparkEnv (a warning)
        state = spark.sparkContext._jvm.org.apache.spark.sql.execution.streaming.state
        getattr(getattr(state, "StateStore$"), "MODULE$").stop()
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
