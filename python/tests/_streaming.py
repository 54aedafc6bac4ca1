"""Test driver: a streaming query over a directory of JSON-lines files, ONE file per micro-batch.

Each file is written atomically (temp name outside the watched directory, then ``os.rename``)
and read with ``maxFilesPerTrigger=1``; a small file is one input partition, so within a
micro-batch every state partition sees its records in file order. Calling
``processAllAvailable()`` after each file makes each file exactly one micro-batch.

Also: the tests' SparkSession configuration (shared with the kill -9 driver process), the three
kstate operations by mode name, temporary session settings (shuffle partitions), and the
reference-model oracle (one :class:`DedupModel` per state partition).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Union

from kstate.testing import session_conf  # noqa: F401 (the tests import it from here)
from models.dedup_model import DedupModel, Rec
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

# Records are dicts: seq (output identity), k (key), id (dedup id), ts (epoch millis or None).
SCHEMA = "seq LONG, k STRING, id STRING, ts LONG"
MODES = ("by_key", "by_key_value", "by_id")  # the model's names

# Spark's setting for the class that writes checkpoint files, the class the tests use on the local
# disk (session_builder), and Spark's default (FileContext; falls back to FileSystem where a
# store has no FileContext implementation).
CHECKPOINT_FILE_MANAGER = "spark.sql.streaming.checkpointFileManagerClass"
_CHECKPOINTING = "org.apache.spark.sql.execution.streaming.checkpointing"
LOCAL_DISK_FILE_MANAGER = f"{_CHECKPOINTING}.FileSystemBasedCheckpointFileManager"
SPARK_DEFAULT_FILE_MANAGER = f"{_CHECKPOINTING}.FileContextBasedCheckpointFileManager"

# The kstate jar is rebuilt by `make jar` now and then (rm + cp): wait for it to be back.
JAR_WAIT_SECONDS = 180


def wait_for_jar() -> str:
    import kstate
    from kstate import KStateError

    deadline = time.monotonic() + JAR_WAIT_SECONDS
    while True:
        try:
            path = kstate.jar_path()
            if os.path.getsize(path) > 0:
                return path
        except (KStateError, OSError):
            if time.monotonic() > deadline:
                raise
        time.sleep(5)


def session_builder(master: str = "local[2]") -> Any:
    """The tests' SparkSession configuration (the pytest session and the kill -9 driver)."""
    import kstate

    wait_for_jar()
    builder = SparkSession.builder.master(master).appName("kstate-pytest")
    # Spark's Kafka connector (test_kafka_end_to_end.py): its jars when the build has listed them
    # (`make kafka-classpath`; without them only the Kafka tests fail, saying so).
    import checkpoint_stores
    from kafka_broker import CLASSPATH_FILE, connector_jars

    jars = []
    if os.path.isfile(CLASSPATH_FILE):
        # Spark's Kafka sink caches its producers (10 minutes by default): closed 5 s after their
        # last use instead, so none keeps calling a test's broker after it stopped.
        jars += connector_jars()
        builder = builder.config("spark.kafka.producer.cache.timeout", "5s").config(
            "spark.kafka.producer.cache.evictorThreadRunInterval", "1s"
        )
    if os.path.isfile(checkpoint_stores.CLASSPATH_FILE):
        jars += checkpoint_stores.s3a_jars()  # s3a:// checkpoints (test_checkpoint_stores.py)
    if jars:
        builder = builder.config("spark.jars", ",".join(jars))
    # C1 only (-XX:TieredStopAtLevel=1), as for the Scala suites' JVMs (build.sbt): the tests run
    # many short queries on a 2-core machine, where C2's compiler threads take cores from the
    # tests. Measured on 2026-11-28 (5 modules, 176 tests, 2 workers, 2 rounds in both orders):
    # 215 and 199 s against 236 and 212 s with the default tiered compilation.
    builder = builder.config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1")
    # Checkpoints on the local disk through Hadoop's FileSystem API, not its FileContext API
    # (Spark's default). Without Hadoop's native library, every FileContext path resolution forks
    # a `readlink` process, and every file created forks a `chmod`: about 30 processes per
    # micro-batch of a stateless query. The FileSystem API still forks the `chmod`s but no
    # `readlink`. Measured on 2026-11-28: 20 micro-batches of a stateless query took 1.9-2.5 s,
    # against 4.0-4.6 s with the default; four modules took 103-107 s against 139-146 s. Queries
    # whose subject is a remote store's checkpoint use Spark's default (test_checkpoint_stores.py),
    # and so do the Scala suites on the local disk (there it saved nothing measurable).
    builder = builder.config(CHECKPOINT_FILE_MANAGER, LOCAL_DISK_FILE_MANAGER)
    return (
        kstate.configure(builder)
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.streaming.stateStore.maintenanceInterval", "600s")
        # TIMESTAMP_NTZ tests derive wall-clock values from epoch millis: keep it UTC.
        .config("spark.sql.session.timeZone", "UTC")
    )


# The record-by-record reference models follow a Kafka task: one file per micro-batch is the
# tests' ordered log, processed in file order, so the tests' streaming queries run in task order.
# The default (auto: event-time order for files, listed order for static DataFrames) is tested on
# its own in test_processing_order.py; static DataFrames keep the default.
STREAM_ORDER = {"spark.kstate.processingOrder": "task"}


def finish_driver(spark: SparkSession, *queries: Any) -> int:
    """The end of a test driver process: each query processes everything available and stops
    (in the order given), then the session stops and the driver says it is done (exit code 0)."""
    for q in queries:
        q.processAllAvailable()
        q.stop()
    spark.stop()
    print("DRIVER DONE", flush=True)
    return 0


def kill9_when_paused(p: Any, marker: Union[str, Sequence[str]], timeout_s: float, log: Callable[[], str]) -> None:
    """Waits until driver process ``p`` (started in a process group of its own) has written
    ``marker`` (it paused; several markers: every one of them), then kills its process group with
    SIGKILL. ``log``: the driver's output, for the failure message when it exits or never pauses."""
    import signal

    markers = [marker] if isinstance(marker, str) else list(marker)
    deadline = time.monotonic() + timeout_s
    while not all(os.path.exists(m) for m in markers):
        waiting = [m for m in markers if not os.path.exists(m)]
        assert p.poll() is None, f"driver exited ({p.returncode}) before pausing:\n{log()}"
        assert time.monotonic() < deadline, f"{waiting} never written: the driver never paused:\n{log()}"
        time.sleep(0.2)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait(timeout=60)
    assert p.returncode == -signal.SIGKILL


_names = itertools.count()
_lock = threading.Lock()


def unique(prefix: str) -> str:
    with _lock:
        return f"{prefix}_{os.getpid()}_{next(_names)}"


# --- the three operations ------------------------------------------------------------------


def dedup(
    df: DataFrame,
    mode: str,
    interval: Any,
    key: Any = "k",
    id: Any = "id",
    ts: Any = "ts",
    name: Optional[str] = None,
    order: Optional[str] = None,
) -> DataFrame:
    """Applies the kstate operation of model ``mode`` to ``df`` (``order``: its ``order=``)."""
    if mode == "by_key":
        return df.kstate.deduplicate_by_key(interval, key=key, timestamp=ts, name=name, order=order)
    if mode == "by_key_value":
        return df.kstate.deduplicate_by_key_value(id, interval, key=key, timestamp=ts, name=name, order=order)
    if mode == "by_id":
        return df.kstate.deduplicate(id, interval, timestamp=ts, name=name, order=order)
    raise ValueError(mode)


def with_ts_type(df: DataFrame, ts_type: str, src: str = "ts_ms", dst: str = "ts") -> DataFrame:
    """Derives the event-time column ``dst`` of type ``ts_type`` from epoch millis ``src``.

    TIMESTAMP_NTZ is the UTC wall clock of the instant (the test session runs in UTC).
    """
    c = F.col(src)
    if ts_type == "long":
        out = c.cast("long")
    elif ts_type == "int":
        out = c.cast("int")
    elif ts_type == "timestamp":
        out = F.timestamp_millis(c)
    elif ts_type == "timestamp_ntz":
        out = F.timestamp_millis(c).cast("timestamp_ntz")
    else:
        raise ValueError(ts_type)
    return df.withColumn(dst, out)


@contextlib.contextmanager
def shuffle_partitions(spark: SparkSession, n: Optional[int]) -> Iterator[None]:
    """Sets spark.sql.shuffle.partitions (= state partitions of a NEW query) temporarily."""
    if n is None:
        yield
        return
    key = "spark.sql.shuffle.partitions"
    old = spark.conf.get(key)
    spark.conf.set(key, str(n))
    try:
        yield
    finally:
        spark.conf.set(key, old)


# --- files ---------------------------------------------------------------------------------


def write_json_lines(
    directory: str, name: str, records: Iterable[Dict[str, Any]], mtime: Optional[float] = None
) -> str:
    """Writes ``records`` as one JSON-lines file ``directory/name``, atomically."""
    staging = os.path.join(os.path.dirname(os.path.abspath(directory)), "_staging_" + os.path.basename(directory))
    os.makedirs(staging, exist_ok=True)
    tmp = os.path.join(staging, name)
    with open(tmp, "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    if mtime is not None:
        os.utime(tmp, (mtime, mtime))
    final = os.path.join(directory, name)
    os.rename(tmp, final)
    return final


def checkpoint_files(root: str) -> Dict[str, bytes]:
    """Every file below ``root`` (relative path -> bytes): to check a refused call wrote nothing."""
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            with open(os.path.join(d, n), "rb") as f:
                out[os.path.relpath(os.path.join(d, n), root)] = f.read()
    return out


def file_name(index: int) -> str:
    return f"part-{index:06d}.json"


class FileStream:
    """One streaming query: ``build(source_df)`` from JSON-lines files in ``src``.

    The sink is foreachBatch collecting each micro-batch's rows into ``self.batches``
    (``batch_id -> rows``, overwritten on replay), or the memory sink (``sink="memory"``).
    Restart = a new FileStream on the same ``src`` and ``checkpoint``.
    """

    def __init__(
        self,
        spark: SparkSession,
        src: str,
        checkpoint: str,
        build: Callable[[DataFrame], DataFrame],
        schema: str = SCHEMA,
        sink: str = "foreach_batch",
        output_mode: str = "append",
        max_files_per_trigger: int = 1,
    ) -> None:
        self.spark, self.src, self.checkpoint = spark, src, checkpoint
        self.build, self.schema, self.sink, self.output_mode = build, schema, sink, output_mode
        self.max_files_per_trigger = max_files_per_trigger
        os.makedirs(src, exist_ok=True)
        self.batches: Dict[int, List[Row]] = {}
        self.query = None
        self.query_name = unique("kstate_q")

    def source(self) -> DataFrame:
        return (
            self.spark.readStream.schema(self.schema)
            .option("maxFilesPerTrigger", self.max_files_per_trigger)
            .json(self.src)
        )

    def start(self) -> "FileStream":
        with session_conf(self.spark, STREAM_ORDER):  # read when the query starts
            return self._start()

    def _start(self) -> "FileStream":
        out = self.build(self.source())
        w = (
            out.writeStream.outputMode(self.output_mode)
            .option("checkpointLocation", self.checkpoint)
            .queryName(self.query_name)
        )
        if self.sink == "memory":
            w = w.format("memory")
        else:

            def collect(batch_df: DataFrame, batch_id: int) -> None:
                self.batches[batch_id] = batch_df.collect()

            w = w.foreachBatch(collect)
        self.query = w.start()
        return self

    def next_index(self) -> int:
        return sum(1 for f in os.listdir(self.src) if f.endswith(".json"))

    def add_file(self, records: Sequence[Dict[str, Any]]) -> None:
        write_json_lines(self.src, file_name(self.next_index()), records)

    def process(self) -> None:
        self.query.processAllAvailable()

    def add_batch(self, records: Sequence[Dict[str, Any]]) -> None:
        """One micro-batch made of ``records`` (in this order)."""
        self.add_file(records)
        self.process()

    def rows(self) -> List[Row]:
        if self.sink == "memory":
            return self.spark.table(self.query_name).collect()
        return [r for b in sorted(self.batches) for r in self.batches[b]]

    def seqs(self) -> List[int]:
        return sorted(r["seq"] for r in self.rows())

    def batch_seqs(self) -> Dict[int, List[int]]:
        return {b: sorted(r["seq"] for r in rows) for b, rows in self.batches.items()}

    def stop(self) -> None:
        if self.query is not None:
            self.query.stop()

    def __enter__(self) -> "FileStream":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


@dataclass
class StreamResult:
    rows: List[Row]  # all output rows, by batch id
    batches: Dict[int, List[int]]  # batch id -> sorted output seqs (foreachBatch sink only)

    @property
    def seqs(self) -> List[int]:
        return sorted(r["seq"] for r in self.rows)


def run_stream(
    spark: SparkSession,
    workdir: str,
    build: Callable[[DataFrame], DataFrame],
    batches: Sequence[Sequence[Dict[str, Any]]],
    schema: str = SCHEMA,
    partitions: Optional[int] = None,
    sink: str = "foreach_batch",
) -> StreamResult:
    """Runs ``batches`` (each one micro-batch) through a fresh query and checkpoint."""
    with shuffle_partitions(spark, partitions):
        fs = FileStream(
            spark, os.path.join(workdir, "src"), os.path.join(workdir, "checkpoint"), build, schema=schema, sink=sink
        )
        with fs:
            for b in batches:
                fs.add_batch(b)
            rows = fs.rows()  # read a memory sink before its query stops
    return StreamResult(rows, fs.batch_seqs())


def run_stream_batches(
    spark: SparkSession,
    workdir: str,
    build: Callable[[DataFrame], DataFrame],
    batches: Sequence[Sequence[Dict[str, Any]]],
    schema: str = SCHEMA,
    partitions: Optional[int] = None,
    output_mode: str = "update",
) -> Dict[int, List[Row]]:
    """Runs ``batches`` (each one micro-batch) through a fresh query; batch id -> output rows."""
    with shuffle_partitions(spark, partitions):
        fs = FileStream(
            spark,
            os.path.join(workdir, "src"),
            os.path.join(workdir, "ckpt"),
            build,
            schema=schema,
            output_mode=output_mode,
        )
        with fs:
            for b in batches:
                fs.add_batch(b)
    return fs.batches


def run_batch_df(
    spark: SparkSession,
    build: Callable[[DataFrame], DataFrame],
    records: Sequence[Dict[str, Any]],
    schema: str = SCHEMA,
    partitions: Optional[int] = None,
) -> List[Row]:
    """The same operation on a batch DataFrame holding ``records`` in list order."""
    with shuffle_partitions(spark, partitions):
        names = [f.strip().split()[0] for f in schema.split(",")]
        df = spark.createDataFrame([tuple(r.get(n) for n in names) for r in records], schema)
        return build(df).collect()


# --- oracle --------------------------------------------------------------------------------


def partition_map(spark: SparkSession, values: Sequence[Any], sql_type: str, n: int) -> Dict[Any, int]:
    """value -> state partition, as Spark hash-partitions it: pmod(hash(v), n)."""
    df = spark.createDataFrame([(v,) for v in values], f"v {sql_type}")
    rows = df.select("v", F.expr(f"pmod(hash(v), {n})").alias("p")).collect()
    return {r["v"]: r["p"] for r in rows}


def model_forwarded(
    records: Sequence[Dict[str, Any]],
    interval_ms: int,
    mode: str,
    partition_of: Optional[Callable[[Dict[str, Any]], int]] = None,
) -> List[int]:
    """Sorted seqs the reference model forwards, one model per state partition, list order."""
    models: Dict[int, DedupModel] = {}
    out = []
    for r in records:
        p = partition_of(r) if partition_of else 0
        m = models.setdefault(p, DedupModel(interval_ms, mode))
        key = r.get("k") if mode != "by_id" else None
        if m.process(Rec(key, r.get("id"), r.get("ts"))):
            out.append(r["seq"])
    return sorted(out)


def partitioner(
    spark: SparkSession,
    mode: str,
    n: int,
    keys: Sequence[Any],
    ids: Sequence[Any],
    key_type: str = "string",
    id_type: str = "string",
) -> Callable[[Dict[str, Any]], int]:
    """State partition of a record for ``mode``: by key (by_key, by_key_value) or by id."""
    if mode == "by_id":
        pm = partition_map(spark, list(ids), id_type, n)
        return lambda r: pm[r.get("id")]
    pm = partition_map(spark, list(keys), key_type, n)
    return lambda r: pm[r.get("k")]
