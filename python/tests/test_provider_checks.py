"""Which features need kstate's state store provider, and when a provider that lacks one is
rejected: when the micro-batch is planned (before any task runs), with the error class and a
message that names the setting to change, as a PySpark user sees them (docs/errors.md)."""

from __future__ import annotations

import json
import os

import pytest
from _streaming import dedup, session_conf
from kstate import BufferConfig, KStateError, Suppressed, TimeWindows
from pyspark.errors import StreamingQueryException

PROVIDER_KEY = "spark.kstate.stateStore.providerClass"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
SCHEMA = "seq LONG, k STRING, id STRING, ts LONG"


def _first_batch(spark, tmp_path, build, provider: str):
    """Starts `build` over one file with `provider` behind kstate and processes its first batch."""
    src = str(tmp_path / "src")
    os.makedirs(src, exist_ok=True)
    with open(os.path.join(src, "0.json"), "w") as f:
        f.write('{"seq": 1, "k": "a", "id": "x", "ts": 0}\n{"seq": 2, "k": "b", "id": "y", "ts": 30000}\n')
    with session_conf(spark, {PROVIDER_KEY: provider}):
        out = build(spark.readStream.schema(SCHEMA).json(src))
        q = (
            out.writeStream.outputMode("append")
            .format("memory")
            .queryName(f"p_{os.getpid()}_{id(out)}")
            .option("checkpointLocation", str(tmp_path / "ckpt"))
            .start()
        )
    try:
        q.processAllAvailable()
        return None, q.lastProgress
    except StreamingQueryException as e:
        return e, None
    finally:
        q.stop()


def _rejected_at_planning(error) -> KStateError:
    assert isinstance(error, KStateError), repr(error)
    assert error.error_class == "KSTATE_UNSUPPORTED_STATE_PROVIDER", error.message
    # raised while the micro-batch was planned, not by a task of its job
    assert "stage failure" not in str(error), str(error)[:2000]
    assert f"{PROVIDER_KEY}={ROCKSDB}" in error.message
    assert f"Set {PROVIDER_KEY} to io.kstate.KStateStoreProvider" in error.message
    return error


def test_suppress_on_a_table_needs_kstates_provider(spark, tmp_path) -> None:
    build = lambda d: d.kstate.suppress(  # noqa: E731
        Suppressed.until_time_limit("1s", BufferConfig.unbounded()), key="k", timestamp="ts"
    )
    error, _ = _first_batch(spark, tmp_path, build, ROCKSDB)
    e = _rejected_at_planning(error)
    assert "time-ordered suppression buffer" in e.message


def test_final_results_spilling_to_disk_need_kstates_provider(spark, tmp_path) -> None:
    build = lambda d: (
        d.kstate.windowed_by(TimeWindows.of_size("10s"), key="k", timestamp="ts")
        .count()  # noqa: E731
        .kstate.suppress(Suppressed.until_window_closes(BufferConfig.max_records(100).spill_to_disk_when_full()))
    )
    error, _ = _first_batch(spark, tmp_path, build, ROCKSDB)
    e = _rejected_at_planning(error)
    assert "spill_to_disk_when_full" in e.message


@pytest.mark.parametrize(
    "build",
    [
        lambda d: dedup(d, "by_key", "10s"),
        lambda d: d.kstate.windowed_by(TimeWindows.of_size("10s"), key="k", timestamp="ts").distinct(),
        lambda d: (
            d.kstate.windowed_by(TimeWindows.of_size("10s"), key="k", timestamp="ts")
            .count()
            .kstate.suppress(Suppressed.until_window_closes(BufferConfig.max_records(100).shut_down_when_full()))
        ),
    ],
    ids=["dedup", "distinct", "final_results_shut_down"],
)
def test_features_that_run_on_sparks_rocksdb_provider(spark, tmp_path, build) -> None:
    error, progress = _first_batch(spark, tmp_path, build, ROCKSDB)
    assert error is None, str(error)[:2000]
    assert progress is not None and progress["stateOperators"]


@pytest.mark.parametrize("provider", ["io.kstate.KStateStoreProvider", ROCKSDB], ids=["kstate", "rocksdb"])
def test_checkpoint_format_2_runs_on_kstates_and_sparks_rocksdb_provider(spark, tmp_path, provider) -> None:
    # was KSTATE_UNSUPPORTED_CHECKPOINT_FORMAT when the DataFrame was built; now the operator
    # reports its stores' checkpoint ids and Spark records them in the commit log
    with session_conf(spark, {"spark.sql.streaming.stateStore.checkpointFormatVersion": "2"}):
        error, progress = _first_batch(spark, tmp_path, lambda d: dedup(d, "by_key", "10s"), provider)
    assert error is None, str(error)[:2000]
    assert progress is not None and progress["stateOperators"][0]["numRowsTotal"] == 2
    with open(tmp_path / "ckpt" / "commits" / "0") as f:
        entry = json.loads(f.read().split("\n", 1)[1])
    (ids,) = entry["stateUniqueIds"].values()  # the kstate operator's: one id per partition
    assert len(ids) == int(spark.conf.get("spark.sql.shuffle.partitions")) and all(len(p) == 1 for p in ids)


def test_kstate_settings_show_their_defaults(spark) -> None:
    assert spark.conf.get(PROVIDER_KEY) == "io.kstate.KStateStoreProvider"
    assert spark.conf.get("spark.kstate.streamTime.followWatermark") == "false"
    docs = {r[0]: r[2] for r in spark.sql("SET -v").collect()}
    assert "state store provider behind every kstate operator" in docs[PROVIDER_KEY].lower()
