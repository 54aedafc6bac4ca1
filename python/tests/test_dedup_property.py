"""Property: kstate forwards exactly what the reference model forwards.

Random records (small key/id alphabets incl. None, out-of-order and late timestamps, some null
timestamps), random interval, random operation, random micro-batch split. Each example runs
as a fresh streaming query (one file per micro-batch, so every state partition processes its
records in list order) and, as a cross-check, as a batch DataFrame (DataFrame order). The
oracle runs one DedupModel per state partition: pmod(hash(<partition column>), n).

Examples are derandomized (stable CI). Shrinking is off to bound the runtime of a failing run
(each example runs Spark jobs); set KSTATE_HYPOTHESIS_SHRINK=1 to get a minimal example.
"""

from __future__ import annotations

import os
import random
from typing import Any, Dict, List

import pytest
from _streaming import dedup, model_forwarded, partitioner, run_batch_df, run_stream, with_ts_type
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

# With 3 state partitions: keys a->2, d->1, g->1, y->0; ids x->2, z->1, y->0; None->0
# (checked by test_partition_alphabets_spread).
KEYS = ["a", "d", "g", "y"]  # + None
IDS = ["x", "z", "y"]  # + None
MODES = ("by_key", "by_key_value", "by_id")
INTERVALS_MS = (2500, 1000, 0, 250, 1, 5000)  # hypothesis favours the first ones
SCHEMA = "seq LONG, k STRING, id STRING, ts_ms LONG"

PHASES = (
    [Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink]
    if os.environ.get("KSTATE_HYPOTHESIS_SHRINK")
    else [Phase.explicit, Phase.generate]
)
PROPERTY_SETTINGS = settings(
    max_examples=int(os.environ.get("KSTATE_HYPOTHESIS_EXAMPLES", "7")),
    deadline=None,
    derandomize=True,
    database=None,
    phases=PHASES,
    suppress_health_check=list(HealthCheck),
    print_blob=True,
)


def _records(rnd: random.Random, n: int) -> List[Dict[str, Any]]:
    """``n`` records. Keys/ids from small alphabets, None about one time in eight. Timestamps
    on a 250 ms grid (plenty of exact interval boundaries), some +1 ms off it, from -2 s
    (before the epoch) to ~12 s: most near the previous one (clusters of duplicates, small
    disorder), some jump anywhere (late records, stream-time jumps), one in ten null."""

    def maybe_none(values: List[Any]) -> Any:
        return None if rnd.random() < 0.125 else rnd.choice(values)

    recs, prev = [], rnd.randint(0, 20) * 250
    for i in range(n):
        off = 1 if rnd.random() < 0.2 else 0
        if rnd.random() < 0.1:
            ts = None
        elif rnd.random() < 0.15:
            ts = rnd.randint(-8, 40) * 250 + off
        else:
            ts = prev + rnd.randint(-6, 8) * 250 + off
        prev = prev if ts is None else ts
        recs.append(dict(seq=i, k=maybe_none(KEYS), id=maybe_none(IDS), ts_ms=ts))
    return recs


@st.composite
def scenarios(draw, mode: str) -> Dict[str, Any]:
    n = draw(st.integers(4, 16))
    # Record contents come from a hypothesis-seeded Random: uniform choices give a much
    # richer mix of duplicates / late / null records per example than hypothesis' own
    # simplicity-biased draws (shrinking is off by default anyway).
    recs = _records(draw(st.randoms(use_true_random=True)), n)
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=3)))
    bounds = [0] + cuts + [n]
    return dict(
        records=recs,
        batches=[recs[a:b] for a, b in zip(bounds, bounds[1:])],
        mode=mode,
        interval=draw(st.sampled_from(INTERVALS_MS)),
        ts_type=draw(st.sampled_from(["long", "timestamp", "timestamp_ntz"])),
    )


def check(spark, tmp_factory, sc: Dict[str, Any], partitions: int) -> None:
    mode, iv, ts_type = sc["mode"], sc["interval"], sc["ts_type"]
    part = partitioner(spark, mode, partitions, KEYS + [None], IDS + [None])
    model_recs = [dict(seq=r["seq"], k=r["k"], id=r["id"], ts=r["ts_ms"]) for r in sc["records"]]
    expected = model_forwarded(model_recs, iv, mode, part)

    def build(df):
        return dedup(with_ts_type(df, ts_type), mode, iv)

    res = run_stream(spark, str(tmp_factory.mktemp("prop")), build, sc["batches"], schema=SCHEMA, partitions=partitions)
    detail = (
        f"mode={mode} interval={iv}ms ts_type={ts_type} partitions={partitions}\n"
        f"batches={[[(r['seq'], r['k'], r['id'], r['ts_ms']) for r in b] for b in sc['batches']]}\n"
        f"state partition of each seq={ {r['seq']: part(r) for r in model_recs} }"
    )
    assert res.seqs == expected, f"streaming output != model\n{detail}"
    # The output is a set of input rows: no row twice.
    assert len(res.rows) == len(set(res.seqs)), detail

    batch_rows = run_batch_df(spark, build, sc["records"], schema=SCHEMA, partitions=partitions)
    assert sorted(r["seq"] for r in batch_rows) == expected, f"batch DataFrame != model\n{detail}"


def test_partition_alphabets_spread(spark) -> None:
    """Premise of the 3-partition property: the alphabets hit more than one state partition."""
    for mode in MODES:
        part = partitioner(spark, mode, 3, KEYS + [None], IDS + [None])
        values = KEYS if mode != "by_id" else IDS
        field = "k" if mode != "by_id" else "id"
        assert len({part({field: v}) for v in values}) > 1, mode


@pytest.mark.parametrize("mode", MODES)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_streaming_matches_model_one_partition(spark, session_tmp, mode, data) -> None:
    check(spark, session_tmp, data.draw(scenarios(mode), label="scenario"), partitions=1)


@pytest.mark.parametrize("mode", MODES)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_streaming_matches_model_three_partitions(spark, session_tmp, mode, data) -> None:
    check(spark, session_tmp, data.draw(scenarios(mode), label="scenario"), partitions=3)


# --- extreme values: no overflow at the ends of the LONG range ------------------------------

LONG_MAX = 2**63 - 1
EXTREME_TS = [
    0,
    LONG_MAX,
    -LONG_MAX,
    LONG_MAX - 1,
    1,
    -LONG_MAX + 1,
    LONG_MAX // 2,
    -(LONG_MAX // 2),
    LONG_MAX,
    0,
    -LONG_MAX,
    None,
    LONG_MAX - 2,
]


@pytest.mark.parametrize(
    "runner,interval",
    [("batch", iv) for iv in (0, 1, 2**62, LONG_MAX - 1, LONG_MAX)] + [("stream", 1), ("stream", LONG_MAX)],
)
def test_extreme_timestamps_and_intervals_match_model(spark, session_tmp, runner: str, interval: int) -> None:
    # Long.MinValue itself is kstate's null timestamp, so the range used is [-MAX, MAX].
    recs = [dict(seq=i, k="a" if i % 3 else "b", id="x", ts_ms=t) for i, t in enumerate(EXTREME_TS)]
    model_recs = [dict(seq=r["seq"], k=r["k"], id=r["id"], ts=r["ts_ms"]) for r in recs]
    expected = model_forwarded(model_recs, interval, "by_key")  # one state partition

    def build(df):
        return dedup(df, "by_key", interval, ts="ts_ms")

    if runner == "batch":
        got = sorted(r["seq"] for r in run_batch_df(spark, build, recs, schema=SCHEMA, partitions=1))
    else:
        got = run_stream(
            spark,
            str(session_tmp.mktemp("extreme")),
            build,
            [recs[:5], recs[5:9], recs[9:]],
            schema=SCHEMA,
            partitions=1,
        ).seqs
    assert got == expected
