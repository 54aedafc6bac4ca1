"""Shared pieces of the table operators' property tests (reference model vs kstate).

Records are dicts ``seq, side, k, v, ts`` in ONE source: a row's ``side`` says which input it
belongs to (``t``: a table update, ``s``: a stream row; ``A`` / ``B``: the left / right table of
a table–table join). One file is one micro-batch (``_streaming.run_stream_batches``), so every
input is read in list order; the models are fed each state partition's records in the order
kstate processes them: a one-input operator in list order, a two-input operator in Kafka task
order (docs/operators.md, "Two inputs": each side's rows of the micro-batch are a queue, merged
by the running maximum of their timestamps, null = smallest; ties: left side first, then
position). Running maxima restart at every micro-batch (positions are per micro-batch).

Outputs are compared per micro-batch and per key, in order: within one state partition the
order of a key's results is determined; across partitions the sink sees them in any order.
"""

from __future__ import annotations

import random
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from _property import micro_batches
from _streaming import partition_map, run_stream_batches
from hypothesis import strategies as st

# With 3 state partitions: a -> 2, d -> 1, g -> 1, y -> 0, None -> 0 (test_partition_alphabet_spread).
KEYS = ["a", "d", "g", "y"]
SCHEMA = "seq LONG, side STRING, k STRING, v LONG, ts LONG"
NEG_INF = -(2**63)

Canonical = Dict[int, Dict[Any, List[Tuple]]]


def random_records(rnd: random.Random, n: int, sides: Sequence[str]) -> List[Dict[str, Any]]:
    """``n`` records over ``sides``: keys from a small alphabet (None about one in ten), values
    0..9 (None, a tombstone on a table side, about one in six), timestamps from -20 on (negative
    event times included), mostly near the previous one (small disorder), some jumping anywhere
    (late and far-ahead records), one in twelve null."""
    recs, prev = [], rnd.randint(-5, 20)
    for i in range(n):
        if rnd.random() < 0.08:
            ts = None
        elif rnd.random() < 0.15:
            ts = rnd.randint(-20, 60)
        else:
            ts = prev + rnd.randint(-6, 8)
        prev = prev if ts is None else ts
        recs.append(
            dict(
                seq=i,
                side=rnd.choice(list(sides)),
                k=None if rnd.random() < 0.1 else rnd.choice(KEYS),
                v=None if rnd.random() < 0.17 else rnd.randint(0, 9),
                ts=ts,
            )
        )
    return recs


@st.composite
def scenarios(draw, sides: Sequence[str], min_n: int = 4, max_n: int = 18) -> Dict[str, Any]:
    """Random records split into up to 4 micro-batches."""
    n = draw(st.integers(min_n, max_n))
    recs = random_records(draw(st.randoms(use_true_random=True)), n, sides)
    return dict(records=recs, batches=draw(micro_batches(recs, max_cuts=3)))


def key_partitioner(spark, n: int) -> Callable[[Any], int]:
    pm = partition_map(spark, KEYS + [None], "string", n)
    return lambda k: pm[k]


def by_partition(batch: Sequence[Dict[str, Any]], part: Callable[[Any], int]) -> Dict[int, List[Dict[str, Any]]]:
    out: Dict[int, List[Dict[str, Any]]] = {}
    for r in batch:
        out.setdefault(part(r["k"]), []).append(r)
    return out


def task_order(queues: Sequence[Sequence[Tuple[Optional[int], Any]]]) -> List[Any]:
    """Kafka task order of ``queues`` (each a list of ``(ts, item)`` in its order): sorted by the
    running maximum timestamp of the item's queue up to it (None counts as smallest), then the
    queue's index, then position."""
    keyed = []
    for qi, q in enumerate(queues):
        run = NEG_INF
        for pos, (ts, item) in enumerate(q):
            run = max(run, NEG_INF if ts is None else ts)
            keyed.append(((run, qi, pos), item))
    return [item for _, item in sorted(keyed, key=lambda e: e[0])]


def canonical(batches: Dict[int, List[Any]], key_of: Callable[[Any], Any], row_of: Callable[[Any], Tuple]) -> Canonical:
    """batch id -> key -> that key's rows in order (batches and keys without rows left out)."""
    out: Canonical = {}
    for b, rows in batches.items():
        for r in rows:
            out.setdefault(b, {}).setdefault(key_of(r), []).append(row_of(r))
    return out


def run_kstate(spark, tmp_factory, build, sc: Dict[str, Any], partitions: int) -> Dict[int, List[Any]]:
    """One streaming query over the scenario's micro-batches (append mode): batch id -> rows."""
    return run_stream_batches(
        spark,
        str(tmp_factory.mktemp("tprop")),
        build,
        sc["batches"],
        schema=SCHEMA,
        partitions=partitions,
        output_mode="append",
    )


def describe(sc: Dict[str, Any], partitions: int, part: Callable[[Any], int], **params: Any) -> str:
    batches = [[(r["seq"], r["side"], r["k"], r["v"], r["ts"]) for r in b] for b in sc["batches"]]
    return (
        f"params={params} partitions={partitions}\nbatches (seq, side, k, v, ts)={batches}\n"
        f"state partition of each key={ {k: part(k) for k in KEYS + [None]} }"
    )


def assert_matches_model(
    spark,
    tmp_factory,
    sc: Dict[str, Any],
    partitions: int,
    build,
    expected: Callable[[Callable[[Any], int]], Canonical],
    row_of: Callable[[Any], Tuple],
    key_of: Callable[[Any], Any] = lambda r: r["k"],
    compared: Callable[[Canonical], Any] = lambda c: c,
    **params: Any,
) -> None:
    """Runs ``build`` over the scenario (one query) and asserts ``compared(its output)`` equals
    ``compared(expected(partition_of_key))``."""
    part = key_partitioner(spark, partitions)
    got = canonical(run_kstate(spark, tmp_factory, build, sc, partitions), key_of, row_of)
    assert compared(got) == compared(expected(part)), describe(sc, partitions, part, **params)
