"""kill -9 mid-batch, then restart, for the windowed and suppressing operators: a windowed count
suppressed until its windows close, and ``suppress(until_time_limit)``. The driver process
(``_kill9_driver.py``) is killed (SIGKILL, driver and JVM) after a micro-batch's state store
versions were committed but before the batch was, so the restart replays that batch on the
state it started from; the sink's rows per micro-batch must equal an uninterrupted run's."""
from __future__ import annotations

import json
import os
import random
import signal
import time
from typing import Any, Dict, List

import pytest

from _streaming import file_name, write_json_lines
from test_dedup_restart import FINISH_TIMEOUT_S, MARKER_TIMEOUT_S, _launch, _log, _log_ids

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


def _sink_rows(out: str) -> Dict[int, List[str]]:
    got = {}
    for name in os.listdir(out):
        if name.startswith("batch=") and name.endswith(".json"):
            with open(os.path.join(out, name)) as f:
                got[int(name[len("batch="):-len(".json")])] = sorted(
                    json.dumps(r, sort_keys=True, default=str) for r in json.load(f))
    return got


def _run(root: str, cfg: Dict[str, Any], tag: str, kill: bool) -> None:
    marker = os.path.join(root, f"paused_{tag}")
    cfg = dict(cfg, marker=marker, pause_batch=PAUSE_BATCH if kill else -1, pause_phase="after_collect")
    log = os.path.join(root, f"{tag}.log")
    p = _launch(cfg, os.path.join(root, f"{tag}.json"), log)
    try:
        if kill:
            deadline = time.monotonic() + MARKER_TIMEOUT_S
            while not os.path.exists(marker):
                assert p.poll() is None, f"driver exited ({p.returncode}) before pausing:\n{_log(log)}"
                assert time.monotonic() < deadline, f"driver never paused:\n{_log(log)}"
                time.sleep(0.2)
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=60)
            assert p.returncode == -signal.SIGKILL
        else:
            assert p.wait(timeout=FINISH_TIMEOUT_S) == 0, _log(log)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=60)


@pytest.mark.parametrize("operator", [dict(operator="window_final", size="5 seconds", grace="2 seconds"),
                                      dict(operator="time_limit", limit="5 seconds")],
                         ids=lambda o: o["operator"])
def test_kill9_after_the_state_committed_then_restart_gives_identical_output(session_tmp, operator) -> None:
    runs = {}
    for kill in (False, True):
        root = str(session_tmp.mktemp(f"kill9_{operator['operator']}_{kill}"))
        src, out = os.path.join(root, "src"), os.path.join(root, "out")
        os.makedirs(src)
        base = time.time() - 3600
        for i, recs in enumerate(_input()):  # files ordered by modification time
            write_json_lines(src, file_name(i), recs, mtime=base + 10 * i)
        cfg = dict(operator, src=src, checkpoint=os.path.join(root, "checkpoint"), out=out, mode="by_key",
                   interval="1 second")
        if kill:
            _run(root, cfg, "run1", kill=True)
            ckpt = cfg["checkpoint"]
            # killed after the batch's state was written, before it was committed: it is replayed
            assert _log_ids(os.path.join(ckpt, "commits")) == list(range(PAUSE_BATCH))
            assert sorted(_sink_rows(out)) == list(range(PAUSE_BATCH))
        _run(root, cfg, "run2" if kill else "whole", kill=False)
        runs[kill] = _sink_rows(out)
    assert sorted(runs[False]) == list(range(BATCHES))
    assert sum(len(rows) for rows in runs[False].values()) > 0
    assert runs[True] == runs[False]
