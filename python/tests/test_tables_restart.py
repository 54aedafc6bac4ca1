"""Restarts and kill -9 for the table operators (issue 15 §3): a versioned table source (with a
filter downstream), the stream–table join with a grace period, and table aggregation
(``_table_operators.OPERATORS``). Seven micro-batches of random updates (fixed seed) whose
results depend on state carried over every batch boundary (materialized values, versions,
stream times, the grace buffer, aggregates). The uninterrupted run is checked against the
reference model; a run stopped and restarted from its checkpoint between every two micro-batches,
and a run whose driver is killed (SIGKILL, driver and JVM) mid-batch and restarted, must give
the same sink rows, micro-batch by micro-batch (the three queries share one driver process)."""

from __future__ import annotations

import os
import random
from typing import Any, Dict, List

import pytest
from _kill9 import kill9_after_commit_then_restart, query_on_files
from _streaming import FileStream
from _table_operators import OPERATORS
from _tables_property import SCHEMA, canonical, key_partitioner, random_records
from test_kill9_windows import PAUSE_BATCH, _rows, _sink_rows

BATCHES, PER_BATCH = 7, 6
NAMES = sorted(OPERATORS)


def _batches(name: str) -> List[List[Dict[str, Any]]]:
    recs = random_records(random.Random(15), BATCHES * PER_BATCH, OPERATORS[name].sides)
    return [recs[i * PER_BATCH : (i + 1) * PER_BATCH] for i in range(BATCHES)]


def _run_restarting(spark, workdir: str, name: str, restart: bool) -> Dict[int, List[Any]]:
    src, ckpt = os.path.join(workdir, "src"), os.path.join(workdir, "ckpt")
    merged: Dict[int, List[Any]] = {}
    fs = FileStream(spark, src, ckpt, OPERATORS[name].build, schema=SCHEMA).start()
    try:
        for i, b in enumerate(_batches(name)):
            if restart and i > 0:  # stop after every micro-batch, restart on the checkpoint
                merged.update(fs.batches)
                fs.stop()
                fs = FileStream(spark, src, ckpt, OPERATORS[name].build, schema=SCHEMA).start()
            fs.add_batch(b)
    finally:
        fs.stop()
    merged.update(fs.batches)
    return merged


def _model_check(spark, name: str, batches: Dict[int, List[Any]]) -> None:
    op = OPERATORS[name]
    want = op.expected(dict(batches=_batches(name)), key_partitioner(spark, 2))
    assert op.compared(canonical(batches, op.key_of, op.row_of)) == op.compared(want)
    assert sum(len(rows) for rows in batches.values()) > 0


@pytest.fixture(scope="module")
def uninterrupted(spark, session_tmp) -> Dict[str, Dict[int, List[Any]]]:
    return {
        name: _run_restarting(spark, str(session_tmp.mktemp(f"whole_{name}")), name, restart=False) for name in NAMES
    }


@pytest.mark.parametrize("name", NAMES)
def test_uninterrupted_run_matches_the_model(spark, uninterrupted, name) -> None:
    assert sorted(uninterrupted[name]) == list(range(BATCHES))
    _model_check(spark, name, uninterrupted[name])


@pytest.mark.parametrize("name", NAMES)
def test_restart_between_every_two_micro_batches_gives_identical_output(
    spark, session_tmp, uninterrupted, name
) -> None:
    got = _run_restarting(spark, str(session_tmp.mktemp(f"restart_{name}")), name, restart=True)
    assert _rows(got) == _rows(uninterrupted[name])


@pytest.fixture(scope="module")
def killed(session_tmp) -> Dict[str, Dict[str, Any]]:
    """The three operators' queries in one driver process, killed (SIGKILL) once each has
    committed micro-batch PAUSE_BATCH's state and not the batch, then restarted to the end:
    name -> the commits and sink batches the kill left (``commits``, ``sunk``) and the sink rows."""
    root = str(session_tmp.mktemp("kill9_tables"))
    queries = {
        name: query_on_files(
            root,
            name,
            _batches(name),
            operator=name,
            schema=SCHEMA,
            pause_batch=PAUSE_BATCH,
            pause_phase="after_collect",
        )
        for name in NAMES
    }
    return kill9_after_commit_then_restart(root, queries, _sink_rows)


@pytest.mark.parametrize("name", NAMES)
def test_kill9_mid_batch_then_restart_gives_identical_output(uninterrupted, killed, name) -> None:
    """The driver is killed after micro-batch PAUSE_BATCH's state store versions were committed
    but before the batch was: the restart replays it on the state it started from."""
    assert killed[name]["commits"] == list(range(PAUSE_BATCH))
    assert killed[name]["sunk"] == list(range(PAUSE_BATCH))
    assert killed[name]["rows"] == _rows(uninterrupted[name])
