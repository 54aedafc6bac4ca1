"""Errors raised while a streaming query runs reach Python as ``kstate.KStateError`` (with the
kstate ``error_class``) from ``processAllAvailable``, ``awaitTermination`` and ``exception()``,
and are still pyspark ``StreamingQueryException``s; other query failures are unchanged."""

from __future__ import annotations

import os

import pytest
from _streaming import FileStream, dedup, shuffle_partitions
from _windowed import SCHEMA as WINDOWED_SCHEMA
from _windowed import aggregate
from kstate import BufferConfig, KStateError, TimeWindows
from pyspark.errors import StreamingQueryException


def _dedup_stream(spark, root: str, interval: str) -> FileStream:
    return FileStream(
        spark, os.path.join(root, "src"), os.path.join(root, "ckpt"), lambda df: dedup(df, "by_key", interval)
    )


def _config_changed_query(spark, root: str) -> FileStream:
    """A query restarted with another interval, its next batch added (it fails on it)."""
    with _dedup_stream(spark, root, "10 seconds") as fs:
        fs.add_batch([dict(seq=1, k="a", id="x", ts=20_000)])
    fs2 = _dedup_stream(spark, root, "20 seconds").start()
    fs2.add_file([dict(seq=2, k="a", id="x", ts=25_000)])
    return fs2


def _assert_kstate_query_error(e: BaseException, error_class: str, through_python: bool = False) -> None:
    """``through_python``: the query's sink is a Python foreachBatch function, whose traceback
    carries the kstate error through the JVM as text only: condition and message, no parameters."""
    assert isinstance(e, KStateError), type(e).__mro__
    assert isinstance(e, StreamingQueryException)
    assert e.error_class == error_class
    assert e.message and not e.message.startswith("["), e.message
    # the kstate error's condition, SQLSTATE and parameters, read from the Java error object
    condition = e.getCondition()
    assert condition == error_class or condition.startswith(error_class + "."), condition
    assert f"[{condition}]" in str(e)
    assert e.getSqlState() is not None and len(e.getSqlState()) == 5
    assert bool(e.getMessageParameters()) != through_python, e.getMessageParameters()


def test_config_change_is_a_kstate_error_from_process_all_available(spark, tmp_path) -> None:
    fs = _config_changed_query(spark, str(tmp_path))
    try:
        with pytest.raises(KStateError) as ei:
            fs.process()
        _assert_kstate_query_error(ei.value, "KSTATE_OPERATOR_CONFIG_CHANGED")
        assert "intervalMs=10000" in ei.value.message and "intervalMs=20000" in ei.value.message
        # the same failure from awaitTermination and exception()
        with pytest.raises(StreamingQueryException) as ei2:
            fs.query.awaitTermination()
        _assert_kstate_query_error(ei2.value, "KSTATE_OPERATOR_CONFIG_CHANGED")
        _assert_kstate_query_error(fs.query.exception(), "KSTATE_OPERATOR_CONFIG_CHANGED")
    finally:
        fs.stop()


def test_buffer_full_is_a_kstate_error_from_await_termination(spark, tmp_path) -> None:
    windows = TimeWindows.of_size("10 seconds").grace("1 hour")
    build = aggregate(windows, True, BufferConfig.max_records(1).shut_down_when_full())
    with shuffle_partitions(spark, 1):
        fs = FileStream(
            spark, str(tmp_path / "src"), str(tmp_path / "ckpt"), build, schema=WINDOWED_SCHEMA, output_mode="update"
        ).start()
        try:
            fs.add_file([dict(seq=0, k="a", ts=0, v=1), dict(seq=1, k="b", ts=0, v=1)])
            with pytest.raises(KStateError) as ei:
                fs.query.awaitTermination(120)
            _assert_kstate_query_error(ei.value, "KSTATE_BUFFER_FULL", through_python=True)
            assert "max_records=1" in ei.value.message
        finally:
            fs.stop()


def test_other_query_failures_stay_plain_streaming_query_exceptions(spark, tmp_path) -> None:
    def fail(batch_df, batch_id):
        raise RuntimeError("not a kstate problem")

    src = str(tmp_path / "src")
    os.makedirs(src)
    with open(os.path.join(src, "0.json"), "w") as f:
        f.write('{"seq": 1, "k": "a", "id": "x", "ts": 0}\n')
    q = (
        dedup(spark.readStream.schema("seq LONG, k STRING, id STRING, ts LONG").json(src), "by_key", "10s")
        .writeStream.option("checkpointLocation", str(tmp_path / "ckpt"))
        .foreachBatch(fail)
        .start()
    )
    try:
        with pytest.raises(StreamingQueryException) as ei:
            q.processAllAvailable()
        assert not isinstance(ei.value, KStateError)
        assert not isinstance(q.exception(), KStateError)
    finally:
        q.stop()


def test_query_without_error_has_no_exception(spark, tmp_path) -> None:
    with _dedup_stream(spark, str(tmp_path), "10 seconds") as fs:
        fs.add_batch([dict(seq=1, k="a", id="x", ts=0)])
        assert fs.query.exception() is None
