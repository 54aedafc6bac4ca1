"""Tests for the KIP-655 reference model; each cites the KIP rule/example."""

from __future__ import annotations

import random
from typing import Dict, List, Optional, Sequence

import pytest

from .dedup_model import (
    LONG_MIN,
    DedupModel,
    Rec,
    distinct_session,
    distinct_tumbling,
    run,
)

S = 1000  # one second in ms
IV = 10 * S  # deduplicationInterval = 10s used throughout the KIP examples


def k(key: object, t_s: Optional[float]) -> Rec:
    """by_key record with timestamp in seconds."""
    return Rec(key, None, None if t_s is None else int(t_s * S))


def feed(model: DedupModel, recs: Sequence[Rec]) -> List[bool]:
    return [model.process(r) for r in recs]


# --- Identity and null dedup key ("Null deduplication key") -----------------


def test_identity_per_mode() -> None:
    # by_key ignores id; by_id ignores key; by_key_value needs both equal.
    assert run([Rec("a", 1, 0), Rec("a", 2, 1)], IV, "by_key") == [True, False]
    assert run([Rec("a", 1, 0), Rec("b", 1, 1)], IV, "by_id") == [True, False]
    assert run([Rec("a", 1, 0), Rec("a", 2, 1), Rec("b", 1, 2), Rec("a", 1, 3)], IV, "by_key_value") == [
        True,
        True,
        True,
        False,
    ]


@pytest.mark.parametrize(
    "mode,rec",
    [
        ("by_key", Rec(None, 1, 5)),
        ("by_id", Rec("a", None, 5)),
        ("by_key_value", Rec(None, 1, 5)),  # null key
        ("by_key_value", Rec("a", None, 5)),  # null id
    ],
)
def test_null_identity_always_forwarded_never_stored(mode: str, rec: Rec) -> None:
    # "records whose key (respectively id) is null are always forwarded";
    # by_key_value: "if one of them is null, we forward the record".
    m = DedupModel(IV, mode)
    assert feed(m, [rec, rec, rec]) == [True, True, True]
    assert m.null_keys_forwarded == 3 and m.stored_entries() == 0
    assert m.duplicates_dropped == 0


def test_null_identity_advances_stream_time_and_purges() -> None:
    # Example 3 with k2 replaced by a null-key record: stream time is per task,
    # so the null-key record at 21s still purges k1@10s.
    m = DedupModel(IV, "by_key")
    assert feed(m, [k("k1", 10), k(None, 21)]) == [True, True]
    assert m.stream_time == 21 * S and m.stored_entries() == 0
    assert m.process(k("k1", 9)) is True and m.late_forwarded == 1


# --- Null timestamp (kstate decision) ------------------------------------------


def test_null_timestamp_forwarded_not_stored_no_stream_time() -> None:
    m = DedupModel(IV, "by_key")
    assert m.process(k("a", 10)) is True
    assert feed(m, [k("a", None), k("a", None)]) == [True, True]
    assert m.null_timestamps_forwarded == 2 and m.duplicates_dropped == 0
    assert m.stream_time == 10 * S and m.stored() == {"a": {10 * S}}
    assert m.process(k("a", 12)) is False  # store still holds a@10s


def test_null_identity_takes_precedence_over_null_timestamp() -> None:
    m = DedupModel(IV, "by_key")
    assert m.process(k(None, None)) is True
    assert (m.null_keys_forwarded, m.null_timestamps_forwarded) == (1, 0)
    assert m.stream_time == LONG_MIN


# --- Stream time ------------------------------------------------------------


def test_stream_time_is_max_and_starts_at_long_min() -> None:
    m = DedupModel(IV, "by_key")
    assert m.stream_time == -(2**63)
    feed(m, [k("a", 20), k("b", 5), k("c", 25), k("d", 24)])
    assert m.stream_time == 25 * S


def test_stream_time_updated_before_decision() -> None:
    # Example 3: "event k2 @t=21s -> Forwarded -> event k1 @t=10s is now
    # purged": the purge is caused by k2's own timestamp, on its arrival.
    m = DedupModel(IV, "by_key")
    m.process(k("k1", 10))
    m.process(k("k2", 21))
    assert m.stored() == {"k2": {21 * S}}


# --- "Duplicate sequence" ---------------------------------------------------


def test_duplicate_sequence_in_order() -> None:
    # a1@t fwd+saved; a2@t+8 not fwd, store not updated; a3@t+11 forwarded.
    t = 100
    m = DedupModel(IV, "by_key")
    assert feed(m, [k("a", t), k("a", t + 8)]) == [True, False]
    assert m.stored() == {"a": {t * S}}  # "we don't update the store"
    assert m.process(k("a", t + 11)) is True
    assert m.stored() == {"a": {(t + 11) * S}}


def test_duplicate_sequence_out_of_order() -> None:
    # a1@t fwd; a2@t-8 not fwd; a3@t-11 forwarded (late).
    t = 100
    m = DedupModel(IV, "by_key")
    assert feed(m, [k("a", t), k("a", t - 8), k("a", t - 11)]) == [True, False, True]
    assert m.late_forwarded == 1 and m.stored() == {"a": {t * S}}


# --- "Deduplication interval boundaries" (inclusive) --------------------------


def test_boundaries_in_order() -> None:
    assert run([k("a", 5), k("a", 15), k("a", 16)], IV, "by_key") == [True, False, True]


def test_boundaries_out_of_order() -> None:
    assert run([k("a", 15), k("a", 5), k("a", 4)], IV, "by_key") == [True, False, True]


def test_boundaries_interval_zero() -> None:
    assert run([k("a", 5), k("a", 5), k("a", 6)], 0, "by_key") == [True, False, True]


# --- "Late events by more than deduplicationInterval" -------------------------


def test_late_example_1() -> None:
    m = DedupModel(IV, "by_key")
    assert feed(m, [k("k", 20), k("k", 25), k("k", 11), k("k", 9)]) == [True, False, False, True]
    assert (m.duplicates_dropped, m.late_forwarded) == (2, 1)
    assert m.stream_time == 25 * S and m.stored() == {"k": {20 * S}}


def test_late_example_2() -> None:
    # k1@10s kept at streamTime 20s: purge bound is inclusive (ts >= st - iv).
    m = DedupModel(IV, "by_key")
    assert feed(m, [k("k1", 10), k("k2", 20), k("k1", 9)]) == [True, True, False]
    assert m.stored_entries() == 2


def test_late_example_3() -> None:
    m = DedupModel(IV, "by_key")
    assert feed(m, [k("k1", 10), k("k2", 21), k("k1", 9)]) == [True, True, True]
    assert m.late_forwarded == 1 and m.stored_entries() == 1


def test_late_forwarded_record_is_not_stored() -> None:
    # "their duplicates received afterwards won't be detected as duplicates"
    m = DedupModel(IV, "by_key")
    assert feed(m, [k("k", 20), k("k", 9), k("k", 9)]) == [True, True, True]
    assert m.late_forwarded == 2 and m.stored_entries() == 1


# --- "first record received ... is the one forwarded" ----------------------------


def test_first_record_wins_out_of_order_within_interval() -> None:
    m = DedupModel(IV, "by_key")
    assert feed(m, [k("a", 10), k("a", 3), k("a", 17), k("a", 20)]) == [True, False, False, False]
    assert m.stored() == {"a": {10 * S}} and m.duplicates_dropped == 3


def test_identities_are_independent() -> None:
    assert run([k("a", 1), k("b", 1), k("a", 2), k("b", 12)], IV, "by_key") == [True, True, False, True]


def test_stored_entry_outside_interval_is_replaced() -> None:
    # stored at t, new at t+11 (interval 10): forwarded; old entry purged.
    m = DedupModel(IV, "by_key")
    feed(m, [k("a", 0), k("a", 11)])
    assert m.stored() == {"a": {11 * S}} and m.stored_entries() == 1


def _replace_model(recs: Sequence[Rec], iv: int) -> List[bool]:
    """Alternative formulation: one stored ts per key, replaced on forward."""
    st: int = LONG_MIN
    store: Dict[object, int] = {}
    out: List[bool] = []
    for r in recs:
        assert r.ts is not None
        st = max(st, r.ts)
        s = store.get(r.key)
        if s is not None and s >= st - iv and abs(s - r.ts) <= iv:
            out.append(False)
        elif r.ts < st - iv:
            out.append(True)
        else:
            store[r.key] = r.ts
            out.append(True)
    return out


@pytest.mark.parametrize("seed", range(20))
def test_window_store_has_at_most_one_live_entry_per_identity(seed: int) -> None:
    # Window store keyed by (id, ts) (KIP "Rejected Alternatives: window
    # store", fetch in [ts-iv, ts+iv]) is equivalent to a single replaced entry.
    rnd = random.Random(seed)
    iv = rnd.choice([0, 1, 3, 10])
    recs = [Rec(rnd.choice("abc"), None, rnd.randint(0, 60)) for _ in range(200)]
    m = DedupModel(iv, "by_key")
    got = []
    for r in recs:
        got.append(m.process(r))
        assert all(len(v) == 1 for v in m.stored().values())
        assert all(t >= m.stream_time - iv for v in m.stored().values() for t in v)
    assert got == _replace_model(recs, iv)
    assert m.duplicates_dropped == got.count(False)


def test_invalid_arguments() -> None:
    with pytest.raises(ValueError):
        DedupModel(IV, "by_value")
    with pytest.raises(ValueError):
        DedupModel(-1, "by_key")


# --- Older windowed distinct() proposal --------------------------------------

KIP_SECONDS = [4, 5, 6, 23, 22, 24, 34, 33, 32, 7, 22, 35]
KIP_RECORDS = [("key", t * S) for t in KIP_SECONDS]


def test_distinct_tumbling_kip_example() -> None:
    assert distinct_tumbling(KIP_RECORDS, 10 * S) == [
        ("key", 0, 10000, 4000),
        ("key", 20000, 30000, 23000),
        ("key", 30000, 40000, 34000),
    ]


def test_distinct_session_gap_10s_kip_example() -> None:
    # "all the records bigger than 7 are 'stuck together' in one session";
    # requires an inclusive gap (34 - 24 == 10).
    assert distinct_session(KIP_RECORDS, 10 * S) == [
        ("key", 4000, 4000, 4000),
        ("key", 23000, 23000, 23000),
    ]


def test_distinct_session_gap_9s_kip_example() -> None:
    assert distinct_session(KIP_RECORDS, 9 * S) == [
        ("key", 4000, 4000, 4000),
        ("key", 23000, 23000, 23000),
        ("key", 34000, 34000, 34000),
    ]


def test_distinct_session_bridging_record_merges_and_is_dropped() -> None:
    recs = [("k", 0), ("k", 20), ("k", 10), ("k", 31), ("k", 41)]
    # 10 bridges [0,0] and [20,20] into [0,20]; 31 opens a new session; 41
    # joins it (inclusive gap).
    assert distinct_session(recs, 10) == [("k", 0, 0, 0), ("k", 20, 20, 20), ("k", 31, 31, 31)]


def test_distinct_no_grace_per_key_and_nulls_dropped() -> None:
    recs = [("a", 25), ("b", 25), ("a", 3), (None, 1), ("a", None), ("a", 29)]
    # late a@3 opens a new window and is emitted (no grace); b is independent.
    assert distinct_tumbling(recs, 10) == [("a", 20, 30, 25), ("b", 20, 30, 25), ("a", 0, 10, 3)]
    assert distinct_session(recs, 10) == [("a", 25, 25, 25), ("b", 25, 25, 25), ("a", 3, 3, 3)]
