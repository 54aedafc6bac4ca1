"""kstate's errors are PySpark errors: a condition, a SQLSTATE and message parameters from the one
conditions file (python/kstate/error_conditions.json), raised from Python and from the JVM (read
from the Java error object, not its text), and named at construction for the inputs that used to
fail late or with a raw error."""

from __future__ import annotations

import ast
import json
import pickle
from pathlib import Path

import kstate
import pytest
from kstate import KStateError
from kstate._jvm_errors import kstate_error_of
from kstate.errors import conditions, message_template, render
from pyspark.errors import IllegalArgumentException, PySparkException
from pyspark.sql import functions as F

PACKAGE = Path(kstate.__file__).resolve().parent


def _python_raises() -> list:
    """(file, condition, parameter names) of every ``KStateError("KSTATE_...", {...})`` in the package."""
    found = []
    for path in sorted(PACKAGE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", None) == "KStateError"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                params = node.args[1] if len(node.args) > 1 else None
                keys = None if not isinstance(params, ast.Dict) else {k.value for k in params.keys}
                found.append((path.name, node.args[0].value, keys))
    return found


def test_the_package_raises_conditions_of_the_file_with_their_parameters() -> None:
    raises = _python_raises()
    assert len(raises) > 20
    for file, condition, keys in raises:
        template = message_template(condition)  # KeyError: not in the file
        names = {n for n in __import__("re").findall(r"<([a-zA-Z0-9_-]+)>", template)}
        assert keys is None or keys == names, (file, condition, keys, names)


def test_a_python_error_is_a_pyspark_error() -> None:
    with pytest.raises(KStateError) as ei:
        kstate.TimeWindows.of_size(0)
    e = ei.value
    assert isinstance(e, PySparkException) and isinstance(e, ValueError)
    assert e.getCondition() == e.error_class == "KSTATE_INVALID_WINDOW"
    assert e.getSqlState() == "22023"
    assert e.getMessageParameters() == {"reason": "size must be > 0, got 0 ms"}
    assert str(e) == "[KSTATE_INVALID_WINDOW] Invalid window specification: size must be > 0, got 0 ms."
    assert e.message == "Invalid window specification: size must be > 0, got 0 ms."
    back = pickle.loads(pickle.dumps(e))
    assert (type(back), back.getCondition(), back.getMessageParameters(), str(back)) == (
        KStateError,
        e.getCondition(),
        e.getMessageParameters(),
        str(e),
    )


def test_a_sub_condition_follows_its_condition() -> None:
    e = KStateError("KSTATE_STATE_NOT_FOUND.NO_COMMITTED_BATCH", {"checkpoint": "/c"})
    assert e.error_class == "KSTATE_STATE_NOT_FOUND" and e.getSqlState() == "42K03"
    assert e.message.startswith("Cannot read kstate state: checkpoint /c has no committed micro-batch")


def test_a_missing_parameter_is_a_bug_not_a_half_message() -> None:
    with pytest.raises(KeyError):
        render("KSTATE_INVALID_WINDOW", {})
    with pytest.raises(KeyError):
        KStateError("KSTATE_NO_SUCH_CONDITION", {})


def test_the_conditions_file_is_spark_shaped() -> None:
    raw = (PACKAGE / "error_conditions.json").read_text(encoding="utf-8")
    assert raw == json.dumps(json.loads(raw), indent=2) + "\n", "keep the file as json.dumps(indent=2) writes it"
    for name, info in conditions().items():
        assert set(info) <= {"message", "sqlState", "subClass"}, name  # Spark's reader refuses other keys
        assert len(info["sqlState"]) == 5 and info["message"], name


def test_a_jvm_error_is_read_from_the_java_object(spark) -> None:
    jvm = spark.sparkContext._jvm
    with pytest.raises(PySparkException) as ei:  # pyspark converts py4j's errors
        jvm.io.kstate.Durations.toMillis("interval", "ten seconds")
    captured = ei.value
    java = captured._origin
    # pyspark's own conversion already understands it: a SparkThrowable
    assert isinstance(captured, IllegalArgumentException)
    assert captured.getCondition() == "KSTATE_INVALID_DURATION"
    assert captured.getSqlState() == "22023"
    assert captured.getMessageParameters()["value"] == "ten seconds"
    # kstate's: the same condition, parameters and SQLSTATE, and the text rendered from the same template
    k = kstate_error_of(ei.value)
    assert isinstance(k, KStateError)
    assert (k.getCondition(), k.getSqlState(), k.getMessageParameters()) == (
        "KSTATE_INVALID_DURATION",
        "22023",
        dict(java.getMessageParameters()),
    )
    assert str(java.getMessage()) == f"[KSTATE_INVALID_DURATION] {k.message} SQLSTATE: 22023"


def test_a_jvm_error_at_construction_carries_its_parameters(spark) -> None:
    df = spark.createDataFrame([(1, "a", 1000)], "seq LONG, k STRING, ts LONG")
    with pytest.raises(KStateError) as ei:
        df.kstate.deduplicate_by_key("10 seconds", key="nope", timestamp="ts")
    assert ei.value.getCondition() == "KSTATE_MISSING_COLUMN"
    assert ei.value.getMessageParameters()["role"] == "key"


def test_a_null_type_key_is_refused_at_construction(spark) -> None:
    df = spark.createDataFrame([(1, "a", 1000)], "seq LONG, k STRING, ts LONG")
    with pytest.raises(KStateError) as ei:
        df.kstate.deduplicate_by_key("10 seconds", key=F.lit(None), timestamp="ts")
    assert ei.value.getCondition() == "KSTATE_INVALID_KEY_TYPE.NULL_TYPE"
    assert ei.value.getMessageParameters() == {"role": "key", "dataType": "VOID"}
    with pytest.raises(KStateError) as ei:
        df.kstate.deduplicate_by_key_value(F.lit(None), "10 seconds", key="k", timestamp="ts")
    assert ei.value.getCondition() == "KSTATE_INVALID_KEY_TYPE.NULL_TYPE"
    with pytest.raises(KStateError) as ei:
        df.withColumn("nk", F.lit(None)).kstate.to_table(key="nk", timestamp="ts")
    assert ei.value.getCondition() == "KSTATE_INVALID_KEY_TYPE.NULL_TYPE"
    # a typed null key is a key like any other
    df.kstate.deduplicate_by_key("10 seconds", key=F.lit(None).cast("string"), timestamp="ts")


def test_read_table_and_read_state_name_bad_arguments(spark, tmp_path) -> None:
    for call in (
        lambda: kstate.read_table(None, str(tmp_path), "t"),
        lambda: kstate.read_state(None, str(tmp_path), "op"),
        lambda: kstate.repartition_state(None, str(tmp_path), 2),
    ):
        with pytest.raises(KStateError) as ei:
            call()
        assert ei.value.getCondition() == "KSTATE_INVALID_SESSION", ei.value
        assert ei.value.getMessageParameters() == {"type": "NoneType"}
    for call, what in (
        (lambda: kstate.read_table(spark, str(tmp_path), "t", as_of=2**70), "as_of"),
        (lambda: kstate.read_table(spark, str(tmp_path), "t", as_of=-(2**63) - 1), "as_of"),
        (lambda: kstate.read_state(spark, str(tmp_path), "op", batch_id=2**64), "batch_id"),
        (lambda: kstate.read_state(spark, str(tmp_path), 2**63), "operator"),
    ):
        with pytest.raises(KStateError) as ei:
            call()
        assert ei.value.getCondition() == "KSTATE_INVALID_STATE_READ"
        assert what in ei.value.message and "64-bit long" in ei.value.message
    # the largest long is an argument like any other: the checkpoint is what is missing
    with pytest.raises(KStateError) as ei:
        kstate.read_table(spark, str(tmp_path / "none"), "t", as_of=2**63 - 1)
    assert ei.value.getCondition() == "KSTATE_CHECKPOINT_NOT_FOUND"


def test_versioned_table_values_are_checked_however_made(spark) -> None:
    jvm = spark.sparkContext._jvm
    VT = jvm.io.kstate.tables.VersionedTable
    for make in (lambda: VT.apply(-5, -7), lambda: VT.ofMillis(10).copy(10, 11), lambda: VT.ofMillis(10).copy(-1, 0)):
        with pytest.raises(PySparkException) as ei:
            make()
        k = kstate_error_of(ei.value)
        assert k is not None and k.getCondition() == "KSTATE_INVALID_VERSIONED_STORE", ei.value
    # Kafka's rule: a history retention of 0 is valid (the latest value per key)
    assert VT.ofMillis(0).historyRetentionMs() == 0
    assert kstate.VersionedTable(0).history_retention_ms == 0
    with pytest.raises(KStateError) as ei:
        kstate.VersionedTable("1 hour", grace="2 hours")
    assert ei.value.getCondition() == "KSTATE_INVALID_VERSIONED_STORE"
    assert ei.value.getMessageParameters()["graceMs"] == "7200000"
