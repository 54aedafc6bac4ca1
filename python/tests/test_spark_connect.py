"""kstate through Spark Connect: pyspark's bundled Connect server with kstate's plugin
(docs/connect.md), one server for the module (``connect_server.py``).

Each test runs the same pipeline through the Connect session (``remote``) and, where it is cheap,
through the tests' classic session (``spark``), and checks both against the expected output: the
KIP-655 examples, a KIP-328 suppressed windowed count, a stream–table join, tables, a streaming
query restarted on its checkpoint, ``read_state``/``read_table``/``replica_status``, and the named
errors (a bad argument when the DataFrame is built; a server without the plugin).
"""

from __future__ import annotations

import os
import re
from typing import Any, List

import kstate
import pytest
from _streaming import (
    SCHEMA,
    STREAM_ORDER,
    FileStream,
    dedup,
    file_name,
    run_batch_df,
    run_stream,
    session_conf,
    write_json_lines,
)
from connect_server import ConnectServer, remote_session
from kstate import BufferConfig, KStateError, Suppressed, TimeWindows, VersionedTable
from kstate._jvm_errors import kstate_error_of
from pyspark.errors import StreamingQueryException
from pyspark.sql.connect import functions as CF
from test_dedup_kip_examples import EXAMPLES, MODES, TS_SCHEMA, example_records, expected_seqs, interval_arg

S = 1000


@pytest.fixture(scope="module")
def server(request):
    with ConnectServer() as s:
        failed = request.session.testsfailed
        yield s
        if request.session.testsfailed > failed:  # shown in the report of the module's last test
            print(f"Spark Connect server log ({s.url}):\n{s.log_tail()}")


@pytest.fixture(scope="module")
def remote(server):
    session = remote_session(server.url)
    yield session
    session.stop()


def _sorted(rows: List[Any]) -> List[tuple]:
    return sorted((tuple(r) for r in rows), key=repr)  # rows may hold nulls


# --- KIP-655 ------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_kip655_examples_batch_as_on_a_classic_session(spark, remote, mode) -> None:
    for example in EXAMPLES:
        build = lambda df, example=example: dedup(df, mode, interval_arg(example, mode), ts="ts_ms")
        recs = example_records(example, mode)
        got = run_batch_df(remote, build, recs, schema=TS_SCHEMA)
        assert sorted(r["seq"] for r in got) == expected_seqs(example), example
        assert _sorted(got) == _sorted(run_batch_df(spark, build, recs, schema=TS_SCHEMA)), example


@pytest.mark.parametrize("mode", MODES)
def test_kip655_example_streaming_one_record_per_micro_batch(remote, session_tmp, mode) -> None:
    example = "late_example_1"
    recs = example_records(example, mode)
    with session_conf(remote, STREAM_ORDER):
        res = run_stream(
            remote,
            str(session_tmp.mktemp("kip655")),
            lambda df: dedup(df, mode, interval_arg(example, mode), ts="ts_ms"),
            [[r] for r in recs],
            schema=TS_SCHEMA,
            sink="memory",
        )
    assert res.seqs == expected_seqs(example)


# --- KIP-328 ------------------------------------------------------------------------------------

WINDOW_SCHEMA = "seq LONG, k STRING, ts LONG, v LONG"
WINDOW_BATCHES = [
    [dict(seq=0, k="a", ts=1 * S, v=1), dict(seq=1, k="b", ts=2 * S, v=1), dict(seq=2, k="a", ts=4 * S, v=1)],
    [dict(seq=3, k="a", ts=9 * S, v=1), dict(seq=4, k="a", ts=12 * S, v=1)],  # [0,10) open: grace 5 s
    [dict(seq=5, k="a", ts=3 * S, v=1), dict(seq=6, k="b", ts=16 * S, v=1)],  # 16 >= 15: [0,10) closes
    [dict(seq=7, k="a", ts=31 * S, v=1), dict(seq=8, k="b", ts=31 * S, v=1)],  # closes [10,20)
]


def _final_counts(df):
    return (
        df.kstate.windowed_by(TimeWindows.of_size("10 seconds").grace("5 seconds"), key="k", timestamp="ts")
        .count()
        .kstate.suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
    )


def test_kip328_final_window_counts_as_on_a_classic_session(spark, remote, session_tmp) -> None:
    def run(session):
        with session_conf(session, STREAM_ORDER):
            res = run_stream(
                session,
                str(session_tmp.mktemp("kip328")),
                _final_counts,
                WINDOW_BATCHES,
                schema=WINDOW_SCHEMA,
                sink="memory",
            )
        return sorted((r["k"], r["window_start"], r["count"]) for r in res.rows)

    got = run(remote)
    # one final row per key and window, once it closed; the late a@3 of batch 3 counts (grace 5 s)
    assert got == [("a", 0, 4), ("a", 10 * S, 1), ("b", 0, 1), ("b", 10 * S, 1)]
    assert got == run(spark)


# --- tables -------------------------------------------------------------------------------------

JOIN_SCHEMA = "side STRING, k STRING, v STRING, ts LONG"
JOIN_RECORDS = [
    dict(side="t", k="a", v="a0", ts=0),
    dict(side="t", k="a", v="a4", ts=4),
    dict(side="s", k="a", v="s2", ts=2),
    dict(side="s", k="a", v="s5", ts=5),
    dict(side="s", k="b", v="s6", ts=6),
]


def _stream_table_join(df):
    stream = df.filter(df["side"] == "s").select("k", df["v"].alias("sv"), "ts")
    updates = df.filter(df["side"] == "t").select("k", df["v"].alias("tv"), "ts")
    table = updates.kstate.to_table(key="k", timestamp="ts", versioned=VersionedTable(100))
    return stream.kstate.join(table, key="k", timestamp="ts", how="left")


def test_stream_table_join_as_on_a_classic_session(spark, remote) -> None:
    got = run_batch_df(remote, _stream_table_join, JOIN_RECORDS, schema=JOIN_SCHEMA)
    # KIP-914: each stream record joins the table as of its own time
    assert sorted((r["sv"], r["tv"]) for r in got) == [("s2", "a0"), ("s5", "a4"), ("s6", None)]
    assert _sorted(got) == _sorted(run_batch_df(spark, _stream_table_join, JOIN_RECORDS, schema=JOIN_SCHEMA))


def test_table_values_and_aggregations_as_on_a_classic_session(spark, remote) -> None:
    def describe(session):
        df = session.createDataFrame(
            [("u1", "eu", 10, 1), ("u2", "us", 20, 2), ("u1", "us", 30, 3)],
            "k STRING, region STRING, amount INT, ts LONG",
        )
        table = df.kstate.to_table(key="k", timestamp="ts", versioned=VersionedTable("1 day"))
        F = kstate._connect.functions(session)
        big = table.filter(F.col("amount") > 5)
        sums = big.group_by("region", value="amount").sum("amount").to_stream()
        return (
            table.is_versioned,
            table.key_column,
            table.timestamp_column,
            table.value_columns,
            big.is_versioned,
            _sorted(sums.collect()),
        )

    got = describe(remote)
    assert got[:5] == (True, "k", "ts", ["region", "amount"], True)
    assert got == describe(spark)


# --- restart, state readers ---------------------------------------------------------------------

RESTART_BATCHES = [
    [dict(seq=1, k="a", id="x", ts=100 * S), dict(seq=2, k="b", id="x", ts=101 * S)],
    [dict(seq=3, k="a", id="x", ts=105 * S), dict(seq=4, k="c", id="x", ts=106 * S)],  # a: duplicate
    [dict(seq=5, k="a", id="x", ts=111 * S), dict(seq=6, k="b", id="x", ts=108 * S)],  # b: duplicate
    [dict(seq=7, k="c", id="x", ts=95 * S), dict(seq=8, k="a", id="x", ts=118 * S)],  # c late; a dup
]


def _run_in_parts(session, root: str, parts) -> List[int]:
    """Deduplication of RESTART_BATCHES into a JSON file sink (exactly once across restarts: the
    memory sink cannot restart), one query per part on one checkpoint; the output seqs."""
    src, ckpt, out = (os.path.join(root, d) for d in ("src", "ckpt", "out"))
    os.makedirs(src)
    n = 0
    for part in parts:
        source = session.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(src)
        q = (
            source.kstate.deduplicate_by_key("10 seconds", key="k", timestamp="ts", name="dedup")
            .writeStream.format("json")
            .option("path", out)
            .option("checkpointLocation", ckpt)
            .start()
        )
        try:
            for b in part:
                write_json_lines(src, file_name(n), b)
                n += 1
                q.processAllAvailable()
            # the server's replica table: one store per state partition, no standby wanted
            assert sorted((e["partition"], e["store"], e["standbys"]) for e in kstate.replica_status(q)) == [
                (0, "default", []),
                (1, "default", []),
            ]
        finally:
            q.stop()
    return sorted(r["seq"] for r in session.read.schema(SCHEMA).json(out).collect())


def test_restarted_query_gives_the_uninterrupted_output_and_the_same_state(spark, remote, session_tmp) -> None:
    with session_conf(remote, STREAM_ORDER):
        whole = _run_in_parts(remote, str(session_tmp.mktemp("whole")), [RESTART_BATCHES])
        root = str(session_tmp.mktemp("restart"))
        restarted = _run_in_parts(remote, root, [RESTART_BATCHES[:2], RESTART_BATCHES[2:]])
    assert restarted == whole == [1, 2, 4, 5, 7]
    ckpt = os.path.join(root, "ckpt")
    state = kstate.read_state(remote, ckpt, "dedup")
    assert _sorted(state.collect()) == _sorted(kstate.read_state(spark, ckpt, "dedup").collect())
    assert sorted(r["key"]["identity_0"] for r in state.collect()) == ["a", "b", "c"]
    assert kstate.read_state(remote, ckpt, "dedup", batch_id=0).count() == 2


def test_a_running_querys_kstate_error_is_a_kstate_error(remote, session_tmp) -> None:
    root = str(session_tmp.mktemp("changed"))
    src, ckpt = os.path.join(root, "src"), os.path.join(root, "ckpt")
    os.makedirs(src)
    write_json_lines(src, file_name(0), RESTART_BATCHES[0])

    def start(interval: str):
        source = remote.readStream.schema(SCHEMA).json(src)
        return (
            source.kstate.deduplicate_by_key(interval, key="k", timestamp="ts", name="dedup")
            .writeStream.format("noop")
            .option("checkpointLocation", ckpt)
            .start()
        )

    q = start("10 seconds")
    q.processAllAvailable()
    q.stop()
    write_json_lines(src, file_name(1), RESTART_BATCHES[1])
    q = start("20 seconds")  # restarted with another interval: the state means something else
    try:
        with pytest.raises(kstate.KStateStreamingQueryError) as ei:
            q.processAllAvailable()
    finally:
        q.stop()
    err = ei.value
    assert err.error_class == "KSTATE_OPERATOR_CONFIG_CHANGED"
    assert isinstance(err, StreamingQueryException) and "JVM stacktrace" not in err.message
    # the kstate error's condition, SQLSTATE and parameters, as the server sent them (not parsed from text)
    assert (err.getCondition(), err.getSqlState()) == ("KSTATE_OPERATOR_CONFIG_CHANGED", "42K03")
    params = err.getMessageParameters()
    assert params["operator"] == "dedup" and "10000" in params["stored"] and "20000" in params["current"], params
    later = q.exception()
    assert isinstance(later, kstate.KStateError) and isinstance(later, StreamingQueryException)
    assert (later.getCondition(), later.getMessageParameters()) == ("KSTATE_OPERATOR_CONFIG_CHANGED", params)
    # an error when the query starts: kstate's operators have no complete mode
    with pytest.raises(KStateError) as ei:
        (
            remote.readStream.schema(SCHEMA)
            .json(src)
            .kstate.deduplicate("id", "10s", timestamp="ts")
            .writeStream.format("noop")
            .outputMode("complete")
            .start()
        )
    assert ei.value.error_class == "KSTATE_UNSUPPORTED_OUTPUT_MODE"
    assert ei.value.getCondition() == "KSTATE_UNSUPPORTED_OUTPUT_MODE.RETRACTION"
    assert ei.value.getMessageParameters()["mode"] == "complete", ei.value.getMessageParameters()


def test_read_table_as_on_a_classic_session(spark, remote, session_tmp) -> None:
    def build(df):
        return df.kstate.to_table(key="k", timestamp="ts", versioned=VersionedTable("1 day"), name="t").to_stream()

    root = str(session_tmp.mktemp("read_table"))
    with session_conf(remote, STREAM_ORDER):
        with FileStream(remote, os.path.join(root, "src"), os.path.join(root, "ckpt"), build, sink="memory") as fs:
            fs.add_batch([dict(seq=1, k="a", id="v1", ts=1 * S), dict(seq=2, k="b", id="v1", ts=2 * S)])
            fs.add_batch([dict(seq=3, k="a", id="v2", ts=5 * S)])
    ckpt = os.path.join(root, "ckpt")
    for as_of in (None, 3 * S):
        got = _sorted(kstate.read_table(remote, ckpt, "t", as_of).collect())
        assert got == _sorted(kstate.read_table(spark, ckpt, "t", as_of).collect())
    assert sorted((r["k"], r["id"]) for r in kstate.read_table(remote, ckpt, "t", 3 * S).collect()) == [
        ("a", "v1"),
        ("b", "v1"),
    ]


# --- errors -------------------------------------------------------------------------------------


def _events(session):
    return session.createDataFrame([(1, "a", "x", 1000)], "seq LONG, k STRING, id STRING, ts LONG")


BAD_ARGUMENTS = {
    "KSTATE_MISSING_COLUMN": lambda df: df.kstate.deduplicate_by_key("10s", key="nope", timestamp="ts"),
    "KSTATE_INVALID_TIMESTAMP_TYPE": lambda df: df.kstate.windowed_by(
        TimeWindows.of_size("10s"), key="k", timestamp="id"
    ),
    "KSTATE_INVALID_OPERATOR_NAME": lambda df: df.kstate.deduplicate("id", "10s", timestamp="ts", name="a b"),
    "KSTATE_INVALID_PROCESSING_ORDER": lambda df: df.kstate.deduplicate("id", "10s", timestamp="ts", order="x"),
    "KSTATE_NON_DETERMINISTIC_EXPRESSION": lambda df: df.kstate.deduplicate(
        kstate._connect.functions(df.sparkSession).rand(), "10s", timestamp="ts"
    ),
    "KSTATE_SUPPRESS_ON_VERSIONED_TABLE": lambda df: df.kstate.to_table(
        key="k", timestamp="ts", versioned=VersionedTable(100)
    ).suppress(Suppressed.until_time_limit("1s", BufferConfig.unbounded())),
}


@pytest.mark.parametrize("error_class", list(BAD_ARGUMENTS))
def test_a_bad_argument_fails_when_the_dataframe_is_built(spark, remote, error_class) -> None:
    messages = []
    for session in (remote, spark):
        with pytest.raises(KStateError) as ei:
            BAD_ARGUMENTS[error_class](_events(session))
        assert ei.value.error_class == error_class, (session, str(ei.value))
        # the same words; plans (a Connect DataFrame's is a LocalRelation, a classic one's a
        # LogicalRDD), expression ids and rand()'s seeds differ
        messages.append(re.sub(r"-?\d+L?", "N", ei.value.message.split("\n")[0]))
    assert messages[0] == messages[1]
    assert "JVM stacktrace" not in ei.value.message


def test_a_client_of_another_kstate_version_works_where_the_schema_allows(remote, monkeypatch) -> None:
    """The protocol is the schema, not the version: an older client (fields the server has and the
    client does not send keep their defaults) and a newer one (fields the server does not know are
    ignored) work; only an operation the server does not know is refused, by name."""
    from kstate.proto import connect_pb2 as pb

    events = remote.createDataFrame(
        [(1, "a", "x", 1000), (2, "a", "x", 2000), (3, "b", "y", 3000)], "seq LONG, k STRING, id STRING, ts LONG"
    )
    monkeypatch.setattr(kstate._jvm, "__version__", "0.0.1")
    got = events.kstate.deduplicate("id", "10s", timestamp="ts").select("seq").collect()
    assert sorted(r[0] for r in got) == [1, 3]
    # a newer client: a field the server's DeduplicateByKey does not have (number 99) is ignored
    msg = kstate._connect.message(
        events.kstate._jkstate().deduplicateByKey(
            kstate._connect.RemoteJvm(remote).java.time.Duration.ofMillis(10000),
            kstate._connect.ColumnArg(CF.col("k")),
            kstate._connect.ColumnArg(CF.col("ts")),
            None,
        ),
        remote,
    )
    dedup = msg.stream.deduplicate_by_key.SerializeToString() + bytes([0x98, 0x06, 0x01])  # field 99, varint 1
    newer = pb.KStateRelation(client_version="9.9.9")
    newer.stream.deduplicate_by_key.ParseFromString(dedup)  # keeps the unknown field
    assert len(newer.SerializeToString()) > len(msg.SerializeToString())
    rows = _raw_extension_df(remote, newer.SerializeToString()).select("seq").collect()
    assert sorted(r[0] for r in rows) == [1, 3]
    # a newer client's operation: KStateRelation field 50, which this server does not know
    unknown = pb.KStateRelation(client_version="9.9.9").SerializeToString() + bytes(
        [0x92, 0x03, 0x00]
    )  # field 50, empty
    with pytest.raises(Exception) as ei:
        _ = _raw_extension_df(remote, unknown).schema
    err = kstate_error_of(ei.value)
    assert err is not None and err.error_class == "KSTATE_CONNECT_UNKNOWN_OPERATION", str(ei.value)[:1500]
    assert "field 50" in err.message and "KStateRelation" in err.message


def test_a_server_without_the_plugin_names_the_setting_to_add() -> None:
    with ConnectServer(with_kstate=False) as bare:
        session = remote_session(bare.url)
        try:
            with pytest.raises(KStateError) as ei:
                _events(session).kstate.deduplicate("id", "10s", timestamp="ts")
        finally:
            session.stop()
    assert ei.value.error_class == "KSTATE_CONNECT_PLUGIN_MISSING"
    assert "spark.connect.extensions.relation.classes=io.kstate.KStateConnectPlugin" in ei.value.message


def test_the_pipeline_test_driver_needs_a_classic_session(remote) -> None:
    from kstate.testing import PipelineTestDriver

    with pytest.raises(KStateError) as ei:
        PipelineTestDriver(remote, "k STRING, ts LONG", lambda events: events)
    assert ei.value.error_class == "KSTATE_TEST_DRIVER_NEEDS_CLASSIC_SESSION"


def test_every_other_operation_as_on_a_classic_session(spark, remote) -> None:
    """The table joins and aggregations, the windowed aggregations and distinct: batch DataFrames,
    the same rows on both sessions."""
    from kstate import SessionWindows, SlidingWindows

    def results(session):
        F = kstate._connect.functions(session)
        orders = session.createDataFrame(
            [("o1", "c1", 10, 1), ("o2", "c2", 20, 2), ("o1", "c2", 30, 3)],
            "oid STRING, cid STRING, amount INT, ts LONG",
        ).kstate.to_table("oid", "ts")
        customers = session.createDataFrame(
            [("c1", "ann", 0), ("c2", "bob", 0)], "cid STRING, name STRING, ts LONG"
        ).kstate.to_table("cid", "ts")
        events = session.createDataFrame(
            [("a", 1000, 1), ("a", 2000, 2), ("a", 9000, 3), ("b", 1500, 4)], "k STRING, ts LONG, v LONG"
        )
        by_region = orders.group_by("cid", value="amount")
        out = {
            "fk_join": orders.join(customers, foreign_key="cid", how="left").to_stream(),
            "pk_join": orders.map_values(F.col("amount"))
            .join(orders.map_values((F.col("amount") * 2).alias("double")), how="outer")
            .to_stream(),
            "agg": by_region.agg(F.count("*").alias("n"), F.sum("amount")).to_stream(),
            "reduce": by_region.reduce(lambda a, v: a + v, lambda a, v: a - v).to_stream(),
            "aggregate": by_region.aggregate(0, lambda a, v: a + v, lambda a, v: a - v).to_stream(),
            "filter_not": orders.filter_not(F.col("amount") > 15).to_stream(),
            "sliding": events.kstate.windowed_by(
                SlidingWindows.of_time_difference("5 seconds"), key="k", timestamp="ts"
            ).sum("v"),
            "session": events.kstate.windowed_by(
                SessionWindows.with_inactivity_gap("2 seconds"), key=["k"], timestamp="ts"
            ).distinct(),
            "hopping": events.kstate.windowed_by(
                TimeWindows.of_size("4 seconds").advance_by("2 seconds"), key="k", timestamp="ts", order="event_time"
            ).max("v"),
        }
        return {name: _sorted(df.collect()) for name, df in out.items()}

    got = results(remote)
    assert all(got.values()), got
    assert got == results(spark)


# --- crafted messages: named errors, and the server stays healthy -------------------------------


def _raw_extension_df(session: Any, value: bytes) -> Any:
    """A Connect DataFrame whose relation carries ``value`` as kstate's message, byte for byte:
    what a client other than kstate's could send."""
    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame
    from pyspark.sql.connect.plan import LogicalPlan

    class Raw(LogicalPlan):
        def __init__(self) -> None:
            super().__init__(None)

        def plan(self, s: Any) -> Any:
            rel = self._create_proto_relation()
            rel.extension.type_url = kstate._connect.TYPE_URL
            rel.extension.value = value
            return rel

    return ConnectDataFrame(Raw(), session)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _nested_tables(depth: int) -> bytes:
    """A table filtered ``depth`` times, as bytes (messages nested about twice as deep; too deep for
    the Python protobuf library to build, as for any well-behaved client)."""

    def field(number: int, payload: bytes) -> bytes:
        return _varint(number << 3 | 2) + _varint(len(payload)) + payload

    table = field(1, b"")  # Table.to_table, empty
    for _ in range(depth):
        table = field(2, field(1, table) + field(2, b""))  # Table.filter = TableFilter(table, condition)
    return field(1, kstate._jvm.__version__.encode()) + field(3, table)  # KStateRelation.table


CRAFTED = {
    # field 1, length-delimited, claiming 2^31 - 3 bytes: the server allocated 2 GB and died of an OutOfMemoryError
    "huge_length": _varint(1 << 3 | 2) + _varint((1 << 31) - 3) + b"\x01" * 7,
    # a length that wraps around when cut to 32 bits: protobuf reads lengths as 32-bit numbers, so
    # this is a 1-byte client version and no call (refused by name as that)
    "wrapping_length": _varint(1 << 3 | 2) + _varint((1 << 32) + 1) + b"\x01",
    # 1000 nested calls: a stack overflow, seen by the client as an empty gRPC UNKNOWN
    "deep_nesting": _nested_tables(1000),
    # not a protobuf message at all
    "garbage": bytes(range(256)) * 4,
}


@pytest.mark.parametrize("name", list(CRAFTED))
def test_a_crafted_message_is_refused_by_name_and_the_server_stays_healthy(remote, name) -> None:
    value = CRAFTED[name]
    if name == "huge_length":
        assert len(value) == 13
    with pytest.raises(Exception) as ei:
        _ = _raw_extension_df(remote, value).schema
    err = kstate_error_of(ei.value)
    expected = "KSTATE_CONNECT_INVALID_CALL" if name == "wrapping_length" else "KSTATE_CONNECT_MALFORMED_MESSAGE"
    assert err is not None and err.error_class == expected, str(ei.value)[:2000]
    assert "same kstate version" not in err.message
    # the same session goes on: a kstate call answers as before
    events = remote.createDataFrame(
        [(1, "a", "x", 1000), (2, "a", "x", 2000), (3, "b", "y", 3000)], "seq LONG, k STRING, id STRING, ts LONG"
    )
    got = events.kstate.deduplicate("id", "10s", timestamp="ts").select("seq").collect()
    assert sorted(r[0] for r in got) == [1, 3]
