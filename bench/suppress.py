#!/usr/bin/env python3
"""``suppress(until_time_limit)`` throughput by key space, on the heap and spilling.

For each key space (default 1k, 100k and 10M keys; ``--key-spaces`` for others) one generated
input (the generator of ``run.py``: 4M events, bounded disorder) runs through

    df.kstate.suppress(Suppressed.until_time_limit("30 seconds", buffer), key="key", timestamp="ts")

twice, in the same Spark session, alternating order: ``heap`` with ``BufferConfig.unbounded()``
(the buffer's changes stay on the heap within a micro-batch) and ``spill`` with
``BufferConfig.max_bytes(8 MB).spill_to_disk_when_full()`` (strict; the buffer's heap is
bounded, what does not fit goes to local disk). Prints rows/s of each and the slowdown of
spilling (goal <= 3x), checks that both emit the same number of rows, and writes
``bench/results/suppress.json``. The heap bound itself is measured by ``BufferMemoryBench``.

    PYTHONPATH=python .venv/bin/python bench/suppress.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from typing import Any, Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import (  # noqa: E402
    RESULTS,
    ROOT,
    SCHEMA,
    TMP,
    add_input_args,
    add_spark_args,
    describe_input,
    finish_args,
    generate,
    start_spark,
    unload_state_stores,
    wait_for_jar,
)

GOAL = 3.0
SPILL_BYTES = 8 * 1024 * 1024


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="small input, 1 repetition")
    add_input_args(p)
    add_spark_args(p)
    p.add_argument("--key-spaces", default=None, help="comma-separated (default 1000,100000,10000000)")
    p.add_argument("--limit", type=int, default=30, help="time limit, seconds")
    p.add_argument("--reps", type=int, default=None)
    p.add_argument("--warmup-files", type=int, default=None)
    p.add_argument("--warmup-rows", type=int, default=None)
    p.add_argument("--out", default=None)
    p.add_argument("--no-save", action="store_true")
    a = p.parse_args(argv)
    finish_args(p, a)
    a.key_space_list = [int(x) for x in (a.key_spaces or "1000,100000,10000000").split(",")]
    a.out = a.out or os.path.join(RESULTS, "suppress-quick" if a.quick else "suppress")
    return a


def run(spark, variant: str, data_dir: str, ckpt: str, a) -> Dict[str, Any]:
    from kstate import BufferConfig, Suppressed

    shutil.rmtree(ckpt, ignore_errors=True)
    unload_state_stores(spark)
    spark.sparkContext._jvm.System.gc()
    buffer = (
        BufferConfig.unbounded() if variant == "heap" else BufferConfig.max_bytes(SPILL_BYTES).spill_to_disk_when_full()
    )
    src = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(data_dir)
    out = src.kstate.suppress(Suppressed.until_time_limit(f"{a.limit} seconds", buffer), key="key", timestamp="ts")
    t0 = time.perf_counter()
    q = (
        out.writeStream.outputMode("append")
        .option("checkpointLocation", ckpt)
        .trigger(availableNow=True)
        .format("noop")
        .start()
    )
    q.awaitTermination()
    wall = time.perf_counter() - t0
    progress = [json.loads(p.json) for p in q.recentProgress]
    unload_state_stores(spark)
    emitted = sum(p.get("sink", {}).get("numOutputRows", 0) or 0 for p in progress)
    ops = [p["stateOperators"][0] for p in progress if p.get("stateOperators")]
    custom = (ops[-1].get("customMetrics") or {}) if ops else {}
    return {
        "wall_s": wall,
        "emitted": emitted,
        "buffered_at_end": int(custom.get("bufferRecords", 0)),
        "spills": int(custom.get("kstateStoreSpills", custom.get("spills", 0)) or 0),
    }


def main(argv: Optional[List[str]] = None) -> int:
    a = parse_args(argv)
    wait_for_jar()
    tmp = os.path.join(TMP, f"suppress-{os.getpid()}")
    spark = start_spark(a, "kstate-bench-suppress", os.path.join(tmp, "spark-local"))
    results: Dict[str, Any] = {}
    ok = True
    try:
        for keys in a.key_space_list:
            a.keys = keys
            data = os.path.join(tmp, f"data-{keys}")
            t0 = time.perf_counter()
            inp = generate(data, a.files, a.rows_per_file, a, seed=11)
            print(f"\n{keys:,} keys: " + describe_input(inp, time.perf_counter() - t0, a.interval), flush=True)
            warm = os.path.join(tmp, f"warm-{keys}")
            generate(warm, a.warmup_files, a.warmup_rows, a, seed=12)
            for v in ("heap", "spill"):
                run(spark, v, warm, os.path.join(tmp, f"ckpt-warm-{v}"), a)
            walls: Dict[str, List[float]] = {"heap": [], "spill": []}
            emitted: Dict[str, int] = {}
            for r in range(a.reps):
                for v in ("heap", "spill") if r % 2 == 0 else ("spill", "heap"):
                    res = run(spark, v, data, os.path.join(tmp, f"ckpt-{keys}-{v}-{r}"), a)
                    walls[v].append(res["wall_s"])
                    emitted[v] = res["emitted"]
                    print(
                        f"[{keys:,} keys, {v} rep {r}] {res['wall_s']:.1f} s  {inp['rows'] / res['wall_s']:,.0f} rows/s  "
                        f"emitted {res['emitted']:,}, buffered at the end {res['buffered_at_end']:,}",
                        flush=True,
                    )
            rate = {v: inp["rows"] / statistics.median(walls[v]) for v in walls}
            slowdown = rate["heap"] / rate["spill"]
            same = emitted["heap"] == emitted["spill"]
            ok = ok and same
            results[str(keys)] = {
                "distinct_keys": inp["distinct_keys"],
                "rows": inp["rows"],
                "wall_s": walls,
                "rows_per_s": rate,
                "spill_slowdown": slowdown,
                "goal_met": slowdown <= GOAL,
                "emitted": emitted,
                "same_output_count": same,
            }
            shutil.rmtree(data, ignore_errors=True)
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"\nsuppress(until_time_limit {a.limit} s), {a.files * a.rows_per_file:,} rows, medians of {a.reps}:")
    print(f"{'key space':>12} {'distinct':>10} {'heap rows/s':>12} {'spill rows/s':>13} {'spill slowdown':>15}")
    for keys, r in results.items():
        print(
            f"{int(keys):>12,} {r['distinct_keys']:>10,} {r['rows_per_s']['heap']:>12,.0f} {r['rows_per_s']['spill']:>13,.0f} "
            f"{r['spill_slowdown']:>14.2f}x  (goal <= {GOAL}x: {'met' if r['goal_met'] else 'NOT met'}; "
            f"same output count: {r['same_output_count']})"
        )
    if not a.no_save:
        os.makedirs(os.path.dirname(a.out), exist_ok=True)
        with open(a.out + ".json", "w") as f:
            json.dump(
                {
                    "benchmark": "suppress",
                    "quick": a.quick,
                    "date_utc": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
                    "limit_s": a.limit,
                    "spill_max_bytes": SPILL_BYTES,
                    "reps": a.reps,
                    "results": results,
                },
                f,
                indent=1,
            )
        print(f"wrote {os.path.relpath(a.out + '.json', ROOT)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
