"""Driver process of the Kafka kill -9 test (``python _kafka_driver.py CONFIG.json``).

Runs the Kafka pipeline (``_kafka_pipeline.pipeline``) as two streaming queries over the same
input topic, each with its own checkpoint and ``maxOffsetsPerTrigger`` (several micro-batches):

- ``kafka``: Spark's Kafka writer (``df.write.format("kafka")``, what the streaming Kafka sink
  runs for each batch) called from ``foreachBatch``, so that the test can pause the query right
  after a batch's records are in the output topic and before the batch is committed: if
  ``pause_batch`` >= 0, that batch writes ``marker`` after its write and sleeps until the test
  kills this process group with SIGKILL;
- ``native``: Spark's streaming Kafka sink into ``topic_native``, never paused: it is wherever
  its own progress is when the process is killed.

Processes everything available, stops and exits 0 (when not killed). Imports from this
directory and the kstate package (``python/``): the test's launcher puts both on PYTHONPATH.
"""

from __future__ import annotations

import json
import os
import sys
import time


def main(config_path: str) -> int:
    with open(config_path) as f:
        cfg = json.load(f)

    import kstate  # noqa: F401  (adds df.kstate)
    from _kafka_pipeline import pipeline
    from _streaming import finish_driver, session_builder

    # C1 only, as every test driver (session_builder): no result changes.
    spark = session_builder().getOrCreate()
    spark.sparkContext.setLogLevel("WARN")

    def source(max_offsets: int):
        return (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", cfg["bootstrap"])
            .option("subscribe", cfg["topic_in"])
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", max_offsets)
            .load()
        )

    def to_kafka(df, batch_id: int) -> None:
        (
            df.write.format("kafka")
            .option("kafka.bootstrap.servers", cfg["bootstrap"])
            .option("topic", cfg["topic_out"])
            .save()
        )
        if batch_id == cfg["pause_batch"]:
            with open(cfg["marker"] + ".tmp", "w") as f:
                f.write(f"{os.getpid()} {batch_id}\n")
            os.rename(cfg["marker"] + ".tmp", cfg["marker"])
            time.sleep(3600)  # the test kills us here

    kafka_q = (
        pipeline(source(cfg["max_offsets"]))
        .writeStream.foreachBatch(to_kafka)
        .outputMode("append")
        .option("checkpointLocation", cfg["checkpoint_kafka"])
        .start()
    )
    native_q = (
        pipeline(source(cfg["max_offsets_native"]))
        .writeStream.format("kafka")
        .option("kafka.bootstrap.servers", cfg["bootstrap"])
        .option("topic", cfg["topic_native"])
        .outputMode("append")
        .option("checkpointLocation", cfg["checkpoint_native"])
        .start()
    )
    return finish_driver(spark, native_q, kafka_q)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
