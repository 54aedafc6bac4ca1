"""kill -9 mid-batch, then restart, for the windowed and suppressing operators: a windowed count
suppressed until its windows close, and ``suppress(until_time_limit)``. The driver process
(``_kill9_driver.py``) is killed (SIGKILL, driver and JVM) after a micro-batch's state store
versions were committed but before the batch was, so the restart replays that batch on the
state it started from; the sink's rows per micro-batch must equal an uninterrupted run's (the
driver's query, ``_kill9_driver.build``, run in the tests' own session: one driver process less
per case). Both operators' queries share one driver process (``_kill9.kill9_then_restart``)."""

from __future__ import annotations

import json
import os
import random
from typing import Any, Dict, List

import pytest
from _kill9 import kill9_after_commit_then_restart, query_on_files
from _kill9_driver import build
from _streaming import FileStream

PAUSE_BATCH = 4
BATCHES = 7


def _input() -> List[List[Dict[str, Any]]]:
    """Seven micro-batches of four keys, event time rising by about 4 s a batch, some disorder."""
    rnd = random.Random(21)
    out, seq = [], 0
    for b in range(BATCHES):
        recs = []
        for _ in range(6):
            recs.append(dict(seq=seq, k=rnd.choice("adgy"), id="x", ts=b * 4000 + rnd.randint(-3000, 3000)))
            seq += 1
        out.append(recs)
    return out


def _rows(batches: Dict[int, List[Any]]) -> Dict[int, List[str]]:
    """batch id -> its rows as sorted JSON (the sink's order across partitions is not fixed);
    rows are ``Row``s (a query of the tests' session) or dicts (read back from a driver's sink)."""
    return {
        b: sorted(json.dumps(r.asDict() if hasattr(r, "asDict") else r, sort_keys=True, default=str) for r in rows)
        for b, rows in batches.items()
    }


def _uninterrupted(
    spark, workdir: str, cfg: Dict[str, Any], batches: List[List[Dict[str, Any]]]
) -> Dict[int, List[str]]:
    """The driver's query of ``cfg`` in the tests' session, one file per micro-batch, never stopped:
    batch id -> its rows as :func:`_rows` gives them."""
    fs = FileStream(spark, os.path.join(workdir, "src"), os.path.join(workdir, "checkpoint"), lambda df: build(df, cfg))
    with fs:
        for recs in batches:
            fs.add_batch(recs)
    return _rows(fs.batches)


def _sink_rows(out: str) -> Dict[int, List[str]]:
    got = {}
    for name in os.listdir(out):
        if name.startswith("batch=") and name.endswith(".json"):
            with open(os.path.join(out, name)) as f:
                got[int(name[len("batch=") : -len(".json")])] = sorted(
                    json.dumps(r, sort_keys=True, default=str) for r in json.load(f)
                )
    return got


OPERATORS = {
    "window_final": dict(operator="window_final", size="5 seconds", grace="2 seconds"),
    "time_limit": dict(operator="time_limit", limit="5 seconds"),
}


def _cfg(name: str) -> Dict[str, Any]:
    return dict(OPERATORS[name], mode="by_key", interval="1 second")


@pytest.fixture(scope="module")
def killed(session_tmp) -> Dict[str, Dict[str, Any]]:
    """Both operators' queries in one driver process, killed (SIGKILL) once each has committed
    micro-batch PAUSE_BATCH's state and not the batch, then restarted to the end: operator ->
    the commits and sink batches the kill left (``commits``, ``sunk``) and the final sink rows."""
    root = str(session_tmp.mktemp("kill9_windows"))
    queries = {
        name: query_on_files(root, name, _input(), **_cfg(name), pause_batch=PAUSE_BATCH, pause_phase="after_collect")
        for name in OPERATORS
    }
    return kill9_after_commit_then_restart(root, queries, _sink_rows)


@pytest.mark.parametrize("name", list(OPERATORS))
def test_kill9_after_the_state_committed_then_restart_gives_identical_output(spark, session_tmp, killed, name) -> None:
    whole = _uninterrupted(spark, str(session_tmp.mktemp(f"kill9_{name}_whole")), _cfg(name), _input())
    assert sorted(whole) == list(range(BATCHES))
    assert sum(len(rows) for rows in whole.values()) > 0
    # killed after the batch's state was written, before it was committed: it is replayed
    assert killed[name]["commits"] == list(range(PAUSE_BATCH))
    assert killed[name]["sunk"] == list(range(PAUSE_BATCH))
    assert killed[name]["rows"] == whole
