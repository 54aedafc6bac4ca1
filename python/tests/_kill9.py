"""kill -9 of a test driver process, then its restart (``_kill9_driver.py``).

``kill9_then_restart`` runs several queries in ONE driver process, each paused at its own point,
kills the process (SIGKILL, the Python driver and its JVM at once) when every query has paused,
lets the test look at what the kill left, then runs all the queries to the end in one new driver
process. One process pair per test module instead of one per query: starting a driver process
costs more than the few micro-batches of the queries it runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Optional

from _streaming import kill9_when_paused

HERE = os.path.dirname(os.path.abspath(__file__))
DRIVER = os.path.join(HERE, "_kill9_driver.py")
MARKER_TIMEOUT_S = 300
FINISH_TIMEOUT_S = 300


def launch(cfg: Dict[str, Any], cfg_path: str, log_path: str) -> subprocess.Popen:
    """Starts the driver process on ``cfg`` (written to ``cfg_path``), its output to ``log_path``."""
    with open(cfg_path, "w") as f:
        json.dump(cfg, f)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(HERE), HERE] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    log = open(log_path, "w")
    # Own session (process group): SIGKILL hits the Python driver AND its JVM at once.
    return subprocess.Popen(
        [sys.executable, DRIVER, cfg_path], stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
    )


def query_on_files(root: str, name: str, batches: List[List[Dict[str, Any]]], **cfg: Any) -> Dict[str, Any]:
    """One query's configuration for ``_kill9_driver``: ``cfg`` (operator, pause point; a
    ``checkpoint`` of its own, else ``root/name/checkpoint``) with ``src`` and ``out`` under
    ``root/name``; ``src`` gets one JSON-lines file per micro-batch of ``batches``, ordered by
    modification time (the file source's order)."""
    from _streaming import file_name, write_json_lines

    src = os.path.join(root, name, "src")
    os.makedirs(src)
    base = time.time() - 3600
    for i, recs in enumerate(batches):
        write_json_lines(src, file_name(i), recs, mtime=base + 10 * i)
    return {
        "checkpoint": os.path.join(root, name, "checkpoint"),
        "src": src,
        "out": os.path.join(root, name, "out"),
        **cfg,
    }


def log_tail(path: str) -> str:
    with open(path) as f:
        return f.read()[-6000:]


def log_ids(path: str) -> List[int]:
    """The batch ids of a streaming log directory (``offsets``, ``commits``)."""
    return sorted(int(n) for n in os.listdir(path) if n.isdigit())


def _stop(p: subprocess.Popen) -> None:
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=60)


def kill9_then_restart(
    root: str,
    queries: Dict[str, Dict[str, Any]],
    conf: Optional[Dict[str, str]] = None,
    between: Optional[Callable[[], None]] = None,
) -> None:
    """Runs ``queries`` (name -> one query's configuration of ``_kill9_driver``, with its
    ``pause_batch`` and ``pause_phase``) in one driver process with the session settings ``conf``,
    kills its process group with SIGKILL once every query has paused, calls ``between()``, then
    runs every query to its end (no pause) in one new driver process, which must exit 0."""
    markers = {name: os.path.join(root, f"paused_{name}") for name in queries}
    runs = [dict(q, marker=markers[name]) for name, q in queries.items()]
    log1 = os.path.join(root, "run1.log")
    p = launch(dict(queries=runs, conf=conf or {}), os.path.join(root, "run1.json"), log1)
    try:
        kill9_when_paused(p, list(markers.values()), MARKER_TIMEOUT_S, lambda: log_tail(log1))
    finally:
        _stop(p)
    if between is not None:
        between()
    log2 = os.path.join(root, "run2.log")
    runs = [dict(q, pause_batch=-1) for q in runs]
    p = launch(dict(queries=runs, conf=conf or {}), os.path.join(root, "run2.json"), log2)
    try:
        assert p.wait(timeout=FINISH_TIMEOUT_S) == 0, log_tail(log2)
    finally:
        _stop(p)


def kill9_after_commit_then_restart(
    root: str, queries: Dict[str, Dict[str, Any]], sink_rows: Callable[[str], Dict[int, Any]]
) -> Dict[str, Dict[str, Any]]:
    """:func:`kill9_then_restart` for queries that pause after a micro-batch's state was committed:
    name -> the commit log's batch ids and the sink's batch ids the kill left (``commits``,
    ``sunk``) and the sink's rows at the end (``rows``, as ``sink_rows(out)`` reads them)."""
    got: Dict[str, Dict[str, Any]] = {}

    def after_kill() -> None:
        for name, q in queries.items():
            got[name] = dict(
                commits=log_ids(os.path.join(q["checkpoint"], "commits")), sunk=sorted(sink_rows(q["out"]))
            )

    kill9_then_restart(root, queries, between=after_kill)
    for name, q in queries.items():
        got[name]["rows"] = sink_rows(q["out"])
    return got
