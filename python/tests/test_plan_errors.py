"""Errors of whole plans and settings, each as early as it can be known: duplicate operator
names and the kstate state store provider when the DataFrame is built, output modes when the
query starts, non-deterministic keys through the DataFrame's lineage, buffer limits and
``until_window_closes`` inputs when the arguments are given."""

from __future__ import annotations

import os
from typing import Any, Callable

import pytest
from _streaming import FileStream, dedup, session_conf
from _windowed import SCHEMA as WINDOWED_SCHEMA
from kstate import BufferConfig, KStateError, SessionWindows, SlidingWindows, Suppressed, TimeWindows
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

DEDUP_SCHEMA = "seq LONG, k STRING, id STRING, ts LONG"
PROVIDER_KEY = "spark.kstate.stateStore.providerClass"


@pytest.fixture(params=["stream", "batch"])
def df(request, spark, tmp_path) -> DataFrame:
    if request.param == "stream":
        return spark.readStream.schema(DEDUP_SCHEMA).json(str(tmp_path))
    return spark.createDataFrame([(1, "a", "x", 0)], DEDUP_SCHEMA)


def _error(make: Callable[[], Any], error_class: str) -> KStateError:
    with pytest.raises(KStateError) as ei:
        make()
    assert ei.value.error_class == error_class, str(ei.value)
    return ei.value


# --- duplicate operator names: when the DataFrame is built -------------------------------


@pytest.mark.parametrize(
    "second",
    [
        lambda d: d.kstate.deduplicate("id", "10s", timestamp="ts", name="d"),
        lambda d: d.kstate.deduplicate_by_key_value("id", "10s", key="k", timestamp="ts", name="d"),
        lambda d: d.kstate.windowed_by(TimeWindows.of_size("10s"), key="k", timestamp="ts").count(name="d"),
        lambda d: d.kstate.windowed_by(TimeWindows.of_size("10s"), key="k", timestamp="ts").distinct(name="d"),
        # a step in between does not hide the first operator
        lambda d: d.where("k is not null").kstate.deduplicate("id", "10s", timestamp="ts", name="d"),
    ],
    ids=["dedup", "by_key_value", "count", "distinct", "after_filter"],
)
def test_duplicate_name_rejected_when_built(df, second) -> None:
    first = df.kstate.deduplicate_by_key("10s", key="k", timestamp="ts", name="d")
    e = _error(lambda: second(first), "KSTATE_DUPLICATE_OPERATOR_NAME")
    assert "'d'" in e.message


def test_duplicate_name_in_suppress_rejected_when_built(spark, tmp_path) -> None:
    stream = spark.readStream.schema(DEDUP_SCHEMA).json(str(tmp_path))
    first = stream.kstate.deduplicate_by_key("10s", key="k", timestamp="ts", name="d")
    _error(
        lambda: first.kstate.suppress(
            Suppressed.until_time_limit("1s", BufferConfig.unbounded()), key="k", timestamp="ts", name="d"
        ),
        "KSTATE_DUPLICATE_OPERATOR_NAME",
    )


def test_distinct_names_and_unnamed_operators_are_fine(df) -> None:
    out = (
        df.kstate.deduplicate_by_key("10s", key="k", timestamp="ts", name="a")
        .kstate.deduplicate("id", "10s", timestamp="ts", name="b")
        .kstate.deduplicate("id", "10s", timestamp="ts")
        .kstate.deduplicate("id", "10s", timestamp="ts")
    )
    assert out.columns == df.columns


def test_duplicate_name_across_a_union_is_found_when_the_query_runs(spark, tmp_path) -> None:
    # Two DataFrames built apart cannot see each other: the clash is found at planning.
    def build(d):
        a = d.kstate.deduplicate_by_key("10s", key="k", timestamp="ts", name="d")
        b = d.kstate.deduplicate("id", "10s", timestamp="ts", name="d")
        return a.unionByName(b)

    fs = FileStream(spark, str(tmp_path / "src"), str(tmp_path / "ckpt"), build).start()
    try:
        fs.add_file([dict(seq=1, k="a", id="x", ts=0)])
        with pytest.raises(KStateError) as ei:
            fs.process()
        assert ei.value.error_class == "KSTATE_DUPLICATE_OPERATOR_NAME"
    finally:
        fs.stop()


# --- output modes: when the query starts --------------------------------------------------


def _start(spark, tmp_path, build, mode: str, schema: str = WINDOWED_SCHEMA):
    src = str(tmp_path / "src")
    os.makedirs(src, exist_ok=True)
    with open(os.path.join(src, "0.json"), "w") as f:  # one micro-batch to plan and run
        f.write('{"seq": 1, "k": "a", "id": "x", "ts": 0, "v": 1}\n')
    out = build(spark.readStream.schema(schema).json(src))
    return (
        out.writeStream.outputMode(mode)
        .format("memory")
        .queryName(f"q_{os.getpid()}_{id(out)}")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .start()
    )


def _runs(spark, tmp_path, build, mode: str, schema: str = WINDOWED_SCHEMA) -> None:
    """The query starts and runs its micro-batch (planned with its kstate operators) without error."""
    q = _start(spark, tmp_path, build, mode, schema)
    try:
        q.processAllAvailable()
        assert q.exception() is None
        assert q.lastProgress is not None and q.lastProgress["batchId"] == 0
    finally:
        q.stop()


WINDOWS = {
    "time": TimeWindows.of_size("10s"),
    "hopping": TimeWindows.of_size("10s").advance_by("5s"),
    "session": SessionWindows.with_inactivity_gap("10s"),
    "sliding": SlidingWindows.of_time_difference("10s"),
}


@pytest.mark.parametrize("windows", list(WINDOWS))
@pytest.mark.parametrize("agg", ["count", "agg"])
def test_unsuppressed_windowed_aggregation_rejected_in_append_mode(spark, tmp_path, windows, agg) -> None:
    def build(d):
        w = d.kstate.windowed_by(WINDOWS[windows], key="k", timestamp="ts")
        return w.count() if agg == "count" else w.agg(F.sum("v").alias("s"))

    e = _error(lambda: _start(spark, tmp_path, build, "append"), "KSTATE_UNSUPPORTED_OUTPUT_MODE")
    assert "outputMode('update')" in e.message and "until_window_closes" in e.message


@pytest.mark.parametrize("windows", list(WINDOWS))
def test_suppressed_windowed_aggregation_runs_in_append_mode(spark, tmp_path, windows) -> None:
    def build(d):
        return (
            d.kstate.windowed_by(WINDOWS[windows], key="k", timestamp="ts")
            .count()
            .kstate.suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
        )

    _runs(spark, tmp_path, build, "append")


@pytest.mark.parametrize(
    "build,mode",
    [
        (lambda d: d.kstate.windowed_by(TimeWindows.of_size("10s"), key="k", timestamp="ts").count(), "update"),
        (lambda d: dedup(d, "by_key", "10s"), "update"),
        (lambda d: dedup(d, "by_key", "10s"), "append"),
        (lambda d: d.kstate.windowed_by(TimeWindows.of_size("10s"), key="k", timestamp="ts").distinct(), "append"),
        (
            lambda d: d.kstate.suppress(
                Suppressed.until_time_limit("1s", BufferConfig.unbounded()), key="k", timestamp="ts"
            ),
            "append",
        ),
    ],
    ids=["count_update", "dedup_update", "dedup_append", "distinct_append", "time_limit_append"],
)
def test_supported_output_modes_run(spark, tmp_path, build, mode) -> None:
    _runs(spark, tmp_path, build, mode, schema=DEDUP_SCHEMA + ", v LONG")


@pytest.mark.parametrize(
    "build",
    [
        lambda d: dedup(d, "by_key", "10s"),
        lambda d: d.kstate.windowed_by(TimeWindows.of_size("10s"), key="k", timestamp="ts").distinct(),
        lambda d: (
            d.kstate.windowed_by(TimeWindows.of_size("10s"), key="k", timestamp="ts")
            .count()
            .kstate.suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
        ),
    ],
    ids=["dedup", "distinct", "suppressed_count"],
)
def test_complete_mode_on_kstate_operators_alone_gives_kstates_error(spark, tmp_path, build) -> None:
    # Spark's own check would say "Complete output mode not supported when there are no
    # streaming aggregations"; kstate's check runs first.
    e = _error(
        lambda: _start(spark, tmp_path, build, "complete", schema=DEDUP_SCHEMA + ", v LONG"),
        "KSTATE_UNSUPPORTED_OUTPUT_MODE",
    )
    assert "complete" in e.message


def test_complete_mode_with_a_spark_aggregation_after_kstate_rejected_at_start(spark, tmp_path) -> None:
    build = lambda d: dedup(d, "by_key", "10s").groupBy("k").count()  # noqa: E731
    _error(lambda: _start(spark, tmp_path, build, "complete", schema=DEDUP_SCHEMA), "KSTATE_UNSUPPORTED_OUTPUT_MODE")


# --- the kstate state store provider: when the DataFrame is built, else at planning -------


def test_unknown_provider_class_named_when_built(spark, df) -> None:
    with session_conf(spark, {PROVIDER_KEY: "com.example.Nope"}):
        e = _error(lambda: dedup(df, "by_key", "10s"), "KSTATE_UNSUPPORTED_STATE_PROVIDER")
    assert PROVIDER_KEY in e.message and "com.example.Nope" in e.message and "class not found" in e.message


def test_provider_class_that_is_not_a_provider_named_when_built(spark, df) -> None:
    with session_conf(spark, {PROVIDER_KEY: "java.lang.String"}):
        e = _error(
            lambda: df.kstate.windowed_by(TimeWindows.of_size("10s"), key="k", timestamp="ts").count(),
            "KSTATE_UNSUPPORTED_STATE_PROVIDER",
        )
    assert "java.lang.String" in e.message and "StateStoreProvider" in e.message


def test_unknown_provider_class_set_after_building_named_when_the_query_starts(spark, tmp_path) -> None:
    fs = FileStream(spark, str(tmp_path / "src"), str(tmp_path / "ckpt"), lambda d: dedup(d, "by_key", "10s"))
    out = fs.build(fs.source())  # built with the default provider
    with session_conf(spark, {PROVIDER_KEY: "com.example.Nope"}):
        e = _error(
            lambda: (
                out.writeStream.option("checkpointLocation", fs.checkpoint)
                .format("memory")
                .queryName(f"nope_{os.getpid()}")
                .start()
            ),
            "KSTATE_UNSUPPORTED_STATE_PROVIDER",
        )
    assert "com.example.Nope" in e.message and "class not found" in e.message


# --- non-determinism through the DataFrame's lineage --------------------------------------

NONDET = {
    "uuid_key": (lambda d: d.withColumn("rk", F.expr("uuid()")), dict(key="rk")),
    "rand_key_in_list": (lambda d: d.withColumn("rk", F.rand()), dict(key=["k", "rk"])),
    "rand_timestamp": (lambda d: d.withColumn("t", (F.rand() * 1000).cast("long")), dict(timestamp="t")),
    "two_steps_away": (
        lambda d: d.withColumn("r", F.rand()).withColumn("rk", F.concat("k", F.col("r").cast("string"))),
        dict(key="rk"),
    ),
    "shuffle": (lambda d: d.withColumn("rk", F.shuffle(F.array("k", "id"))), dict(key="rk")),
    "through_select_alias": (
        lambda d: d.select("*", F.expr("uuid()").alias("u")).select("*", F.col("u").alias("rk")),
        dict(key="rk"),
    ),
    "id_column": (lambda d: d.withColumn("rid", F.expr("uuid()")), dict(id="rid")),
}


@pytest.mark.parametrize("case", list(NONDET))
def test_non_deterministic_upstream_column_rejected(df, case) -> None:
    prepare, args = NONDET[case]
    d = prepare(df)
    if "id" in args:
        make = lambda: d.kstate.deduplicate(args["id"], "10s", timestamp="ts")  # noqa: E731
    else:
        make = lambda: d.kstate.deduplicate_by_key(  # noqa: E731
            "10s", key=args.get("key", "k"), timestamp=args.get("timestamp", "ts")
        )
    e = _error(make, "KSTATE_NON_DETERMINISTIC_EXPRESSION")
    assert "'" in e.message and "non-deterministic" in e.message


def test_non_deterministic_upstream_key_rejected_for_windows(df) -> None:
    d = df.withColumn("rk", F.expr("uuid()"))
    _error(
        lambda: d.kstate.windowed_by(TimeWindows.of_size("10s"), key="rk", timestamp="ts"),
        "KSTATE_NON_DETERMINISTIC_EXPRESSION",
    )


def test_deterministic_upstream_columns_pass(df) -> None:
    d = (
        df.withColumn("uk", F.upper("k")).withColumn("t2", F.col("ts") + 1).withColumn("noise", F.rand())
    )  # a non-deterministic column the key does not read
    out = d.kstate.deduplicate_by_key("10s", key=["uk", "id"], timestamp="t2")
    assert out.columns == d.columns


# --- buffer limits and until_window_closes inputs -----------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: BufferConfig.max_bytes(2**70),
        lambda: BufferConfig.max_records(2**63),
        lambda: BufferConfig.unbounded().with_max_records(2**63),
        lambda: BufferConfig.max_records(5).with_max_bytes(2**64),
        lambda: BufferConfig.max_records(0),
        lambda: BufferConfig.max_bytes(-1),
    ],
    ids=["bytes_2_70", "records_2_63", "with_records_2_63", "with_bytes_2_64", "records_0", "bytes_negative"],
)
def test_buffer_limit_out_of_range_rejected_in_python(make) -> None:
    e = _error(make, "KSTATE_INVALID_BUFFER_CONFIG")
    assert "2**63 - 1" in e.message


def test_buffer_limit_at_the_top_of_the_range_reaches_the_jvm(spark) -> None:
    b = BufferConfig.max_records(2**63 - 1).with_max_bytes(2**63 - 1).shut_down_when_full()
    j = b._to_jvm(spark.sparkContext._jvm)
    assert j.maxRecords() == 2**63 - 1 and j.maxBytes() == 2**63 - 1


def test_until_window_closes_on_a_table_kstate_did_not_window(spark, tmp_path) -> None:
    stream = spark.readStream.schema(DEDUP_SCHEMA).json(str(tmp_path))
    e = _error(
        lambda: stream.kstate.suppress(Suppressed.until_window_closes(BufferConfig.unbounded())),
        "KSTATE_UNSUPPORTED_SUPPRESS",
    )
    assert "windowed_by" in e.message and "window_end=" in e.message
    # after a kstate operator that is not a windowed aggregation, too
    deduped = dedup(stream, "by_key", "10s")
    _error(
        lambda: deduped.kstate.suppress(Suppressed.until_window_closes(BufferConfig.unbounded())),
        "KSTATE_UNSUPPORTED_SUPPRESS",
    )
