"""kstate with its checkpoint on real remote stores: HDFS (Hadoop's in-process cluster, a NameNode and
two DataNodes) and S3 (s3proxy through Hadoop's S3A connector), both started by the tests on
loopback (``checkpoint_stores.py``; docs/state-store.md, "Checkpoints on HDFS and S3").

For each store, each pipeline (deduplication; a windowed count with final results; a spilling
``until_time_limit``; a versioned table with a grace stream–table join; a table aggregation) runs
its micro-batches with the checkpoint there: once straight through and once stopped and restarted
between every two micro-batches; both must give exactly what the same query gives with its
checkpoint on the local disk. A kill -9 of the driver process after a micro-batch's state was
committed and before the micro-batch was, then a restart, must too. The object-store faults
(a task killed while writing, stale objects, a listing missing a file) are in the Scala suite
``ObjectStoreFaultsSuite``.
"""

from __future__ import annotations

import os
import random
from typing import Any, Dict, List

import _kill9_driver
import kstate
import pytest
from _kill9 import kill9_then_restart, query_on_files
from _streaming import CHECKPOINT_FILE_MANAGER, SPARK_DEFAULT_FILE_MANAGER, FileStream
from _tables_property import SCHEMA as TABLE_SCHEMA
from _tables_property import random_records
from checkpoint_stores import HdfsCluster, S3Server
from test_kill9_windows import _input as _window_input
from test_kill9_windows import _rows, _sink_rows

STORES = ["hdfs", "s3"]
KILL_BATCH = 2


@pytest.fixture(scope="module")
def stores():
    with HdfsCluster() as hdfs, S3Server() as s3:
        yield {"hdfs": hdfs, "s3": s3}


@pytest.fixture(scope="module")
def remote(spark, stores):
    """store -> (checkpoint root URL, session settings); the settings are set on the tests' session.

    On both stores the checkpoint files are written as a user's query writes them: through Spark's
    default checkpoint file manager, not the one the other tests use on the local disk
    (``_streaming.session_builder``)."""
    s3 = stores["s3"]
    spark_default = {CHECKPOINT_FILE_MANAGER: SPARK_DEFAULT_FILE_MANAGER}
    s3_settings = {**s3.settings(), **spark_default}
    before = spark.conf.get(CHECKPOINT_FILE_MANAGER, None)
    for k, v in s3_settings.items():
        spark.conf.set(k, v)
    yield {"hdfs": (stores["hdfs"].url, spark_default), "s3": (f"s3a://{s3.bucket}", s3_settings)}
    for k in s3_settings:
        spark.conf.unset(k)
    if before is not None:
        spark.conf.set(CHECKPOINT_FILE_MANAGER, before)


def _dedup_windows_cfg() -> Dict[str, Any]:
    return dict(operator="window_final", size="5 seconds", grace="2 seconds")


# name -> (driver config (the kill -9 driver's `build`), schema, input micro-batches)
def _pipelines() -> Dict[str, Any]:
    tables = random_records(random.Random(29), 30, ["s", "t"])
    table_batches = [tables[i : i + 6] for i in range(0, 30, 6)]
    windows = _window_input()[:5]
    return {
        "dedup": (dict(operator="dedup", mode="by_key", interval="3 seconds"), None, windows),
        "window_final": (_dedup_windows_cfg(), None, windows),
        "time_limit_spill": (dict(operator="time_limit", limit="5 seconds", spill=True), None, windows),
        "stream_table_join": (dict(operator="stream_table_join"), TABLE_SCHEMA, table_batches),
        "table_aggregate": (dict(operator="table_aggregate"), TABLE_SCHEMA, table_batches),
    }


PIPELINES = _pipelines()


def _run(spark, root: str, checkpoint: str, name: str, restart: bool) -> Dict[int, List[str]]:
    cfg, schema, batches = PIPELINES[name]
    build = lambda df: _kill9_driver.build(df, cfg)  # noqa: E731
    kw = dict(schema=schema) if schema else {}
    out: Dict[int, List[Any]] = {}
    fs = FileStream(spark, os.path.join(root, "src"), checkpoint, build, **kw).start()
    try:
        for i, b in enumerate(batches):
            if restart and i > 0:
                out.update(fs.batches)
                fs.stop()
                fs = FileStream(spark, os.path.join(root, "src"), checkpoint, build, **kw).start()
            fs.add_batch(b)
    finally:
        fs.stop()
    out.update(fs.batches)
    return _rows(out)


@pytest.fixture(scope="module")
def local(spark, session_tmp) -> Dict[str, Dict[int, List[str]]]:
    """Each pipeline with its checkpoint on the local disk."""
    out = {}
    for name in PIPELINES:
        root = str(session_tmp.mktemp(f"local_{name}"))
        out[name] = _run(spark, root, os.path.join(root, "ckpt"), name, restart=False)
        assert sum(len(r) for r in out[name].values()) > 0, name
    return out


@pytest.mark.parametrize("restart", [False, True], ids=["straight", "restart_every_batch"])
@pytest.mark.parametrize("name", list(PIPELINES))
@pytest.mark.parametrize("store", STORES)
def test_a_remote_checkpoint_gives_the_local_output(spark, tmp_path, remote, local, store, name, restart) -> None:
    url, _ = remote[store]
    checkpoint = f"{url}/{tmp_path.name}-{name}-{int(restart)}"
    got = _run(spark, str(tmp_path), checkpoint, name, restart)
    assert got == local[name]
    # the state is on the remote store, in kstate's files, and reads back
    op = max(_names(spark, checkpoint + "/state"))
    assert any(n.endswith(".kstate.changelog") for n in _names(spark, f"{checkpoint}/state/{op}/0"))
    kstate.read_state(spark, checkpoint, int(op)).collect()


def _names(spark, directory: str) -> List[str]:
    jvm = spark._jvm
    p = jvm.org.apache.hadoop.fs.Path(directory)
    fs = p.getFileSystem(spark._jsparkSession.sessionState().newHadoopConf())
    return sorted(s.getPath().getName() for s in fs.listStatus(p))


@pytest.fixture(scope="module")
def killed(spark, session_tmp, remote) -> Dict[str, Dict[str, Any]]:
    """The windowed query with its checkpoint on each store, both in one driver process, killed
    (SIGKILL, Python and JVM) once each has committed micro-batch KILL_BATCH's state versions to
    its store and not the batch, then restarted to the end: store -> the commits the kill left
    (``commits``) and the sink's rows (``rows``)."""
    root = str(session_tmp.mktemp("kill9_stores"))
    cfg, _, batches = PIPELINES["window_final"]
    queries, conf = {}, {}
    for store in STORES:
        url, settings = remote[store]
        conf.update(settings)
        queries[store] = query_on_files(
            root,
            store,
            batches,
            **cfg,
            checkpoint=f"{url}/{os.path.basename(root)}-kill9",
            pause_batch=KILL_BATCH,
            pause_phase="after_collect",
        )
    got: Dict[str, Dict[str, Any]] = {}

    def after_kill() -> None:
        for store, q in queries.items():
            got[store] = dict(commits=[n for n in _names(spark, q["checkpoint"] + "/commits") if n.isdigit()])

    kill9_then_restart(root, queries, conf=conf, between=after_kill)
    for store, q in queries.items():
        got[store]["rows"] = _sink_rows(q["out"])
    return got


@pytest.mark.parametrize("store", STORES)
def test_kill9_of_the_driver_then_restart_gives_the_local_output(local, killed, store) -> None:
    """The driver (Python and JVM) is killed after micro-batch KILL_BATCH's state versions were
    committed to the remote store and before the micro-batch was; the restart replays it. (The
    two stores' queries share one driver process.)"""
    assert killed[store]["commits"] == [str(b) for b in range(KILL_BATCH)]
    assert killed[store]["rows"] == local["window_final"]
