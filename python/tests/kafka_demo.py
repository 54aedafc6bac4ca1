"""``make demo-kafka``: the Kafka end-to-end pipeline (``_kafka_pipeline``) on a real broker.

Starts a single-node KRaft broker on loopback ports (``kafka_broker.KafkaBroker``), produces
events with duplicates, disorder and late records to a 3-partition topic (record timestamps as
event time) one micro-batch at a time, runs deduplication -> windowed count -> suppress until the
windows close into an output topic with Spark's Kafka sink, then prints what a consumer of the
output topic reads, and whether it equals the reference model's final windows. Stops the broker
whatever happens.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))


def _time(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%H:%M:%S.%f")[:-3]


def main() -> int:
    import _kafka_pipeline as kp
    import kstate  # noqa: F401
    from _streaming import partition_map, session_builder
    from kafka_broker import KafkaBroker, KafkaClients, read_topic

    spark = session_builder().appName("kstate-demo-kafka").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        with KafkaBroker(partitions=kp.PARTITIONS) as broker, tempfile.TemporaryDirectory() as tmp:
            print(f"Kafka broker (KRaft) at {broker.bootstrap}")
            clients = KafkaClients(spark, broker.bootstrap)
            try:
                clients.create_topic("events", kp.PARTITIONS)
                clients.create_topic("final-counts", kp.PARTITIONS)
                batches = kp.generate(seed=17)
                for i, b in enumerate(batches):
                    print(
                        f"batch {i}: produced {len(b)} events to 'events': "
                        + ", ".join(f"p{r['partition']} {r['k']}/{r['id']}@{_time(r['ts'])}" for r in b[:4])
                        + ", ..."
                    )
                written, plan = kp.run_batches(
                    spark, clients, broker.bootstrap, "events", "final-counts", os.path.join(tmp, "checkpoint"), batches
                )
            finally:
                clients.close()
            print(f"\nrecords written to 'final-counts' per micro-batch: {written}")
            print(
                "processing order: "
                + ", ".join(" ".join(m.groups()) for m in re.finditer(r"(KState\w+)\b.*?(order=\S+)", plan))
            )
            consumed = read_topic(spark, broker.bootstrap, "final-counts")
            print(f"\nconsumed from 'final-counts' ({len(consumed)} records): key -> final window count")
            for r in sorted(consumed, key=lambda r: kp.window_of(r["value"])[1:3] + (r["key"],)):
                w = json.loads(r["value"])
                print(
                    f"  {r['key']}  [{_time(w['start'])}, {_time(w['end'])})  count={w['count']}  "
                    f"(partition {r['partition']}, offset {r['offset']})"
                )
            n = int(spark.conf.get("spark.sql.shuffle.partitions"))
            pm = partition_map(spark, kp.KEYS, "string", n)
            expected, stats = kp.model_output(batches, lambda k: pm[k], n)
            same = sorted(kp.window_of(r["value"]) for r in consumed) == sorted(w for e in expected for w in e)
            print(
                f"\nreference model: {stats['duplicates']} duplicates dropped, {stats['late_forwarded']} late "
                f"records forwarded by dedup, {stats['late_dropped']} dropped by closed windows; "
                f"consumed output {'EQUALS' if same else 'DIFFERS FROM'} the model's"
            )
            return 0 if same else 1
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
