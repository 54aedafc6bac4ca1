"""After a driver crash, Spark's file source can put two files into one micro-batch, and kstate's
output follows the new split (docs/operators.md, "Files after a driver crash").

Spark's file source writes its own log entry for the next micro-batch (``sources/0/<n>``, the
files it will read) before the query writes the offset log entry ``offsets/<n>``. A driver killed
between the two writes leaves a checkpoint whose source log is one batch ahead. On restart the
query plans micro-batch n again, and the file source, which already holds file n in its log,
adds the next file as well: micro-batch n reads two files, which an uninterrupted run reads in
two micro-batches.

The window between the two writes is too short to hit with a signal on purpose, so the test
kills the driver (kill -9, ``_kill9_driver.py``, both cases' queries in one driver process) a moment later, when micro-batch 3 is planned but
has not run (``before_collect``: no state written), and then removes ``offsets/3``, the one file
that a kill inside the window would not have written. What the restart then finds is what such
a crash leaves: commits and offsets up to 2, the source log up to 3.

Each case asserts (1) the restarted query reads files 3 and 4 in one micro-batch and its output
equals an uninterrupted run that reads those two files in one micro-batch (the output follows the
split, deterministically), and (2) which rows differ from the uninterrupted run of one file per
micro-batch, and why. The default processing order (``auto``: event-time order for files) is used.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List

import pytest
from _kill9 import kill9_then_restart, log_ids, query_on_files
from _kill9_driver import build
from _streaming import FileStream, file_name

CRASH_BATCH = 3  # the micro-batch planned when the driver dies; it reads files 3 and 4 after the restart


def rec(seq: int, k: str, ts: int) -> Dict[str, Any]:
    return dict(seq=seq, k=k, id="x", ts=ts)


# One key throughout: stream time is per state partition, and the records that change the output
# are those behind the stream time of their own partition.
#
# A windowed count suppressed until its windows close (5 s windows, grace 2 s). File 3 takes stream
# time to 19 s, which closes the window [10 s, 15 s) with a count of 1 (15 + 2 <= 19); file 4's
# a@13.5 s is then late and dropped. Files 3 and 4 in one micro-batch, in event-time order:
# a@13.5 s comes before a@16 s, at stream time 11 s, and the window counts 2.
WINDOW = dict(
    cfg=dict(operator="window_final", size="5 seconds", grace="2 seconds"),
    files=[
        [rec(0, "a", 1000)],
        [rec(1, "a", 6000)],
        [rec(2, "a", 11000)],
        [rec(3, "a", 16000), rec(4, "a", 19000)],
        [rec(5, "a", 13500), rec(6, "a", 21000)],
        [rec(7, "a", 30000)],
    ],
)

# deduplicate_by_key with a 5 s interval. One file per micro-batch: a@20 s (file 3) is forwarded;
# in file 4, a@18 s (within 5 s of it, not late) is dropped as its duplicate, and a@12 s, more than
# 5 s behind stream time (20 s), is late: forwarded without a duplicate check. Files 3 and 4 in one
# micro-batch, in event-time order: a@12 s comes first, at stream time 9 s, and is a duplicate of
# a@8 s (dropped); a@18 s is forwarded and a@20 s is now its duplicate (dropped). The on-time
# records a@18 s and a@20 s swap: which of two duplicates is kept follows the processing order.
DEDUP = dict(
    cfg=dict(operator="dedup", mode="by_key", interval="5 seconds"),
    files=[
        [rec(0, "a", 1000)],
        [rec(1, "a", 8000)],
        [rec(2, "a", 9000)],
        [rec(3, "a", 20000)],
        [rec(4, "a", 18000), rec(5, "a", 12000)],
        [rec(6, "a", 40000)],
    ],
)


def _rows(batches: Dict[int, List[Any]]) -> Dict[int, List[str]]:
    return {
        b: sorted(json.dumps(r.asDict() if hasattr(r, "asDict") else r, sort_keys=True, default=str) for r in rows)
        for b, rows in batches.items()
    }


def _reference(spark, workdir: str, cfg: Dict[str, Any], files: List[List[Dict[str, Any]]]) -> Dict[int, List[str]]:
    """The driver's query in the tests' session, never stopped, each element of ``files`` one
    micro-batch."""
    fs = FileStream(spark, os.path.join(workdir, "src"), os.path.join(workdir, "checkpoint"), lambda df: build(df, cfg))
    with fs:
        for recs in files:
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


def _source_log(checkpoint: str, batch: int) -> List[str]:
    """The file names of source batch ``batch`` in Spark's file source log."""
    with open(os.path.join(checkpoint, "sources", "0", str(batch))) as f:
        return sorted(os.path.basename(json.loads(line)["path"]) for line in f.read().splitlines()[1:])


def _seqs(rows: Dict[int, List[str]]) -> List[int]:
    return sorted(json.loads(r)["seq"] for b in rows.values() for r in b if "seq" in json.loads(r))


CASES = {"window_final": WINDOW, "dedup": DEDUP}


@pytest.fixture(scope="module")
def crashed(session_tmp) -> Dict[str, Dict[str, Any]]:
    """Both cases' queries in one driver process, killed (SIGKILL) once each has planned
    micro-batch CRASH_BATCH and not run it; then each checkpoint loses ``offsets/3`` (what a crash
    inside the window leaves out) and one driver process runs both to the end: case -> what the
    kill left (``commits``, ``source``: the source log's batch CRASH_BATCH), the checkpoint and the
    sink directory."""
    root = str(session_tmp.mktemp("crash"))
    queries = {
        name: query_on_files(
            root,
            name,
            case["files"],
            **case["cfg"],
            order="auto",
            pause_batch=CRASH_BATCH,
            pause_phase="before_collect",
        )
        for name, case in CASES.items()
    }
    got: Dict[str, Dict[str, Any]] = {}

    def after_kill() -> None:
        for name, q in queries.items():
            ckpt = q["checkpoint"]
            got[name] = dict(
                commits=log_ids(os.path.join(ckpt, "commits")),
                source=_source_log(ckpt, CRASH_BATCH),
                ckpt=ckpt,
                out=q["out"],
            )
            for f in (str(CRASH_BATCH), f".{CRASH_BATCH}.crc"):  # what a crash inside the window leaves out
                if os.path.exists(os.path.join(ckpt, "offsets", f)):
                    os.remove(os.path.join(ckpt, "offsets", f))

    kill9_then_restart(root, queries, between=after_kill)
    return got


@pytest.mark.parametrize("name", list(CASES))
def test_a_driver_crash_that_packs_two_files_into_one_micro_batch_changes_the_output(
    spark, session_tmp, crashed, name
) -> None:
    case = CASES[name]
    cfg = dict(case["cfg"], order="auto")
    files = case["files"]
    one_per_batch = _reference(spark, str(session_tmp.mktemp("crash_ref1")), cfg, files)
    merged = files[:CRASH_BATCH] + [files[CRASH_BATCH] + files[CRASH_BATCH + 1]] + files[CRASH_BATCH + 2 :]
    new_split = _reference(spark, str(session_tmp.mktemp("crash_ref2")), cfg, merged)

    run = crashed[name]
    ckpt, out = run["ckpt"], run["out"]
    assert run["commits"] == list(range(CRASH_BATCH))
    assert run["source"] == [file_name(CRASH_BATCH)]

    # the restart read files 3 and 4 in micro-batch 3 (source batches 3 and 4), file 5 in batch 4
    assert _source_log(ckpt, CRASH_BATCH + 1) == [file_name(CRASH_BATCH + 1)]
    assert log_ids(os.path.join(ckpt, "commits")) == list(range(len(files) - 1))
    got = _sink_rows(out)
    assert got == new_split  # the output follows the new split, micro-batch by micro-batch
    assert got != {b: rows for b, rows in one_per_batch.items() if b < len(files) - 1}

    if name == "window_final":
        finals = lambda rows: sorted(  # noqa: E731
            (json.loads(r)["k"], str(json.loads(r)["window_start"]), json.loads(r)["count"])
            for b in rows.values()
            for r in b
        )
        only_before = set(finals(one_per_batch)) - set(finals(got))
        only_after = set(finals(got)) - set(finals(one_per_batch))
        assert [(k, c) for k, _, c in only_before] == [("a", 1)], only_before
        assert [(k, c) for k, _, c in only_after] == [("a", 2)], only_after
        assert [w for _, w, _ in only_before] == [w for _, w, _ in only_after]
    else:
        assert _seqs(one_per_batch) == [0, 1, 3, 5, 6]
        assert _seqs(got) == [0, 1, 4, 6]
