"""Shared pieces of the windowed-aggregation tests (time, session and sliding windows): the
input schema and keys, the aggregation under test (count, sum and max of ``v``, optionally
suppressed until its windows close), its output as sorted tuples, random input, and the
reference models run per state partition and micro-batch."""

from __future__ import annotations

import os
import random
from typing import Any, Callable, Dict, List, Optional, Sequence

from _streaming import run_stream_batches
from kstate import BufferConfig, Suppressed
from pyspark.sql import functions as F

SCHEMA = "seq LONG, k STRING, ts LONG, v LONG"
KEYS = ["a", "d", "g", "y"]


def aggregate(windows: Any, final: bool = False, buffer: Any = None) -> Callable:
    """A query builder: the windowed aggregation, suppressed until its windows close if ``final``."""

    def build(df):
        out = df.kstate.windowed_by(windows, key="k", timestamp="ts").agg(
            F.count(F.lit(1)).alias("n"), F.sum("v").alias("s"), F.max("v").alias("m")
        )
        if final:
            out = out.kstate.suppress(Suppressed.until_window_closes(buffer or BufferConfig.unbounded()))
        return out

    return build


def tuples(rows, extra: Sequence[str] = ()) -> List[tuple]:
    """(k, window_start, window_end, n, s, m, timestamp, *extra) per row, sorted."""
    cols = ("k", "window_start", "window_end", "n", "s", "m", "timestamp") + tuple(extra)
    return sorted((tuple(r[c] for c in cols) for r in rows), key=repr)


def stream(
    spark,
    workdir: str,
    build,
    batches: Sequence[Sequence[Dict[str, Any]]],
    partitions: Optional[int] = None,
    extra: Sequence[str] = (),
) -> Dict[int, List[Any]]:
    """Output rows of each micro-batch (batch id -> sorted tuples) of a fresh query."""
    out = run_stream_batches(spark, workdir, build, batches, SCHEMA, partitions)
    return {b: tuples(rows, extra) for b, rows in out.items()}


def model_rows(batches, new_model: Callable[[], Any], part: Callable[[Any], int]) -> List[List[tuple]]:
    """Rows a reference model emits per micro-batch, one model per state partition."""
    models: Dict[int, Any] = {}
    out = []
    for b in batches:
        for r in b:
            p = part(r["k"])
            if p not in models:
                models[p] = new_model()
            models[p].process(r["k"], r["ts"], r["v"])
        rows = []
        for m in models.values():
            rows += m.end_batch()
        out.append(sorted(rows, key=repr))
    return out


def random_records(rnd: random.Random, n: int, jump: Sequence[int] = (-8, 10), low: int = -10) -> List[Dict[str, Any]]:
    """Random keys, values and timestamps (steps of 500 ms, some out of order, some far behind,
    some off by 1 ms), with null keys, timestamps and values."""
    recs, prev = [], rnd.randint(0, 20) * 500
    for i in range(n):
        r = rnd.random()
        ts = (
            None
            if r < 0.07
            else (
                rnd.randint(low, 60) * 500 + (1 if rnd.random() < 0.2 else 0)
                if r < 0.2
                else prev + rnd.randint(*jump) * 500
            )
        )
        prev = prev if ts is None else ts
        k = None if rnd.random() < 0.1 else rnd.choice(KEYS)
        v = None if rnd.random() < 0.1 else rnd.randint(-5, 20)
        recs.append(dict(seq=i, k=k, ts=ts, v=v))
    return recs


def check_against_model(
    spark,
    workdir: str,
    sc: Dict[str, Any],
    partitions: int,
    model_for: Callable[[Any, bool], Any],
    extra: Sequence[str] = (),
) -> None:
    """kstate's output of scenario ``sc`` (records, batches, windows, final) equals the model's,
    micro-batch by micro-batch, and as one batch DataFrame (one micro-batch in DataFrame order)."""
    from _streaming import partition_map, run_batch_df

    pm = partition_map(spark, KEYS, "string", partitions)
    part = lambda k: pm.get(k, 0)
    new_model = lambda: model_for(sc["windows"], sc["final"])
    expected = model_rows(sc["batches"], new_model, part)
    build = aggregate(sc["windows"], sc["final"])
    got = stream(spark, workdir, build, sc["batches"], partitions, extra)
    detail = (
        f"windows={sc['windows']} final={sc['final']} partitions={partitions}\n"
        f"batches={[[(r['k'], r['ts'], r['v']) for r in b] for b in sc['batches']]}"
    )
    assert [got.get(i, []) for i in range(len(sc["batches"]))] == expected, detail
    batch = tuples(run_batch_df(spark, build, sc["records"], schema=SCHEMA, partitions=partitions), extra)
    assert batch == model_rows([sc["records"]], new_model, part)[0], detail


def check_restart_between_every_batch(spark, workdir: str, windows: Any, seed: int, extra: Sequence[str] = ()) -> None:
    """Restarting the query between every micro-batch gives the output of one uninterrupted run,
    with and without suppression (2 state partitions)."""
    from _streaming import FileStream, shuffle_partitions

    rnd = random.Random(seed)
    recs = [dict(seq=i, k=rnd.choice(KEYS), ts=rnd.randint(0, 60) * 500, v=rnd.randint(-3, 9)) for i in range(40)]
    batches = [recs[i : i + 8] for i in range(0, 40, 8)]
    for final in (False, True):
        whole = stream(spark, os.path.join(workdir, f"whole{final}"), aggregate(windows, final), batches, 2, extra)
        src, ckpt = os.path.join(workdir, f"src{final}"), os.path.join(workdir, f"ckpt{final}")
        restarted = {}
        with shuffle_partitions(spark, 2):
            for i, b in enumerate(batches):
                fs = FileStream(
                    spark, src, ckpt, aggregate(windows, final), schema=SCHEMA, output_mode="update"
                ).start()
                fs.add_batch(b)
                restarted[i] = tuples(fs.batches[i], extra)
                fs.stop()
        assert restarted == whole, f"final={final}"
