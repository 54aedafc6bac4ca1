"""The Kafka end-to-end pipeline (tests, the kill -9 driver and ``make demo-kafka``), its input
generator and its reference model.

Pipeline: a topic of events (key ``k``, value ``{"id", "seq"}`` as JSON, Kafka's record timestamp
as event time) -> ``deduplicate_by_key_value("id", DEDUP_INTERVAL, key="k")`` -> a windowed count
per ``k`` (``WINDOW_SIZE`` tumbling windows, ``WINDOW_GRACE``) suppressed until its windows close
-> one Kafka record per final window (key ``k``, value ``{"k", "start", "end", "count", "ts"}``).

Processing order (docs/kafka.md): ``auto`` resolves to Kafka task order for the deduplication
(its input is Spark's Kafka source, one Spark partition per topic-partition, through a projection)
and to event-time order for the windowed count (its input is the deduplication's output).
:func:`model_output` follows exactly that: per state partition and micro-batch, the
deduplication model fed the topic-partitions' records merged like a Kafka task (each partition
in offset order, the partition with the smallest head timestamp next), then the window model
fed what it forwarded sorted by event time.
"""

from __future__ import annotations

import json
import random
from typing import Any, Callable, Dict, List, Sequence, Tuple

from models.dedup_model import DedupModel, Rec
from models.window_agg_model import WindowAggModel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

PARTITIONS = 3  # of the input topic
KEYS = ["a", "b", "c", "d", "e", "f"]
DEDUP_INTERVAL_MS = 2000
WINDOW_SIZE_MS = 5000
WINDOW_GRACE_MS = 1000
BASE_TS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
VALUE_SCHEMA = "id STRING, seq INT"

Record = Dict[str, Any]  # partition, ts (epoch ms), k, id, seq


def kafka_partition(k: str) -> int:
    """The topic-partition of key ``k`` (a stand-in for Kafka's key hash: a key stays in one)."""
    return KEYS.index(k) % PARTITIONS


# --- input ------------------------------------------------------------------------------------


def generate(seed: int, batches: int = 5, per_batch: int = 24) -> List[List[Record]]:
    """Micro-batches of events with duplicates (the same ``(k, id)`` again, a little later or
    earlier, in the same topic-partition: a producer's retry), disorder (timestamps up to 2.5 s
    either side of the batch's time) and late records (8-15 s behind it). Timestamps of
    topic-partition ``p`` are ``p`` modulo 3, so records of different partitions never tie
    (Kafka breaks such ties by partition, kstate by input partition: not what this checks)."""
    rnd = random.Random(seed)
    out: List[List[Record]] = []
    seq = 0
    recent: List[Record] = []
    for b in range(batches):
        t = BASE_TS + 10_000 + b * 4000
        batch = []
        for _ in range(per_batch):
            r = rnd.random()
            if recent and r < 0.25:  # a duplicate of a recent event
                orig = rnd.choice(recent[-12:])
                k, ident, ts = orig["k"], orig["id"], orig["ts"] + rnd.randint(-1500, 1500)
            else:
                k, ident = rnd.choice(KEYS), f"e{seq}"
                ts = t - rnd.randint(8000, 15000) if r > 0.92 else t + rnd.randint(-2500, 2500)
            p = kafka_partition(k)
            rec = dict(partition=p, ts=ts - ts % 3 + p, k=k, id=ident, seq=seq)
            seq += 1
            batch.append(rec)
            recent.append(rec)
        out.append(batch)
    return out


def to_kafka_records(records: Sequence[Record]) -> List[Dict[str, Any]]:
    """The records as :meth:`kafka_broker.KafkaClients.produce` sends them."""
    return [
        dict(partition=r["partition"], ts=r["ts"], key=r["k"], value=json.dumps({"id": r["id"], "seq": r["seq"]}))
        for r in records
    ]


# --- the pipeline -------------------------------------------------------------------------------


def events(kafka_rows: DataFrame) -> DataFrame:
    """Spark's Kafka source rows -> ``k``, ``id``, ``seq``, ``ts`` (the record timestamp)."""
    v = F.from_json(F.col("value").cast("string"), VALUE_SCHEMA)
    return kafka_rows.select(
        F.col("key").cast("string").alias("k"),
        v["id"].alias("id"),
        v["seq"].alias("seq"),
        F.col("timestamp").alias("ts"),
    )


def deduplicated(ev: DataFrame) -> DataFrame:
    return ev.kstate.deduplicate_by_key_value("id", DEDUP_INTERVAL_MS, key="k", timestamp="ts", name="dedup")


def final_counts(ev: DataFrame) -> DataFrame:
    """The pipeline up to the final windows: ``k``, ``window_start``, ``window_end``, ``count``,
    ``timestamp``."""
    from kstate import BufferConfig, Suppressed, TimeWindows

    windows = TimeWindows.of_size(WINDOW_SIZE_MS).grace(WINDOW_GRACE_MS)
    return (
        deduplicated(ev)
        .kstate.windowed_by(windows, key="k", timestamp="ts")
        .count(name="counts")
        .kstate.suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
    )


def as_kafka_output(counts: DataFrame) -> DataFrame:
    """One record per final window for Spark's Kafka sink: ``key`` ``k``, ``value`` JSON."""
    value = F.to_json(
        F.struct(
            F.col("k"),
            F.unix_millis("window_start").alias("start"),
            F.unix_millis("window_end").alias("end"),
            F.col("count"),
            F.unix_millis("timestamp").alias("ts"),
        )
    )
    return counts.select(F.col("k").alias("key"), value.alias("value"))


def pipeline(kafka_rows: DataFrame) -> DataFrame:
    """Kafka source rows -> Kafka sink rows."""
    return as_kafka_output(final_counts(events(kafka_rows)))


def source(spark, bootstrap: str, topic: str, **options: Any) -> DataFrame:
    """Spark's Kafka source on ``topic`` from its first offset."""
    r = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
    )
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def explain(query) -> str:
    """A query's last physical plan as ``explain()`` prints it."""
    return query._jsq.explainInternal(False)


def run_batches(
    spark, clients, bootstrap: str, topic_in: str, topic_out: str, checkpoint: str, batches: Sequence[Sequence[Record]]
) -> Tuple[List[int], str]:
    """Each batch produced to ``topic_in``, then the pipeline run on what is available
    (``Trigger.AvailableNow``: one micro-batch) into ``topic_out`` with Spark's Kafka sink, all on
    one checkpoint. Returns the records each micro-batch wrote and the last physical plan."""
    written, plan = [], ""
    for b in batches:
        clients.produce(topic_in, to_kafka_records(b))
        q = (
            pipeline(source(spark, bootstrap, topic_in))
            .writeStream.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("topic", topic_out)
            .option("checkpointLocation", checkpoint)
            .outputMode("append")
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination(120)
        if q.exception() is not None:
            raise RuntimeError(str(q.exception()))
        data = [p for p in q.recentProgress if p["numInputRows"] > 0]
        if len(data) != 1:
            raise AssertionError(f"expected one micro-batch with data, got batches {[p['batchId'] for p in data]}")
        written.append(data[0]["sink"]["numOutputRows"])
        plan = explain(q)
    return written, plan


Window = Tuple[str, int, int, int, int]  # k, start, end, count, ts


def window_of(value: str) -> Window:
    """An output record's value as a comparable tuple."""
    d = json.loads(value)
    return (d["k"], d["start"], d["end"], d["count"], d["ts"])


# --- the reference model ----------------------------------------------------------------------


def kafka_task_order(queues: Sequence[Sequence[Record]]) -> List[Record]:
    """A Kafka task's processing order: each queue (a topic-partition's records, offset order)
    in order, the queue whose head has the smallest timestamp next (ties: lower index)."""
    pos = [0] * len(queues)
    out = []
    while True:
        heads = [(q[pos[i]]["ts"], i) for i, q in enumerate(queues) if pos[i] < len(q)]
        if not heads:
            return out
        _, i = min(heads)
        out.append(queues[i][pos[i]])
        pos[i] += 1


def model_output(
    batches: Sequence[Sequence[Record]], state_partition: Callable[[str], int], state_partitions: int
) -> Tuple[List[List[Window]], Dict[str, int]]:
    """The final windows each micro-batch emits (sorted), per the module doc's orders, and what
    the models counted (duplicates dropped, late records forwarded by the deduplication, windows
    dropped as late). ``batches``: each micro-batch's records in production (offset) order."""
    dedup = [DedupModel(DEDUP_INTERVAL_MS, "by_key_value") for _ in range(state_partitions)]
    win = [WindowAggModel(WINDOW_SIZE_MS, WINDOW_SIZE_MS, WINDOW_GRACE_MS, final=True) for _ in range(state_partitions)]
    out = []
    for batch in batches:
        emitted: List[Window] = []
        for sp in range(state_partitions):
            queues = [
                [r for r in batch if r["partition"] == p and state_partition(r["k"]) == sp] for p in range(PARTITIONS)
            ]
            forwarded = [r for r in kafka_task_order(queues) if dedup[sp].process(Rec(r["k"], r["id"], r["ts"]))]
            for r in sorted(forwarded, key=lambda r: r["ts"]):  # stable: ties keep their order
                win[sp].process(r["k"], r["ts"], None)
            emitted += [(k, s, e, n, ts) for (k, s, e, n, _sum, _max, ts) in win[sp].end_batch()]
        out.append(sorted(emitted))
    stats = dict(
        duplicates=sum(d.duplicates_dropped for d in dedup),
        late_forwarded=sum(d.late_forwarded for d in dedup),
        late_dropped=sum(w.late_dropped for w in win),
    )
    return out, stats


def split_by_offsets(records: Sequence[Record], ends: Sequence[Dict[int, int]]) -> List[List[Record]]:
    """``records`` (all of the topic, offset order per partition) split into micro-batches at the
    end offsets Spark logged per batch (``ends[i]``: partition -> end offset, exclusive)."""
    offsets: Dict[int, int] = {}
    with_offsets = []
    for r in records:
        o = offsets.get(r["partition"], 0)
        offsets[r["partition"]] = o + 1
        with_offsets.append((o, r))
    out, start = [], {p: 0 for p in range(PARTITIONS)}
    for end in ends:
        out.append([r for o, r in with_offsets if start[r["partition"]] <= o < end.get(r["partition"], 0)])
        start = {p: end.get(p, 0) for p in range(PARTITIONS)}
    return out
