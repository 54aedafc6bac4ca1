"""Evolving the schema of a running query's input (docs/operators.md, "Evolving schemas").

Each case runs its first micro-batches with the old input schema, stops, and restarts on the
same checkpoint with the new one; it must give exactly what a query that ran every micro-batch
with the new schema gives (the early records read with the new schema: an added column null, a
widened one widened, a removed one gone). The state kept across the change (suppression buffers,
tables and their versions, the join's grace buffer, joins' sides, aggregates, window buffers) was
written with the old rows, so a wrong conversion shows in the output. Refused changes fail with a
named error that names the column, and leave the checkpoint restartable with the old schema.
"""

from __future__ import annotations

import os
import random
from typing import Any, Dict, List

import pytest
from _streaming import FileStream, checkpoint_files
from kstate import BufferConfig, KStateError, Suppressed, TimeWindows, VersionedTable
from pyspark.sql import functions as F

S = 1000
BASE = "seq LONG, side STRING, k STRING, name STRING, v INT, ts LONG"
KEYS = ["a", "b", "c", "d", "e"]
CUT = 2  # micro-batches run with the old schema


def _records(seed: int, n: int, start: int = 0) -> List[Dict[str, Any]]:
    """Keys a..e before the change, c..g after it: a's and b's state (buffered rows, table values)
    is only ever read back, never replaced, after the change. Values negative too (a widened
    number read without conversion would lose its sign)."""
    rnd = random.Random(seed)
    recs = [
        dict(
            seq=start + i,
            side=rnd.choice("st"),
            k=rnd.choice(KEYS if i < CUT * 12 else KEYS[2:] + ["f", "g"]),
            v=rnd.randint(-9, 9),
            name=f"n{rnd.randint(0, 3)}",
            extra=f"x{i % 3}",
            ts=(start + i) * S + rnd.randint(0, 1500),
        )
        for i in range(n)
    ]
    for r in recs:  # a's and b's values negative
        if r["k"] in ("a", "b"):
            r["v"] = -abs(r["v"]) - 1
    return recs


def _batches() -> List[List[Dict[str, Any]]]:
    """Four micro-batches; the column only the new schemas have (``extra``) is in the files written
    after the change only."""
    recs = _records(11, 48)
    batches = [recs[i : i + 12] for i in range(0, 48, 12)]
    return [[{k: v for k, v in r.items() if k != "extra"} for r in b] if i < CUT else b for i, b in enumerate(batches)]


def _suppress(df):
    cols = [c for c in df.columns if c != "side"]
    return df.select(*cols).kstate.suppress(
        Suppressed.until_time_limit("3 seconds", BufferConfig.unbounded()), key="k", timestamp="ts"
    )


def _stream_table_join(df):
    values = [c for c in df.columns if c not in ("seq", "side", "k", "ts")]
    table = (
        df.filter(F.col("side") == "t")
        .select("k", *[F.col(c).alias("t_" + c) for c in values], "ts")
        .kstate.to_table("k", "ts", versioned=VersionedTable("1 hour", grace="5 seconds"))
    )
    stream = df.filter(F.col("side") == "s").select("seq", "k", "ts", *values)
    return stream.kstate.join(table, key="k", timestamp="ts", how="left", grace="2 seconds")


def _table_join(df):
    values = [c for c in df.columns if c not in ("seq", "side", "k", "ts")]
    left = df.filter(F.col("side") == "s").select("k", *values, "ts").kstate.to_table("k", "ts")
    right = df.filter(F.col("side") == "t").select("k", F.col("ts").alias("rts"), "ts").kstate.to_table("k", "ts")
    return left.join(right, how="left").to_stream()


def _table_aggregate(df):
    t = df.select("k", "v", "ts").kstate.to_table("k", "ts", versioned=VersionedTable("1 hour"))
    return t.group_by((F.col("v") % 3).cast("string"), value="v").sum("v").to_stream()


def _window_max(df):
    return (
        df.kstate.windowed_by(TimeWindows.of_size("10 seconds").grace("2 seconds"), key="k", timestamp="ts")
        .agg(F.max("v").alias("m"), F.count(F.lit(1)).alias("n"))
        .kstate.suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
    )


PIPELINES = {
    "suppress": (_suppress, "append"),
    "stream_table_join": (_stream_table_join, "append"),
    "table_join": (_table_join, "update"),
    "table_aggregate": (_table_aggregate, "update"),
    "window_max": (_window_max, "append"),
}

# change -> (old schema, new schema)
CHANGES = {
    "add_column": (BASE, BASE + ", extra STRING"),
    "widen": (BASE, BASE.replace("v INT", "v BIGINT")),
    "reorder": (BASE, "seq LONG, side STRING, k STRING, v INT, name STRING, ts LONG"),
    "remove_column": (BASE, BASE.replace(", name STRING", "")),
}


def _run(spark, workdir: str, build, schemas: List[str], mode: str, cut: int) -> Dict[int, List[tuple]]:
    """``_batches()`` with ``schemas[0]`` for the first ``cut`` micro-batches and ``schemas[1]``
    for the rest, restarting on the same checkpoint in between."""
    src, ckpt = os.path.join(workdir, "src"), os.path.join(workdir, "ckpt")
    out: Dict[int, List[tuple]] = {}
    batches = _batches()
    for schema, part in ((schemas[0], batches[:cut]), (schemas[1], batches[cut:])):
        fs = FileStream(spark, src, ckpt, build, schema=schema, output_mode=mode)
        with fs:
            for b in part:
                fs.add_batch(b)
        out.update(
            {i: sorted((tuple(sorted(r.asDict().items())) for r in rows), key=repr) for i, rows in fs.batches.items()}
        )
    return out


@pytest.mark.parametrize("change", list(CHANGES))
@pytest.mark.parametrize("pipeline", list(PIPELINES))
def test_a_compatible_change_converts_the_state(spark, tmp_path, pipeline, change) -> None:
    build, mode = PIPELINES[pipeline]
    old, new = CHANGES[change]
    evolved = _run(spark, str(tmp_path / "evolved"), build, [old, new], mode, cut=CUT)
    reference = _run(spark, str(tmp_path / "reference"), build, [new, new], mode, cut=CUT)
    after = {b: rows for b, rows in evolved.items() if b >= CUT}  # before: the old schema's columns
    assert after == {b: rows for b, rows in reference.items() if b >= CUT}
    assert sum(len(rows) for rows in after.values()) > 0


REFUSED = {
    # (pipeline, new schema, the recorded type, the column named, the change named)
    "narrow_to_string": ("suppress", BASE.replace("v INT", "v STRING"), "rowType", "v", "int -> string"),
    "long_to_double": (
        "table_aggregate",
        BASE.replace("v INT", "v DOUBLE"),
        "aggregateType",
        "sum",
        "bigint -> double",
    ),
    "key_type": ("table_join", BASE.replace("k STRING", "k INT"), "keyType", "keyType", "string -> int"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_an_incompatible_change_is_a_named_error_and_the_old_schema_still_restarts(spark, tmp_path, case) -> None:
    pipeline, new, recorded, column, change = REFUSED[case]
    build, mode = PIPELINES[pipeline]
    src, ckpt = str(tmp_path / "src"), str(tmp_path / "ckpt")
    batches = _batches()
    fs = FileStream(spark, src, ckpt, build, schema=BASE, output_mode=mode)
    with fs:
        for b in batches[:CUT]:
            fs.add_batch(b)
    before = checkpoint_files(os.path.join(ckpt, "state"))
    with pytest.raises(KStateError) as ei:
        with FileStream(spark, src, ckpt, build, schema=new, output_mode=mode) as bad:
            bad.add_batch(batches[CUT])
    assert ei.value.error_class == "KSTATE_INCOMPATIBLE_STATE_SCHEMA", str(ei.value)
    assert f"({recorded})" in ei.value.message and f"column '{column}'" in ei.value.message
    assert change in ei.value.message
    assert checkpoint_files(os.path.join(ckpt, "state")) == before  # nothing recorded, nothing converted
    with FileStream(spark, src, ckpt, build, schema=BASE, output_mode=mode) as again:
        again.add_batch(batches[CUT])
    assert CUT in again.batches  # the micro-batch the refused start planned runs with the old schema


def test_a_re_run_of_the_converting_micro_batch_converts_again(spark, tmp_path) -> None:
    """The first micro-batch with the new schema fails to commit (its commit log entry is gone, as
    after a crash): the restart re-runs it from the old rows and converts them again."""
    build, mode = PIPELINES["stream_table_join"]
    old, new = CHANGES["add_column"]
    reference = _run(spark, str(tmp_path / "reference"), build, [new, new], mode, cut=CUT)
    src, ckpt = str(tmp_path / "src"), str(tmp_path / "ckpt")
    batches = _batches()
    out: Dict[int, List[tuple]] = {}
    for schema, part in ((old, batches[:CUT]), (new, batches[CUT : CUT + 1])):
        with FileStream(spark, src, ckpt, build, schema=schema, output_mode=mode) as fs:
            for b in part:
                fs.add_batch(b)
    for name in (str(CUT), f".{CUT}.crc"):
        os.remove(os.path.join(ckpt, "commits", name))
    with FileStream(spark, src, ckpt, build, schema=new, output_mode=mode) as fs:
        fs.process()  # re-runs micro-batch CUT
        for b in batches[CUT + 1 :]:
            fs.add_batch(b)
    out = {i: sorted((tuple(sorted(r.asDict().items())) for r in rows), key=repr) for i, rows in fs.batches.items()}
    assert out == {b: rows for b, rows in reference.items() if b >= CUT}
