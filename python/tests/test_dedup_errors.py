"""Errors: every bad input raises KStateError with its error class when the DataFrame is built;
plan/config problems surface when the streaming query runs."""

from __future__ import annotations

import datetime as dt
import os
import types
from typing import Any, Callable

import kstate
import pytest
from _streaming import FileStream, dedup, session_conf
from kstate import KStateError
from pyspark.errors import PySparkException, StreamingQueryException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

ERR_SCHEMA = "seq LONG, k STRING, id STRING, ts LONG, s STRING, d DOUBLE, m MAP<STRING, INT>"


@pytest.fixture(scope="module", params=["stream", "batch"])
def df(request, spark, session_tmp) -> DataFrame:
    if request.param == "stream":
        src = str(session_tmp.mktemp("err_src"))
        return spark.readStream.schema(ERR_SCHEMA).json(src)
    return spark.createDataFrame([(1, "a", "x", 0, "s", 0.5, {"a": 1})], ERR_SCHEMA)


def by_key(**kw: Any) -> Callable[[DataFrame], DataFrame]:
    args = dict(dict(interval="10 seconds", key="k", timestamp="ts"), **kw)
    return lambda df: df.kstate.deduplicate_by_key(**args)


def by_key_value(**kw: Any) -> Callable[[DataFrame], DataFrame]:
    args = dict(dict(id="id", interval="10 seconds", key="k", timestamp="ts"), **kw)
    return lambda df: df.kstate.deduplicate_by_key_value(**args)


def by_id(**kw: Any) -> Callable[[DataFrame], DataFrame]:
    args = dict(dict(id="id", interval="10 seconds", timestamp="ts"), **kw)
    return lambda df: df.kstate.deduplicate(**args)


DUR, COL, TS, KEY, NONDET, NAME = (
    "KSTATE_INVALID_DURATION",
    "KSTATE_MISSING_COLUMN",
    "KSTATE_INVALID_TIMESTAMP_TYPE",
    "KSTATE_INVALID_KEY_TYPE",
    "KSTATE_NON_DETERMINISTIC_EXPRESSION",
    "KSTATE_INVALID_OPERATOR_NAME",
)

BAD = {
    # negative interval
    "negative_int": (lambda: by_key(interval=-1), DUR),
    "negative_string": (lambda: by_key(interval="-5 seconds"), DUR),
    "negative_timedelta": (lambda: by_id(interval=dt.timedelta(seconds=-1)), DUR),
    "negative_iso": (lambda: by_key_value(interval="PT-10S"), DUR),
    # malformed interval string
    "unknown_unit": (lambda: by_key(interval="10 parsecs"), DUR),
    "words": (lambda: by_key(interval="ten seconds"), DUR),
    "empty": (lambda: by_key(interval=""), DUR),
    "decimal_compact": (lambda: by_id(interval="1.5s"), DUR),
    "iso_without_fields": (lambda: by_key_value(interval="PT"), DUR),
    "trailing_garbage": (lambda: by_key(interval="10 seconds later"), DUR),
    # wrong interval type
    "float": (lambda: by_key(interval=1.5), DUR),
    "none": (lambda: by_key(interval=None), DUR),
    "bool": (lambda: by_key(interval=True), DUR),
    "list": (lambda: by_id(interval=[10]), DUR),
    "bytes": (lambda: by_key_value(interval=b"10s"), DUR),
    # an interval a Java long cannot hold (the JVM parser rejects it as "too large")
    "too_large_int": (lambda: by_key(interval=10**20), DUR),
    "too_large_string": (lambda: by_key(interval="100000000000000000 weeks"), DUR),
    # missing columns
    "missing_key": (lambda: by_key(key="nope"), COL),
    "missing_key_in_list": (lambda: by_key(key=["k", "nope"]), COL),
    "missing_key_kv": (lambda: by_key_value(key="nope"), COL),
    "missing_timestamp": (lambda: by_key(timestamp="nope"), COL),
    "missing_timestamp_by_id": (lambda: by_id(timestamp="nope"), COL),
    "missing_id_kv": (lambda: by_key_value(id="nope"), COL),
    "missing_id": (lambda: by_id(id="nope"), COL),
    "key_not_a_column": (lambda: by_key(key=5), COL),
    "key_empty_list": (lambda: by_key(key=[]), COL),
    "timestamp_none": (lambda: by_key(timestamp=None), COL),
    # wrong-typed timestamp
    "string_timestamp": (lambda: by_key(timestamp="s"), TS),
    "string_timestamp_kv": (lambda: by_key_value(timestamp=F.col("s")), TS),
    "string_timestamp_by_id": (lambda: by_id(timestamp="s"), TS),
    "double_timestamp": (lambda: by_key(timestamp="d"), TS),
    "date_timestamp": (lambda: by_key(timestamp=F.to_date(F.lit("2024-01-01"))), TS),
    # key/id types without equality
    "map_key": (lambda: by_key(key="m"), KEY),
    "map_key_expr": (lambda: by_key(key=F.create_map(F.col("k"), F.col("seq"))), KEY),
    "struct_with_map_key": (lambda: by_key(key=["k", "m"]), KEY),
    "array_of_map_key": (lambda: by_key(key=F.array("m")), KEY),
    "map_key_kv": (lambda: by_key_value(key="m"), KEY),
    "map_id_kv": (lambda: by_key_value(id="m"), KEY),
    "map_id": (lambda: by_id(id="m"), KEY),
    "variant_id": (lambda: by_id(id=F.parse_json(F.lit("{}"))), KEY),
    # non-deterministic expressions
    "rand_id": (lambda: by_id(id=F.rand()), NONDET),
    "rand_id_kv": (lambda: by_key_value(id=F.rand()), NONDET),
    "uuid_key": (lambda: by_key(key=F.expr("uuid()")), NONDET),
    "rand_in_struct_key": (lambda: by_key(key=[F.col("k"), F.rand()]), NONDET),
    "rand_timestamp": (lambda: by_key(timestamp=(F.rand() * 1000).cast("long")), NONDET),
    # operator names
    "name_with_space": (lambda: by_key(name="bad name"), NAME),
    "name_empty": (lambda: by_key(name=""), NAME),
    "name_too_long": (lambda: by_id(name="x" * 101), NAME),
    "name_slash": (lambda: by_key_value(name="a/b"), NAME),
    "name_not_a_string": (lambda: by_key(name=123), NAME),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_raises_at_construction(df, case: str) -> None:
    make, error_class = BAD[case]
    op = make()
    with pytest.raises(KStateError) as ei:
        op(df)
    err = ei.value
    assert err.error_class == error_class, str(err)
    # a PySpark error: condition (the error class, or it and a sub-condition), SQLSTATE, parameters
    condition = err.getCondition()
    assert condition == error_class or condition.startswith(error_class + "."), condition
    assert str(err).startswith(f"[{condition}] ")
    assert isinstance(err, ValueError) and isinstance(err, PySparkException)
    assert err.getSqlState() is not None and len(err.getSqlState()) == 5
    params = err.getMessageParameters()
    assert params and all(isinstance(v, str) for v in params.values())
    assert all(v in err.message for v in params.values() if len(v) > 3)


GOOD = {
    "by_key": lambda: by_key(),
    "by_key_timedelta": lambda: by_key(interval=dt.timedelta(minutes=1)),
    "by_key_millis_zero": lambda: by_key(interval=0),
    "by_key_struct": lambda: by_key(key=["k", "id"]),
    "by_key_value": lambda: by_key_value(),
    "by_id": lambda: by_id(),
    "by_id_iso": lambda: by_id(interval="PT1H"),
    "name_ok": lambda: by_key(name="dedup_Users-1.v2"),
    "name_100": lambda: by_id(name="n" * 100),
    "int_timestamp": lambda: by_key(timestamp=F.col("ts").cast("int")),
    "timestamp": lambda: by_key(timestamp=F.timestamp_millis("ts")),
    "timestamp_ntz": lambda: by_key(timestamp=F.timestamp_millis("ts").cast("timestamp_ntz")),
    "expression_key": lambda: by_key(key=F.upper("k")),
}


@pytest.mark.parametrize("case", list(GOOD))
def test_good_input_builds_dataframe(df, case: str) -> None:
    out = GOOD[case]()(df)
    assert isinstance(out, DataFrame)
    assert out.columns == df.columns  # rows pass through unchanged
    assert out.isStreaming == df.isStreaming


# --- errors when the query runs ---------------------------------------------------------


def _stream(spark, root, build, **kw) -> FileStream:
    return FileStream(spark, os.path.join(root, "src"), os.path.join(root, "checkpoint"), build, **kw)


def _expect_query_error(fs: FileStream, error_class: str) -> str:
    with pytest.raises(StreamingQueryException) as ei:
        fs.process()
    text = str(ei.value)
    assert f"[{error_class}]" in text, text[:3000]
    return text


# (original, changed, error, fragments): a changed interval is another configuration; a changed
# key or timestamp type is a state schema change no conversion can carry (docs/operators.md,
# "Evolving schemas"), named by the recorded key and the change
CONFIG_CHANGES = {
    "interval": (
        lambda df: dedup(df, "by_key", "10 seconds"),
        lambda df: dedup(df, "by_key", "20 seconds"),
        "KSTATE_OPERATOR_CONFIG_CHANGED",
        ["intervalMs=10000", "intervalMs=20000"],
    ),
    "timestamp_type": (
        lambda df: dedup(df, "by_key", "10 seconds"),
        lambda df: dedup(df, "by_key", "10 seconds", ts=F.timestamp_millis("ts")),
        "KSTATE_INCOMPATIBLE_STATE_SCHEMA",
        ["timestampType", "bigint -> timestamp"],
    ),
    "key_type": (
        lambda df: dedup(df, "by_key", "10 seconds"),
        lambda df: dedup(df, "by_key", "10 seconds", key=["k"]),
        "KSTATE_INCOMPATIBLE_STATE_SCHEMA",
        ["identityTypes", "string -> struct<k:string>"],
    ),
}


@pytest.mark.parametrize("change", list(CONFIG_CHANGES))
def test_config_change_on_restart_fails_and_checkpoint_survives(spark, session_tmp, change: str) -> None:
    original, changed, error, fragments = CONFIG_CHANGES[change]
    root = str(session_tmp.mktemp(f"cfg_{change}"))
    with _stream(spark, root, original) as fs:
        fs.add_batch([dict(seq=1, k="a", id="x", ts=20_000)])
    assert fs.batch_seqs() == {0: [1]}

    fs2 = _stream(spark, root, changed).start()
    try:
        fs2.add_file([dict(seq=2, k="a", id="x", ts=25_000)])
        text = _expect_query_error(fs2, error)
        for frag in fragments:
            assert frag in text, text[:3000]
    finally:
        fs2.stop()
    assert fs2.batches == {}  # the changed query produced nothing

    # The original configuration continues from the checkpoint: seq 2 (replayed batch 1) is a
    # duplicate of seq 1 stored before the failed attempt; seq 3 is 11 s after seq 1.
    with _stream(spark, root, original) as fs3:
        fs3.process()
        fs3.add_batch([dict(seq=3, k="a", id="x", ts=31_000)])
    assert fs3.batch_seqs() == {1: [], 2: [3]}


# complete output mode: test_plan_errors.py (rejected when the query starts)


def test_update_output_mode_is_supported(spark, session_tmp) -> None:
    root = str(session_tmp.mktemp("update"))
    with _stream(spark, root, lambda df: dedup(df, "by_key", "10 seconds"), output_mode="update") as fs:
        fs.add_batch([dict(seq=1, k="a", id="x", ts=0), dict(seq=2, k="a", id="y", ts=5_000)])
        fs.add_batch([dict(seq=3, k="a", id="z", ts=11_000)])
    assert fs.batch_seqs() == {0: [1], 1: [3]}


def test_duplicate_operator_names_rejected_when_built(df) -> None:
    # both names are in the DataFrame's plan when the second operator is built
    # (a union of separately built DataFrames is checked when the query runs: test_plan_errors.py)
    first = df.kstate.deduplicate_by_key("10s", key="k", timestamp="ts", name="d")
    with pytest.raises(KStateError) as ei:
        first.kstate.deduplicate("id", "10s", timestamp="ts", name="d")
    assert ei.value.error_class == "KSTATE_DUPLICATE_OPERATOR_NAME"


HDFS_PROVIDER = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"


def test_hdfs_provider_for_kstate_rejected_when_built(spark, df) -> None:
    with session_conf(spark, {"spark.kstate.stateStore.providerClass": HDFS_PROVIDER}):
        with pytest.raises(KStateError) as ei:
            dedup(df, "by_key", "10 seconds")
    assert ei.value.error_class == "KSTATE_UNSUPPORTED_STATE_PROVIDER"


@pytest.mark.parametrize(
    "conf,value,error_class",
    [
        ("spark.kstate.stateStore.providerClass", HDFS_PROVIDER, "KSTATE_UNSUPPORTED_STATE_PROVIDER"),
    ],
)
def test_unsupported_state_configuration_set_after_building_rejected_when_query_starts(
    spark, session_tmp, conf: str, value: str, error_class: str
) -> None:
    # set after the DataFrame was built: kstate's check rule sees the query at start()
    # (until issue 14 it was found when the first micro-batch was planned)
    root = str(session_tmp.mktemp("badconf"))
    fs = _stream(spark, root, lambda df: dedup(df, "by_key", "10 seconds"))
    out = fs.build(fs.source())
    with session_conf(spark, {conf: value}):
        with pytest.raises(KStateError) as ei:
            out.writeStream.option("checkpointLocation", fs.checkpoint).foreachBatch(
                lambda b, i: fs.batches.__setitem__(i, b.collect())
            ).start()
    assert ei.value.error_class == error_class, str(ei.value)


# --- session checks --------------------------------------------------------------------


def _connect_like_session() -> Any:
    cls = type("SparkSession", (), {"__module__": "pyspark.sql.connect.session"})
    return cls()


def test_a_connect_session_records_jvm_calls_for_the_servers_plugin() -> None:
    # no JVM in a Connect client: check_jvm records calls (sent when a DataFrame is analyzed;
    # test_spark_connect.py runs them through a real server)
    jvm = kstate._jvm.check_jvm(_connect_like_session())
    assert isinstance(jvm, kstate._connect.RemoteJvm)
    call = jvm.io.kstate.KStateDataFrame.apply("df").withProcessingOrder("task")
    assert (call._k_method, call._k_args) == ("withProcessingOrder", ["task"])
    assert (call._k_target._k_method, call._k_target._k_target) == ("io.kstate.KStateDataFrame.apply", None)


def test_a_connect_server_without_the_plugin_is_a_named_error() -> None:
    e = kstate._connect.plugin_missing(RuntimeError("[INTERNAL_ERROR] No handler found for extension"))
    assert e is not None and e.error_class == "KSTATE_CONNECT_PLUGIN_MISSING"
    assert "spark.connect.extensions.relation.classes=io.kstate.KStateConnectPlugin" in e.message
    assert kstate._connect.plugin_missing(RuntimeError("something else")) is None


def test_check_jvm_passes_on_real_session(spark) -> None:
    jvm = kstate._jvm.check_jvm(spark)
    info = jvm.io.kstate.BuildInfo
    assert str(info.version()) == kstate.__version__
    assert str(info.sparkMinor()) == kstate.SPARK_MINOR == ".".join(spark.version.split(".")[:2])


def test_check_jvm_spark_version_mismatch(spark) -> None:
    other_minor = next(m for m in kstate._jvm.SUPPORTED_SPARK_MINORS if m != kstate.SPARK_MINOR)
    other = types.SimpleNamespace(sparkContext=spark.sparkContext, version=f"{other_minor}.0")
    with pytest.raises(KStateError) as ei:
        kstate._jvm.check_jvm(other)
    assert ei.value.error_class == "KSTATE_SPARK_VERSION_MISMATCH"
    # names the jar built for the session's Spark
    assert kstate._jvm.jar_name(other_minor) in str(ei.value)


def test_jar_path_is_the_jar_for_the_installed_pyspark_minor() -> None:
    import pyspark

    minor = ".".join(pyspark.__version__.split(".")[:2])
    assert kstate.SPARK_MINOR == minor
    assert os.path.basename(kstate.jar_path()) == f"kstate-spark{minor}_2.13-{kstate.__version__}.jar"


def test_unsupported_pyspark_minor_is_a_named_error(monkeypatch) -> None:
    monkeypatch.setattr(kstate._jvm, "SPARK_MINOR", "4.1")
    with pytest.raises(KStateError) as ei:
        kstate.jar_path()
    assert ei.value.error_class == "KSTATE_SPARK_VERSION_MISMATCH"
    assert "built for Spark 4.2 and 4.3" in str(ei.value)


def test_missing_jar_for_a_supported_minor_is_a_named_error(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(kstate._jvm, "_JARS_DIR", str(tmp_path))
    with pytest.raises(KStateError) as ei:
        kstate.jar_path()
    assert ei.value.error_class == "KSTATE_JAR_MISSING"
    assert kstate._jvm.jar_name() in str(ei.value)


def test_check_jvm_jar_not_loaded() -> None:
    def missing() -> str:
        raise RuntimeError("py4j: class io.kstate.BuildInfo not found")

    jvm = types.SimpleNamespace(
        io=types.SimpleNamespace(
            kstate=types.SimpleNamespace(BuildInfo=types.SimpleNamespace(version=missing, sparkMinor=missing))
        )
    )
    fake = types.SimpleNamespace(sparkContext=types.SimpleNamespace(_jvm=jvm), version="4.3.0")
    with pytest.raises(KStateError) as ei:
        kstate._jvm.check_jvm(fake)
    assert ei.value.error_class == "KSTATE_JAR_NOT_LOADED"


def test_session_is_configured_with_jar_and_extension(spark) -> None:
    assert kstate.jar_path() in spark.conf.get("spark.jars")
    assert kstate.EXTENSION in spark.conf.get("spark.sql.extensions")


def test_configure_is_idempotent() -> None:
    from pyspark.sql import SparkSession

    b = kstate.configure(kstate.configure(SparkSession.builder))
    assert b._options["spark.jars"].split(",").count(kstate.jar_path()) == 1
    assert b._options["spark.sql.extensions"].split(",").count(kstate.EXTENSION) == 1
