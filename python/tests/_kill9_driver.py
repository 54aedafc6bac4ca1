"""Driver process for the kill -9 test (run as ``python _kill9_driver.py CONFIG.json``).

Runs ONE streaming query: JSON-lines files in ``src`` (one file per micro-batch, files are
ordered by modification time) -> a kstate operator (``operator``: ``dedup``, the default;
``window_final``, a windowed count suppressed until its windows close; ``time_limit``,
``suppress(until_time_limit)``, spilling to disk with ``spill``; or a table operator of ``_table_operators.OPERATORS`` by name,
over ``schema``, default ``_streaming.SCHEMA``) -> an idempotent sink: foreachBatch
writes each batch's rows to ``out/batch=<id>.json`` (atomically, overwriting), so a replayed
batch rewrites the same file. Processes every available file, stops and exits 0.

``queries``, if given, is a list of such configurations (each its own ``src``, ``checkpoint``,
``out``, ``marker``, operator and pause point): the driver runs them all at once, in one session
(the top level keeps ``conf``). A test that kills several queries' driver starts one process
instead of one per query: a driver's start costs more than its queries' few micro-batches.

If ``pause_batch`` >= 0, the foreachBatch call of that batch writes ``marker`` and then sleeps
(until the test kills this process group with SIGKILL) at ``pause_phase``:
  before_collect  before the batch DataFrame runs (no state written for the batch)
  after_collect   after it ran (state store version committed) but before the sink write
  after_write     after the sink file was written, before the batch is committed
"""

from __future__ import annotations

import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))  # the kstate package (python/)


def _table_operator(name: str):
    """A table operator of ``_table_operators`` (imported only when one is asked for)."""
    from _table_operators import OPERATORS

    if name not in OPERATORS:
        raise ValueError(f"unknown operator {name}")
    return OPERATORS[name]


def build(source, cfg):
    """The query of ``cfg`` (its ``operator``, see the module doc) over the DataFrame ``source``.

    The tests run the same query in their own session for the uninterrupted reference output.
    ``cfg["order"]``, if given, is the dedup and windowed operators' ``order=`` (else the session's
    Kafka task order applies)."""
    from _streaming import dedup

    operator = cfg.get("operator", "dedup")
    order = cfg.get("order")
    if operator == "dedup":
        return dedup(source, cfg["mode"], cfg["interval"], order=order)
    if operator in ("window_final", "time_limit"):
        from kstate import BufferConfig, Suppressed, TimeWindows

        if operator == "window_final":
            return (
                source.kstate.windowed_by(
                    TimeWindows.of_size(cfg["size"]).grace(cfg["grace"]), key="k", timestamp="ts", order=order
                )
                .count()
                .kstate.suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
            )
        buffer = BufferConfig.max_bytes(256).spill_to_disk_when_full() if cfg.get("spill") else BufferConfig.unbounded()
        return source.kstate.suppress(Suppressed.until_time_limit(cfg["limit"], buffer), key="k", timestamp="ts")
    return _table_operator(operator).build(source)


def main(config_path: str) -> int:
    with open(config_path) as f:
        cfg = json.load(f)

    import kstate  # noqa: F401  (adds df.kstate)
    from _streaming import STREAM_ORDER, finish_driver, session_builder

    # C1 only, as every test driver (session_builder): no result changes.
    spark = session_builder().getOrCreate()
    for k, v in list(STREAM_ORDER.items()) + list(cfg.get("conf", {}).items()):
        spark.conf.set(k, v)  # the processing order; a remote checkpoint store's settings
    spark.sparkContext.setLogLevel("WARN")
    queries = [start(spark, q) for q in cfg.get("queries", [cfg])]
    return finish_driver(spark, *queries)


def start(spark, cfg):
    """Starts the query of ``cfg`` (one query's configuration, see the module doc)."""
    from _streaming import SCHEMA

    os.makedirs(cfg["out"], exist_ok=True)

    def pause(phase: str, batch_id: int) -> None:
        if batch_id == cfg["pause_batch"] and phase == cfg["pause_phase"]:
            with open(cfg["marker"] + ".tmp", "w") as f:
                f.write(f"{os.getpid()} {batch_id} {phase}\n")
            os.rename(cfg["marker"] + ".tmp", cfg["marker"])
            time.sleep(3600)  # the test kills us here

    def sink(df, batch_id: int) -> None:
        pause("before_collect", batch_id)
        rows = [r.asDict() for r in df.collect()]
        pause("after_collect", batch_id)
        path = os.path.join(cfg["out"], f"batch={batch_id}.json")
        with open(path + ".tmp", "w") as f:
            json.dump(rows, f)
        os.replace(path + ".tmp", path)
        pause("after_write", batch_id)

    source = spark.readStream.schema(cfg.get("schema", SCHEMA)).option("maxFilesPerTrigger", 1).json(cfg["src"])
    out = build(source, cfg)
    return (
        out.writeStream.foreachBatch(sink).outputMode("append").option("checkpointLocation", cfg["checkpoint"]).start()
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
