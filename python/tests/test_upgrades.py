"""Upgrades between Spark minors (docs/upgrades.md): a checkpoint kstate wrote on the other Spark
minor restarts on this one, for every operator.

The fixtures (``fixtures/checkpoints/spark-<minor>/<pipeline>/``, written by
``upgrade_fixtures.py``) hold each pipeline's first two micro-batches as the other minor ran
them: input files, checkpoint and file sink. On pyspark 4.3 the spark-4.2 fixtures are restarted,
on pyspark 4.2 (``make test-spark42``) the spark-4.3 ones. A test copies its fixture into a
temporary directory (``upgrade_fixtures.install``: the logs' absolute paths, saved as a token,
become that directory), restarts the pipeline on it for two more micro-batches, and compares
with one uninterrupted run of the same pipeline on this minor:

- the file sink's complete output, micro-batch by micro-batch (the first two micro-batches were
  written by the other minor);
- the state ``kstate.read_state`` reports for each kstate operator of the query, as of the
  fixture's last micro-batch (before the restart: this minor reads the other's state) and as of
  the last one (after it); for a versioned table also ``kstate.read_table`` at several times;
- every state store's entries in all its column families at those two versions, as its files
  hold them (``upgrade_fixtures.store_contents``): ``read_state`` shows the default column family
  only, which the table, join, aggregation and suppression operators leave empty.

Also here: a checkpoint claiming a format newer than this kstate reads (its state files, its
operators' configuration records) fails with ``KSTATE_CHECKPOINT_FROM_NEWER_KSTATE`` and is left
as it was.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from typing import Dict, List

import kstate
import pyspark
import pytest
import upgrade_fixtures as fx

THIS = fx.spark_minor(pyspark.__version__)
OTHER = {"4.3": "4.2", "4.2": "4.3"}[THIS]
FIXTURES = os.path.join(fx.FIXTURES, f"spark-{OTHER}")
AS_OF = [None, 2000, 7000, 12000]


def _json(rows) -> List[str]:
    return sorted(json.dumps(r.asDict(recursive=True), sort_keys=True, default=repr) for r in rows)


def _state(spark, root: str, batch_id: int) -> Dict[str, List[str]]:
    """operator name -> its state as read_state reports it at ``batch_id``."""
    ckpt = fx.paths(root)["checkpoint"]
    return {op: _json(kstate.read_state(spark, ckpt, op, batch_id=batch_id).collect()) for op in fx.operators(ckpt)}


def _tables(spark, name: str, root: str) -> Dict[str, List[str]]:
    ckpt = fx.paths(root)["checkpoint"]
    return {
        f"{t}@{a}": _json(kstate.read_table(spark, ckpt, t, as_of=a).collect())
        for t in fx.PIPELINES[name].tables
        for a in AS_OF
    }


@pytest.fixture(scope="module")
def uninterrupted(spark, session_tmp):
    """name -> the root of one uninterrupted run of all micro-batches on this minor (run once)."""
    runs: Dict[str, str] = {}

    def get(name: str) -> str:
        if name not in runs:
            root = str(session_tmp.mktemp(f"whole_{name}")) + "/run"
            fx.run(spark, name, root, range(fx.BATCHES))
            runs[name] = root
        return runs[name]

    return get


def _fixture(name: str) -> str:
    d = os.path.join(FIXTURES, name)
    assert os.path.isdir(os.path.join(d, "checkpoint")), f"missing fixture {d} (docs/upgrades.md: regenerate)"
    return d


@pytest.mark.parametrize("name", fx.NAMES)
def test_a_checkpoint_of_the_other_spark_minor_restarts_here(spark, session_tmp, uninterrupted, name) -> None:
    whole = uninterrupted(name)
    root = str(session_tmp.mktemp(f"upgrade_{name}")) + "/run"
    fx.install(_fixture(name), root)

    last = fx.FIXTURE_BATCHES - 1
    ckpt, whole_ckpt = fx.paths(root)["checkpoint"], fx.paths(whole)["checkpoint"]
    assert fx.operators(ckpt) == fx.operators(whole_ckpt)
    assert _state(spark, root, last) == _state(spark, whole, last)
    # every column family (read_state shows the default one, which many operators leave empty):
    # the other minor's files hold what this minor's hold
    assert fx.store_contents(ckpt, fx.FIXTURE_BATCHES) == fx.store_contents(whole_ckpt, fx.FIXTURE_BATCHES)

    progress = fx.run(spark, name, root, range(fx.FIXTURE_BATCHES, fx.BATCHES))
    got, want = fx.output_rows(spark, name, root), fx.output_rows(spark, name, whole)
    assert sorted(want) == list(range(fx.BATCHES))
    assert sum(len(rows) for b, rows in want.items() if b >= fx.FIXTURE_BATCHES) > 0  # the restart emits
    assert got == want
    assert _state(spark, root, fx.BATCHES - 1) == _state(spark, whole, fx.BATCHES - 1)
    after = fx.store_contents(ckpt, fx.BATCHES)
    assert after == fx.store_contents(whole_ckpt, fx.BATCHES)
    assert sum(len(entries) for entries in after.values()) > 0
    assert _tables(spark, name, root) == _tables(spark, name, whole)

    # the restart restored the fixture's state: from its snapshots where it has them (else from
    # its changelogs, replayed record by record)
    def restored(metric: str) -> int:
        return sum(op["customMetrics"].get(metric, 0) for p in progress for op in p["stateOperators"])

    if fx.PIPELINES[name].snapshot:
        assert restored("kstateStoreRestoredFromSnapshot") > 0, progress
    else:
        assert restored("kstateStoreRestoreRecordsReplayed") > 0, progress
    if name == "until_time_limit_spilling":
        spills = [op["customMetrics"]["kstateStoreSpills"] for p in progress for op in p["stateOperators"]]
        assert sum(spills) > 0


# --- a checkpoint of a newer kstate -----------------------------------------------------------


def _files(root: str) -> Dict[str, str]:
    """relative path -> sha256 of every file under ``root``."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def _restart_fails_and_leaves_the_checkpoint(spark, name: str, root: str):
    """Restarts ``name`` on ``root`` with its next micro-batch; returns the error raised: the
    query's ``StreamingQueryException``, also a ``KStateError``. Nothing of kstate's in the
    checkpoint changed, no micro-batch was committed, the sink got nothing."""
    from pyspark.errors import StreamingQueryException

    ckpt = fx.paths(root)["checkpoint"]
    state_before, commits_before = (
        _files(os.path.join(ckpt, "state")),
        sorted(os.listdir(os.path.join(ckpt, "commits"))),
    )
    output_before = _files(fx.paths(root)["output"])
    with pytest.raises(kstate.KStateError) as e:
        fx.run(spark, name, root, [fx.FIXTURE_BATCHES])
    assert _files(os.path.join(ckpt, "state")) == state_before
    assert sorted(os.listdir(os.path.join(ckpt, "commits"))) == commits_before
    assert _files(fx.paths(root)["output"]) == output_before
    assert isinstance(e.value, StreamingQueryException), type(e.value)
    return e.value


def test_state_files_of_a_newer_format_fail_with_a_named_error_and_stay(spark, session_tmp) -> None:
    """Every state file of the fixture claims format 6 (its header's format version: offset 4,
    after the magic number), as a newer kstate's would (formats 3 to 5 are this kstate's: checkpoint
    format v2, and snapshots holding a RocksDB table file)."""
    name = "stream_table_join"
    root = str(session_tmp.mktemp("newer_state_files")) + "/run"
    fx.install(_fixture(name), root)
    patched = []
    for dirpath, _, files in os.walk(os.path.join(fx.paths(root)["checkpoint"], "state")):
        for f in files:
            if f.endswith(".kstate.changelog") or f.endswith(".kstate.snapshot"):
                p = os.path.join(dirpath, f)
                with open(p, "r+b") as fh:
                    fh.seek(4)
                    assert struct.unpack(">i", fh.read(4))[0] == 2
                    fh.seek(4)
                    fh.write(struct.pack(">i", 6))
                patched.append(p)
    assert patched
    err = _restart_fails_and_leaves_the_checkpoint(spark, name, root)
    assert err.error_class == "KSTATE_CHECKPOINT_FROM_NEWER_KSTATE", err
    assert "format version 6" in err.message and "reads format versions 1, 2, 3, 4 and 5" in err.message, err.message
    assert any(os.path.basename(p) in err.message for p in patched), err.message
    # read_state reads the files in its tasks: the error reaches here in the job's failure
    with pytest.raises(Exception, match="KSTATE_CHECKPOINT_FROM_NEWER_KSTATE"):
        kstate.read_state(spark, fx.paths(root)["checkpoint"], "join").collect()


def test_an_operator_record_of_a_newer_format_fails_with_a_named_error_and_stays(spark, session_tmp) -> None:
    """The configuration record of each operator claims format 2 (its ``#kstate-format=`` line)."""
    name = "table_table_join"
    root = str(session_tmp.mktemp("newer_record")) + "/run"
    fx.install(_fixture(name), root)
    state = os.path.join(fx.paths(root)["checkpoint"], "state")
    records = [
        os.path.join(state, op, "_kstate", "operator.properties")
        for op in os.listdir(state)
        if os.path.isfile(os.path.join(state, op, "_kstate", "operator.properties"))
    ]
    assert len(records) == 3
    for p in records:
        with open(p) as f:
            text = f.read()
        assert "#kstate-format=1\n" in text, text
        with open(p, "w") as f:
            f.write(text.replace("#kstate-format=1\n", "#kstate-format=2\n"))
    err = _restart_fails_and_leaves_the_checkpoint(spark, name, root)
    assert err.error_class == "KSTATE_CHECKPOINT_FROM_NEWER_KSTATE", err
    assert "format version 2" in err.message and "operator.properties" in err.message, err.message
    with pytest.raises(kstate.KStateError) as e:
        kstate.read_state(spark, fx.paths(root)["checkpoint"], "join")
    assert e.value.error_class == "KSTATE_CHECKPOINT_FROM_NEWER_KSTATE", e.value
