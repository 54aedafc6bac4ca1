"""Restarts from a checkpoint: graceful stop/restart and kill -9 mid-batch.

The batches are built so that the output depends on state carried across every batch
boundary: stored entries (later duplicates), per-partition stream time (late records that are
forwarded but not stored, so a second copy is forwarded again only if stream time survived)
and purging. The uninterrupted run is checked against the reference model; every interrupted
run must give the same output, batch by batch.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, List, Optional

import pytest
from _kill9 import kill9_then_restart, log_ids, query_on_files
from _streaming import (
    FileStream,
    dedup,
    model_forwarded,
    partition_map,
    partitioner,
    run_stream,
    shuffle_partitions,
)

S = 1000
INTERVAL = "10 seconds"
INTERVAL_MS = 10 * S

# (label, t seconds); with 2 state partitions a, c, d, None -> 0 and b, g -> 1.
BATCHES_SPEC = [
    [("a", 20), ("b", 5)],  # 1 2
    [("a", 25), ("b", 30), ("c", 21)],  # 3 dup, 4, 5
    [("a", 11), ("a", 9), ("b", 19)],  # 6 dup of a@20, 7 late, 8 late (b@5 gone)
    [("a", 9), ("b", 21), ("c", 30)],  # 9 late again, 10 dup, 11 dup
    [("a", 36), ("c", 22), (None, 40), ("a", 30)],  # 12, 13 late, 14 null, 15 dup of a@36
    [("d", 31), ("d", 29), ("g", 1)],  # 16, 17 dup (late), 18 late
]
EXPECTED_BY_KEY = [1, 2, 4, 5, 7, 8, 9, 12, 13, 14, 16, 18]  # hand-derived from KIP-655 rules
MODES = ("by_key", "by_key_value", "by_id")


def batches_for(mode: str) -> List[List[Dict[str, Any]]]:
    """The spec as records; the label is the key (by_key, by_key_value) or the id (by_id)."""
    out, seq = [], 0
    for batch in BATCHES_SPEC:
        recs = []
        for label, t in batch:
            seq += 1
            if mode == "by_key":
                recs.append(dict(seq=seq, k=label, id=f"i{seq}", ts=t * S))
            elif mode == "by_key_value":
                recs.append(dict(seq=seq, k=label, id="v", ts=t * S))
            else:
                recs.append(dict(seq=seq, k=f"k{seq}", id=label, ts=t * S))
        out.append(recs)
    return out


def build(mode: str):
    return lambda df: dedup(df, mode, INTERVAL)


def expected_batches(spark, mode: str) -> Dict[int, List[int]]:
    """Per-batch forwarded seqs according to the model (one model per state partition)."""
    labels = sorted({lbl for b in BATCHES_SPEC for lbl, _ in b}, key=str) + [None]
    labels = list(dict.fromkeys(labels))
    part = partitioner(spark, mode, 2, labels, labels)
    recs = [r for b in batches_for(mode) for r in b]
    fwd = set(model_forwarded(recs, INTERVAL_MS, mode, part))
    return {i: sorted(r["seq"] for r in b if r["seq"] in fwd) for i, b in enumerate(batches_for(mode))}


@pytest.fixture(scope="module")
def uninterrupted(spark, session_tmp) -> Dict[str, Dict[int, List[int]]]:
    """mode -> batch id -> output seqs of an uninterrupted run."""
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"
    return {
        mode: run_stream(spark, str(session_tmp.mktemp(f"base_{mode}")), build(mode), batches_for(mode)).batches
        for mode in MODES
    }


def test_premise_partitions(spark) -> None:
    parts = partition_map(spark, ["a", "b", "c", "d", "g", None], "string", 2)
    assert parts == {"a": 0, "c": 0, "d": 0, None: 0, "b": 1, "g": 1}


@pytest.mark.parametrize("mode", MODES)
def test_uninterrupted_run_matches_model(spark, uninterrupted, mode: str) -> None:
    assert uninterrupted[mode] == expected_batches(spark, mode)
    if mode == "by_key":
        assert sorted(s for b in uninterrupted[mode].values() for s in b) == EXPECTED_BY_KEY


def run_with_restarts(
    spark, workdir: str, mode: str, stop_after: List[int], restart_partitions: Optional[int] = None
) -> Dict[int, List[int]]:
    """Runs all batches; stops the query after each batch count in ``stop_after`` and restarts
    it from the same checkpoint (with spark.sql.shuffle.partitions=``restart_partitions`` if
    given). Returns batch id -> output seqs over all runs."""
    src, ckpt = os.path.join(workdir, "src"), os.path.join(workdir, "checkpoint")
    merged: Dict[int, List[int]] = {}
    batches = batches_for(mode)
    bounds = [0] + sorted(stop_after) + [len(batches)]
    for a, b in zip(bounds, bounds[1:]):
        fs = FileStream(spark, src, ckpt, build(mode))
        with shuffle_partitions(spark, restart_partitions if a > 0 else None), fs:
            for recs in batches[a:b]:
                fs.add_batch(recs)
        got = fs.batch_seqs()
        assert sorted(got) == list(range(a, b)), f"batch ids of run {a}..{b}: {sorted(got)}"
        merged.update(got)
    return merged


@pytest.mark.parametrize("stop_after", range(1, len(BATCHES_SPEC)))
def test_stop_and_restart_at_each_point(spark, session_tmp, uninterrupted, stop_after: int) -> None:
    got = run_with_restarts(spark, str(session_tmp.mktemp("restart")), "by_key", [stop_after])
    assert got == uninterrupted["by_key"]


@pytest.mark.parametrize("mode", MODES)
def test_restart_between_every_batch(spark, session_tmp, uninterrupted, mode: str) -> None:
    got = run_with_restarts(spark, str(session_tmp.mktemp("restart_all")), mode, list(range(1, len(BATCHES_SPEC))))
    assert got == uninterrupted[mode]


def test_restart_keeps_the_checkpoints_state_partitioning(spark, session_tmp, uninterrupted) -> None:
    # The number of state partitions is fixed at the first run; a different
    # spark.sql.shuffle.partitions on restart must not move keys (or stream times).
    got = run_with_restarts(spark, str(session_tmp.mktemp("restart_parts")), "by_key", [2, 4], restart_partitions=3)
    assert got == uninterrupted["by_key"]


# --- kill -9 ---------------------------------------------------------------------------------

PAUSE_BATCH = 4  # forwards a@36 and stores it: a replay against the wrong state version drops it


def _sink_batches(out: str) -> Dict[int, List[int]]:
    got = {}
    for name in os.listdir(out):
        if name.startswith("batch=") and name.endswith(".json"):
            with open(os.path.join(out, name)) as f:
                got[int(name[len("batch=") : -len(".json")])] = sorted(r["seq"] for r in json.load(f))
    return got


def _state_versions(ckpt: str) -> Dict[str, set]:
    """state/<operator>/<partition> -> store versions with a snapshot or changelog file (kstate's or Spark RocksDB's)."""
    out = {}
    state = os.path.join(ckpt, "state")
    for op in os.listdir(state):
        for part in os.listdir(os.path.join(state, op)):
            d = os.path.join(state, op, part)
            if part.isdigit() and os.path.isdir(d):
                out[f"{op}/{part}"] = {int(m.group(1)) for m in map(_VERSION_FILE.match, os.listdir(d)) if m}
    return out


_VERSION_FILE = re.compile(r"^(\d+)(?:_[^.]*)?\.(?:zip|changelog|kstate\.changelog|kstate\.snapshot)$")


# before_collect: no state written for the batch yet; after_collect: the batch's state store
# version is committed but the batch is not, so the restart replays it on the previous version.
# (The driver also supports "after_write"; for kstate it is the same case as after_collect.)
PHASES = ["before_collect", "after_collect"]


@pytest.fixture(scope="module")
def killed(session_tmp) -> Dict[str, Dict[str, Any]]:
    """One query per phase, both in one driver process, killed (SIGKILL) once each has paused in
    micro-batch PAUSE_BATCH at its phase, then restarted to the end: phase -> what the kill left
    (``sunk``: the sink's batches, ``offsets``, ``commits``, ``versions``: the state files'
    versions) and the sink's batches at the end (``final``)."""
    root = str(session_tmp.mktemp("kill9"))
    queries = {
        phase: query_on_files(
            root,
            phase,
            batches_for("by_key"),
            mode="by_key",
            interval=INTERVAL,
            pause_batch=PAUSE_BATCH,
            pause_phase=phase,
        )
        for phase in PHASES
    }
    got: Dict[str, Dict[str, Any]] = {}

    def after_kill() -> None:
        for phase, q in queries.items():
            ckpt = q["checkpoint"]
            got[phase] = dict(
                sunk=_sink_batches(q["out"]),
                offsets=log_ids(os.path.join(ckpt, "offsets")),
                commits=log_ids(os.path.join(ckpt, "commits")),
                versions=_state_versions(ckpt),
            )

    kill9_then_restart(root, queries, between=after_kill)
    for phase, q in queries.items():
        got[phase]["final"] = _sink_batches(q["out"])
    return got


@pytest.mark.parametrize("phase", PHASES)
def test_kill9_mid_batch_then_restart(uninterrupted, killed, phase: str) -> None:
    got = killed[phase]
    assert sorted(got["sunk"]) == list(range(PAUSE_BATCH)), "killed at the wrong point"
    # The killed batch is planned but not committed, so the restart must replay it ...
    assert got["offsets"] == list(range(PAUSE_BATCH + 1))
    assert got["commits"] == list(range(PAUSE_BATCH))
    # ... and after_collect killed it after every state partition committed the store version
    # that batch writes (version = batch id + 1); before_collect, before any did.
    versions = got["versions"]
    assert len(versions) == 2, versions  # one kstate operator, 2 state partitions
    written = [PAUSE_BATCH + 1 in v for v in versions.values()]
    assert written == [phase != "before_collect"] * 2, versions
    assert got["final"] == uninterrupted["by_key"]
