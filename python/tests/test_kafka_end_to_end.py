"""kstate on a real Kafka broker, end to end (docs/kafka.md).

A single-node KRaft broker (``kafka_broker.KafkaBroker``, started once for the module on free
loopback ports, stopped at teardown) and Spark's own Kafka source and sink
(``spark-sql-kafka-0-10`` 4.2.0 on Spark 4.3, on the tests' session through ``spark.jars``).
The kill -9 test starts a separate Spark driver process (``_kafka_driver.py``) twice.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from typing import Any, Dict, List

import _kafka_pipeline as kp
import pytest
from _streaming import kill9_when_paused, partition_map, unique
from kafka_broker import KafkaBroker, KafkaClients, read_topic

STATE_PARTITIONS = 2  # spark.sql.shuffle.partitions of the tests' session (and the driver's)


@pytest.fixture(scope="module")
def broker():
    with KafkaBroker(partitions=kp.PARTITIONS) as b:
        yield b


@pytest.fixture(scope="module")
def clients(spark, broker):
    c = KafkaClients(spark, broker.bootstrap)
    yield c
    c.close()


@pytest.fixture(scope="module")
def state_partition(spark):
    pm = partition_map(spark, kp.KEYS, "string", STATE_PARTITIONS)
    return lambda k: pm[k]


def _topics(clients: KafkaClients, *names: str) -> List[str]:
    out = []
    for n in names:
        t = unique(n)
        clients.create_topic(t, kp.PARTITIONS)
        out.append(t)
    return out


def test_duplicates_disorder_and_late_records_through_kafka_match_the_reference_model(
    spark, broker, clients, state_partition, tmp_path
) -> None:
    """Topic (3 partitions, record timestamps as event time) -> dedup -> windowed count suppressed
    until its windows close -> Kafka sink: what a consumer reads equals the model's final windows,
    and each micro-batch wrote as many records as the model emits for it."""
    topic_in, topic_out = _topics(clients, "kstate_e2e_in", "kstate_e2e_out")
    batches = kp.generate(seed=17)
    expected, stats = kp.model_output(batches, state_partition, STATE_PARTITIONS)
    assert stats["duplicates"] > 0 and stats["late_forwarded"] > 0 and stats["late_dropped"] > 0, stats
    written, plan = kp.run_batches(
        spark, clients, broker.bootstrap, topic_in, topic_out, str(tmp_path / "checkpoint"), batches
    )
    # auto: Kafka task order for the dedup (it reads the topic), event time for the windows
    assert plan.count("order=auto(task)") == 1 and plan.count("order=auto(event_time)") == 1, plan
    assert written == [len(e) for e in expected]
    consumed = read_topic(spark, broker.bootstrap, topic_out)
    assert all(r["key"] == json.loads(r["value"])["k"] for r in consumed)
    assert sorted(kp.window_of(r["value"]) for r in consumed) == sorted(w for e in expected for w in e)


# One topic-partition's records are processed in offset order, the topic-partitions merged by their
# head timestamps (a Kafka task); under event-time order the earliest timestamp would win.
ORDER_RECORDS = [  # (partition, ts offset from BASE_TS, key, id, seq), in offset order per partition
    (0, 5000, "a", "x", 0),
    (0, 4000, "a", "x", 1),  # offset order beats time: seq 0 wins
    (1, 6001, "b", "y", 2),
    (1, 1001, "b", "y", 3),  # heads 6001 (p1) and 3002 (p2):
    (2, 3002, "b", "y", 4),  # p2's seq 4 first, then p1's 2 and 3
]


@pytest.mark.parametrize(
    "order, explained, winners",
    [
        (None, "order=auto(task)", [0, 4]),
        ("event_time", "order=event_time", [1, 3]),
    ],
    ids=["auto_is_task_order", "event_time"],
)
def test_a_topic_is_processed_in_kafka_task_order(spark, broker, clients, tmp_path, order, explained, winners) -> None:
    """Dedup's "first wins" on one micro-batch of a 3-partition topic: under ``auto`` the first is
    the first in Kafka task order (offset order within a partition, the partition with the
    smallest head timestamp next), not the earliest timestamp, not partition 1 before 2."""
    (topic,) = _topics(clients, "kstate_order")
    clients.produce(
        topic,
        [
            dict(partition=p, ts=kp.BASE_TS + t, key=k, value=json.dumps({"id": i, "seq": s}))
            for p, t, k, i, s in ORDER_RECORDS
        ],
    )
    out = kp.events(kp.source(spark, broker.bootstrap, topic)).kstate.deduplicate_by_key_value(
        "id", "10 seconds", key="k", timestamp="ts", order=order
    )
    name = unique("kstate_order_q")
    q = (
        out.writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination(120)
    assert q.exception() is None, q.exception()
    assert explained in kp.explain(q)
    assert sorted(r["seq"] for r in spark.table(name).collect()) == winners


def test_a_table_join_reads_its_tables_sources_only_when_both_take_the_same_order(spark, broker, clients, tmp_path):
    """Two tables straight from ``to_table``: the join does both sources' work (one operator) when
    the sources process their updates in the same order. Under ``auto`` two Kafka tables both take
    Kafka task order; a Kafka table and a file table do not agree (task order, event time), so
    each keeps its own operator and the Kafka table its own order (docs/tables.md, "One
    materialization per table: the join reads its tables' sources")."""
    from pyspark.sql import functions as F

    ta, tb = _topics(clients, "kstate_tj_a", "kstate_tj_b")
    for topic, v in ((ta, "x"), (tb, "y")):
        clients.produce(
            topic, [dict(partition=0, ts=kp.BASE_TS + 1000, key="a", value=json.dumps({"id": v, "seq": 0}))]
        )
    files = tmp_path / "files"
    files.mkdir()
    (files / "part-0.json").write_text(json.dumps({"k": "a", "vf": "z", "ts": "2026-01-01T00:00:02Z"}) + "\n")

    def kafka_table(topic: str, column: str):
        rows = kp.events(kp.source(spark, broker.bootstrap, topic))
        return rows.select("k", F.col("id").alias(column), "ts").kstate.to_table("k", "ts")

    file_table = (
        spark.readStream.schema("k STRING, vf STRING, ts TIMESTAMP").json(str(files)).kstate.to_table("k", "ts")
    )
    cases = [
        ("kafka", kafka_table(tb, "vb"), {"kstate_table_join"}, ("a", "x", "y"), ["order=auto(task)"]),
        ("file", file_table, {"kstate_table", "kstate_table_join"}, ("a", "x", "z"), ["order=auto(event_time)"]),
    ]
    for tag, right, operators, row, orders in cases:
        name = unique(f"kstate_tj_{tag}")
        q = (
            kafka_table(ta, "va")
            .join(right, how="inner")
            .to_stream()
            .writeStream.format("memory")
            .queryName(name)
            .option("checkpointLocation", str(tmp_path / f"ckpt_{tag}"))
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination(120)
        assert q.exception() is None, q.exception()
        progress = [json.loads(p.json) if hasattr(p, "json") else p for p in q.recentProgress]
        assert {o["operatorName"] for p in progress for o in p["stateOperators"]} == operators, tag
        assert all(o in kp.explain(q) for o in orders), (tag, kp.explain(q))
        assert [tuple(r)[:3] for r in spark.table(name).collect()] == [row], tag


# --- kill -9 of the driver ----------------------------------------------------------------------

HERE = os.path.dirname(os.path.abspath(__file__))
PAUSE_BATCH = 2
MARKER_TIMEOUT_S = 120
FINISH_TIMEOUT_S = 240


def _batch_ends(checkpoint: str, topic: str) -> List[Dict[int, int]]:
    """Each logged micro-batch's end offsets (partition -> offset) from the offsets log."""
    log = os.path.join(checkpoint, "offsets")
    ends = []
    for n in sorted((int(x) for x in os.listdir(log) if x.isdigit())):
        with open(os.path.join(log, str(n))) as f:
            source = json.loads(f.read().strip().splitlines()[-1])
        ends.append({int(p): o for p, o in source[topic].items()})
    return ends


def _committed(checkpoint: str) -> List[int]:
    path = os.path.join(checkpoint, "commits")
    return sorted(int(x) for x in os.listdir(path) if x.isdigit()) if os.path.isdir(path) else []


def _launch(cfg: Dict[str, Any], root: str, tag: str) -> subprocess.Popen:
    """Starts ``_kafka_driver.py`` on ``cfg`` in a process group of its own (SIGKILL hits the
    Python driver and its JVM at once)."""
    path, log_path = os.path.join(root, f"{tag}.json"), os.path.join(root, f"{tag}.log")
    with open(path, "w") as f:
        json.dump(cfg, f)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(HERE), HERE] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    with open(log_path, "w") as log:
        p = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "_kafka_driver.py"), path],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    p.driver_log = log_path
    return p


def _log(p) -> str:
    with open(p.driver_log) as f:
        return f.read()[-6000:]


def _first_per_window(windows) -> List[Any]:
    """What an idempotent consumer keeps: the first record per (k, start, end)."""
    first: Dict[Any, Any] = {}
    for w in windows:
        first.setdefault(w[:3], w)
    return list(first.values())


def _kill(p) -> None:
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=60)


def test_kill9_of_the_driver_then_restart_loses_nothing_kafka_sink_repeats_only_the_replayed_batch(
    spark, broker, clients, state_partition, tmp_path
) -> None:
    """The driver (a separate process) is killed with SIGKILL after micro-batch 2's windows were
    written to the output topic, before the batch was committed; the restart replays batch 2.
    Kafka sink (at-least-once): the topic holds every final window of the model exactly once, plus
    batch 2's windows a second time and nothing else; a consumer keeping the first record per
    (k, start, end) reads exactly the model's. Spark's streaming Kafka sink, killed wherever it
    was: every window of the model, repeated ones only of the batch it was running, and exactly
    the model's for the idempotent consumer."""
    topic_in, topic_out, topic_native = _topics(clients, "kstate_kill_in", "kstate_kill_out", "kstate_kill_native")
    records = [r for b in kp.generate(seed=23, batches=4, per_batch=30) for r in b]
    clients.produce(topic_in, kp.to_kafka_records(records))
    root = str(tmp_path)
    cfg = dict(
        bootstrap=broker.bootstrap,
        topic_in=topic_in,
        topic_out=topic_out,
        topic_native=topic_native,
        max_offsets=30,
        max_offsets_native=30,
        checkpoint_kafka=os.path.join(root, "ckpt_kafka"),
        checkpoint_native=os.path.join(root, "ckpt_native"),
        marker=os.path.join(root, "paused"),
        pause_batch=PAUSE_BATCH,
    )

    p = _launch(cfg, root, "run1")
    try:
        kill9_when_paused(p, cfg["marker"], MARKER_TIMEOUT_S, lambda: _log(p))
    finally:
        _kill(p)
    native_at_kill = _committed(cfg["checkpoint_native"])  # commit files are renamed into place: final
    assert _committed(cfg["checkpoint_kafka"]) == list(range(PAUSE_BATCH))
    written_before_restart = len(read_topic(spark, broker.bootstrap, topic_out))

    p = _launch(dict(cfg, pause_batch=-1), root, "run2")
    try:
        assert p.wait(timeout=FINISH_TIMEOUT_S) == 0, _log(p)
    finally:
        _kill(p)

    # Kafka sink: at-least-once; the replayed batch's records twice, nothing lost
    expected, _ = kp.model_output(
        kp.split_by_offsets(records, _batch_ends(cfg["checkpoint_kafka"], topic_in)), state_partition, STATE_PARTITIONS
    )
    assert len(expected) > PAUSE_BATCH + 1 and expected[PAUSE_BATCH], [len(e) for e in expected]
    assert written_before_restart == sum(len(e) for e in expected[: PAUSE_BATCH + 1])
    consumed = [kp.window_of(r["value"]) for r in read_topic(spark, broker.bootstrap, topic_out)]
    everything = [w for e in expected for w in e]
    assert Counter(consumed) == Counter(everything) + Counter(expected[PAUSE_BATCH])
    assert sorted(_first_per_window(consumed)) == sorted(everything)

    # Spark's streaming Kafka sink, killed wherever it was: every window at least once; more only
    # of the batch it was running (the first one not committed at the kill)
    native_expected, _ = kp.model_output(
        kp.split_by_offsets(records, _batch_ends(cfg["checkpoint_native"], topic_in)), state_partition, STATE_PARTITIONS
    )
    native = Counter(kp.window_of(r["value"]) for r in read_topic(spark, broker.bootstrap, topic_native))
    native_all = Counter(w for e in native_expected for w in e)
    in_flight = len(native_at_kill)
    assert native_all - native == Counter(), "windows lost"
    assert (native - native_all) - Counter(
        native_expected[in_flight] if in_flight < len(native_expected) else []
    ) == Counter(), f"duplicates beyond batch {in_flight}, the one running at the kill"
    assert sorted(_first_per_window(native.elements())) == sorted(native_all.elements())
