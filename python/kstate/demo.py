"""``make demo``: an example kstate pipeline on local Spark with generated data.

Generates click events with re-sent duplicates and out-of-order timestamps, feeds them to a
streaming query as three micro-batches, deduplicates them with KIP-655 semantics and keeps the
first click of each user per minute (windowed ``distinct()``), then prints the results and the
operators' metrics from the query progress.
"""

from __future__ import annotations

import datetime
import json
import os
import random
import shutil
import tempfile
from typing import Dict, List

from pyspark.sql import SparkSession

import kstate
from kstate import TimeWindows

SCHEMA = "event_id string, user string, ts timestamp, page string"


def generate(batches: int = 3, per_batch: int = 2000, seed: int = 7) -> List[List[Dict]]:
    """Click events; ~15% are re-sends of an earlier event a few seconds later."""
    rng = random.Random(seed)
    t0 = 1_700_000_000
    sent: List[Dict] = []
    out = []
    for b in range(batches):
        rows = []
        for i in range(per_batch):
            if sent and rng.random() < 0.15:
                dup = dict(rng.choice(sent[-500:]))
                rows.append(dup)  # at-least-once producer re-sent it
                continue
            ts = t0 + b * 60 + i * 60 / per_batch + rng.uniform(-5, 0)  # out of order by up to 5 s
            ev = {
                "event_id": f"e{b}-{i}",
                "user": f"u{rng.randrange(50)}",
                "page": rng.choice("abcd"),
                "ts": round(ts, 3),
            }
            sent.append(ev)
            rows.append(ev)
        out.append(rows)
    return out


def _iso(epoch_seconds: float) -> str:
    return datetime.datetime.fromtimestamp(epoch_seconds, datetime.timezone.utc).isoformat()


def main() -> None:
    spark = (
        kstate.configure(SparkSession.builder.master("local[2]").appName("kstate-demo"))
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    work = tempfile.mkdtemp(prefix="kstate-demo-")
    try:
        src = os.path.join(work, "in")
        os.makedirs(src)
        events = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(src)

        deduped = events.kstate.deduplicate("event_id", "1 minute", timestamp="ts", name="dedup-clicks")
        first_per_minute = deduped.kstate.windowed_by(
            TimeWindows.of_size("1 minute").grace("10 seconds"), key="user", timestamp="ts"
        ).distinct(name="first-click-per-minute")

        counts: Dict[int, int] = {}

        def sink(batch_df, batch_id: int) -> None:
            counts[batch_id] = batch_df.count()

        q = (
            first_per_minute.writeStream.foreachBatch(sink)
            .option("checkpointLocation", os.path.join(work, "ckpt"))
            .start()
        )
        total = 0
        for i, rows in enumerate(generate()):
            tmp = os.path.join(work, f".batch-{i}.json")
            with open(tmp, "w") as f:
                f.writelines(json.dumps({**r, "ts": _iso(r["ts"])}) + "\n" for r in rows)
            os.rename(tmp, os.path.join(src, f"batch-{i}.json"))
            q.processAllAvailable()
            total += len(rows)
            ops = {op.operatorName: op for op in q.lastProgress.stateOperators}
            d = ops["kstate_deduplicate"].customMetrics
            w = ops["kstate_distinct"].customMetrics
            print(
                f"micro-batch {i}: {len(rows)} events in, "
                f"{d['duplicatesDropped']} duplicates dropped, "
                f"{w['recordsEmitted']} first-clicks-per-minute out "
                f"(state: {d['storedEntries']} event ids, {w['storedWindows']} windows)"
            )
        q.stop()
        print(f"\n{total} events -> {sum(counts.values())} first clicks per user and minute")

        print("\nThe same logic on a static DataFrame (one batch, processed in DataFrame order;")
        print("after dedup's shuffle that is partition order, hence the 5-minute grace):")
        static = spark.createDataFrame(
            [("a", "u1", 0), ("a", "u1", 5_000), ("b", "u1", 61_000), ("c", "u2", 2_000)],
            "event_id string, user string, ts_ms long",
        )
        (
            static.kstate.deduplicate("event_id", "1 minute", timestamp="ts_ms")
            .kstate.windowed_by(TimeWindows.of_size("1 minute").grace("5 minutes"), key="user", timestamp="ts_ms")
            .distinct()
            .orderBy("ts_ms")
            .show()
        )
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
