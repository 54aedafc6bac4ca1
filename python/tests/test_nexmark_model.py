"""The Nexmark generator (bench/nexmark_model.py) follows the model it names: Nexmark v0.2.0's
proportions, id sequences, hot-key skew, event-time spacing and bounded out-of-orderness; and
its exact query answers (the benchmark's reference) on hand-made inputs. No Spark."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _model():
    spec = importlib.util.spec_from_file_location("nexmark_model", ROOT / "bench" / "nexmark_model.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("nexmark_model", mod)
    spec.loader.exec_module(mod)
    return mod


m = _model()
N = 500_000  # a multiple of 50 and of every group size below


@pytest.fixture(scope="module")
def in_order():
    return m.generate(m.ModelConfig(events=N), seed=1)


@pytest.fixture(scope="module")
def shuffled():
    return m.generate(m.ModelConfig(events=N, out_of_order_group=5_000), seed=1)


def emission_times(ev) -> np.ndarray:
    ts = np.empty(ev.cfg.events, dtype=np.int64)
    for cols in (ev.persons, ev.auctions, ev.bids):
        ts[cols["pos"]] = cols["date_time"]
    return ts


@pytest.mark.parametrize("fixture", ["in_order", "shuffled"])
def test_proportions_are_1_3_46_per_50_events(fixture, request) -> None:
    ev = request.getfixturevalue(fixture)
    assert (len(ev.persons["id"]), len(ev.auctions["id"]), len(ev.bids["auction"])) == (
        N // 50,
        3 * N // 50,
        46 * N // 50,
    )
    # every window of 50 event numbers holds exactly one person and three auctions
    assert np.array_equal(np.bincount(ev.persons["n"] // 50), np.ones(N // 50))
    assert np.array_equal(np.bincount(ev.auctions["n"] // 50), np.full(N // 50, 3))


def test_ids_are_consecutive_from_1000(in_order) -> None:
    assert np.array_equal(in_order.persons["id"], 1000 + np.arange(N // 50))
    assert np.array_equal(in_order.auctions["id"], 1000 + np.arange(3 * N // 50))


def test_event_time_follows_the_rate_in_order(in_order) -> None:
    ts = emission_times(in_order)
    assert np.all(np.diff(ts) >= 0)  # group size 1: in order
    assert ts[0] == m.T0_MS and ts[10_000] == m.T0_MS + 1_000  # 10,000 events per second
    assert ts[-1] - ts[0] == (N - 1) // 10  # 0.1 ms apart, truncated to whole ms
    slow = m.generate(m.ModelConfig(events=1_000, rate=100.0), seed=1)
    assert emission_times(slow)[-1] - m.T0_MS == 9_990  # 10 ms apart


def test_out_of_order_groups_permute_and_bound_the_disorder(in_order, shuffled) -> None:
    g = 5_000
    n = m.event_numbers(shuffled.cfg)
    assert np.array_equal(np.sort(n), np.arange(N))  # a permutation of the event numbers
    assert np.array_equal(n // g, np.arange(N) // g)  # within each group
    ts = emission_times(shuffled)
    behind = np.maximum.accumulate(ts) - ts
    assert behind.max() <= shuffled.cfg.max_disorder_ms() and behind.max() >= 400  # up to ~0.5 s at 10k/s
    assert (behind > 0).mean() > 0.9
    # the same events (ids, kinds, times), only emitted in another order
    assert np.array_equal(np.sort(ts), emission_times(in_order))
    assert np.array_equal(np.sort(shuffled.auctions["id"]), in_order.auctions["id"])
    with pytest.raises(ValueError):
        m.event_numbers(m.ModelConfig(events=10, out_of_order_group=953))


def test_hot_keys_take_their_share(in_order, shuffled) -> None:
    for ev in (in_order, shuffled):
        d = m.describe(ev, 1)
        # hot with probability 1 - 1/ratio, plus the cold picks that happen to name the hot id (1 in
        # ~110 auctions, 1 in ~1010 persons); tolerances ~6 standard deviations
        assert abs(d["hot_auction_bid_share"] - (0.5 + 0.5 / 110)) < 0.005  # hotAuctionRatio 2
        assert abs(d["hot_bidder_bid_share"] - (0.75 + 0.25 / 1010)) < 0.004  # hotBiddersRatio 4
        assert abs(d["hot_seller_auction_share"] - (0.75 + 0.25 / 1010)) < 0.015  # hotSellersRatio 4
    # the hot auction is the first of its block of 100 ids, the hot bidder the block's second person
    b = in_order.bids
    assert ((b["auction"] - 1000) % 100 == 0).mean() >= 0.5 and ((b["bidder"] - 1000) % 100 == 1).mean() >= 0.75
    counts = np.bincount(b["auction"] - 1000)
    assert counts.max() > 100 * np.median(counts[counts > 0])  # heavy skew, not uniform


def test_cold_picks_stay_among_recent_ids_with_a_lead_of_10(in_order) -> None:
    cfg, b = in_order.cfg, in_order.bids
    last_a = m.last_auction(cfg, b["n"])
    a0 = b["auction"] - 1000
    assert np.all(a0 >= np.maximum(last_a - 100, 0)) and np.all(a0 <= last_a + 10)
    assert (a0 > last_a).any()  # some bids name an auction not created yet
    people = m.last_person(cfg, b["n"]) + 1
    p0 = b["bidder"] - 1000
    assert np.all(p0 >= people - np.minimum(people, 1000)) and np.all(p0 < people + 10)


def test_values_follow_the_model(in_order) -> None:
    a, p, b = in_order.auctions, in_order.persons, in_order.bids
    assert set(np.unique(a["category"])) == {10, 11, 12, 13, 14}
    share = np.bincount(a["category"] - 10) / len(a["category"])
    assert np.all(np.abs(share - 0.2) < 0.01)
    states = np.array(m.US_STATES)[p["state"]]
    assert set(np.unique(states)) == set(m.US_STATES) and np.abs(np.isin(states, m.Q3_STATES).mean() - 0.5) < 0.02
    for prices in (b["price"], a["initial_bid"]):
        assert prices.min() >= 100 and prices.max() <= 100_000_000
        assert abs(np.median(np.log10(prices)) - 5.0) < 0.05  # 10 ** U(0, 6) * 100: log-uniform
    assert np.all(a["reserve"] > a["initial_bid"]) and np.all(a["expires"] > a["date_time"])
    assert np.all(b["channel"] < 4 + 10_000) and abs((b["channel"] < 4).mean() - 0.5) < 0.01


def test_same_seed_same_events_other_seed_other_values() -> None:
    cfg = m.ModelConfig(events=5_000, out_of_order_group=100)
    x, y, z = m.generate(cfg, 7), m.generate(cfg, 7), m.generate(cfg, 8)
    for k in x.bids:
        assert np.array_equal(x.bids[k], y.bids[k])
    assert np.array_equal(x.bids["date_time"], z.bids["date_time"])  # time is the event number's
    assert not np.array_equal(x.bids["price"], z.bids["price"])


def test_batches_are_cut_in_emission_order(tmp_path) -> None:
    import pyarrow.parquet as pq

    ev = m.generate(m.ModelConfig(events=10_000, out_of_order_group=500), seed=3)
    d = m.write_batches(ev, str(tmp_path), 4)
    assert (d["persons"], d["auctions"], d["bids"]) == (200, 600, 9_200)
    rows, last = 0, []
    for b in range(4):
        t = pq.read_table(tmp_path / "bids" / f"part-{b:04d}.parquet")
        rows += t.num_rows
        assert t.column_names == m.COLUMNS["bids"]
        last.append(t.column("date_time").to_numpy())
    assert rows == 9_200
    for earlier, later in zip(last, last[1:], strict=False):  # at most the disorder behind the batch before
        assert later.min() >= earlier.max() - np.timedelta64(int(ev.cfg.max_disorder_ms()), "ms")
    mtimes = [os.path.getmtime(tmp_path / "bids" / f"part-{b:04d}.parquet") for b in range(4)]
    assert mtimes == sorted(mtimes)
    t = pq.read_table(tmp_path / "persons" / "part-0000.parquet")
    assert set(t.column("state").to_pylist()) <= set(m.US_STATES)


def fake(bids: list) -> object:
    """Events with only these bids: (auction, bidder, price, time ms)."""
    arr = np.array(bids, dtype=np.int64).reshape(-1, 4)
    cols = {"auction": arr[:, 0], "bidder": arr[:, 1], "price": arr[:, 2], "date_time": arr[:, 3]}
    return m.Events(m.ModelConfig(events=len(bids)), 0, {}, {}, cols, {})


def test_reference_answers_on_hand_made_bids() -> None:
    ev = fake([(1, 7, 50, 0), (1, 7, 90, 9_999), (2, 7, 70, 10_000), (2, 8, 10, 20_000), (1, 8, 5, 35_000)])
    assert m.tumbling_max_truth(ev, 10_000) == {0: 90, 10_000: 70, 20_000: 10, 30_000: 5}
    hop = m.hopping_max_count_truth(ev, 10_000, 2_000)
    assert hop[0] == 2 and hop[2_000] == 1 and hop[-8_000] == 1 and hop[10_000] == 1 and hop[12_000] == 1
    assert hop[20_000] == 1 and 22_000 not in hop and hop[34_000] == 1 and max(hop) == 34_000
    # bidder 7: 0, 9,999, 10,000 (one session either way); bidder 8: 20,000 and 35,000 (two)
    assert m.sessions_truth(ev, 10_000) == [(7, 0, 10_000, 3), (8, 20_000, 20_000, 1), (8, 35_000, 35_000, 1)]
    # exactly the gap apart: one session (Kafka's rule and Spark's session_window alike); 1 ms more: two
    assert m.sessions_truth(fake([(1, 5, 1, 0), (1, 5, 1, 10_000)]), 10_000) == [(5, 0, 10_000, 2)]
    assert m.sessions_truth(fake([(1, 5, 1, 0), (1, 5, 1, 10_001)]), 10_000) == [(5, 0, 0, 1), (5, 10_001, 10_001, 1)]
    assert m.q18_truth(ev) == {"distinct_keys": 4}


def test_join_answers_count_the_model_rows() -> None:
    ev = m.generate(m.ModelConfig(events=20_000, out_of_order_group=1_000), seed=5)
    q3 = m.q3_truth(ev)
    a, p = ev.auctions, ev.persons
    sellers = {int(i): m.US_STATES[s] for i, s in zip(p["id"], p["state"], strict=True)}
    want = [
        int(i)
        for i, s, c in zip(a["id"], a["seller"], a["category"], strict=True)
        if c == 10 and sellers.get(int(s)) in m.Q3_STATES
    ]
    assert q3 == {"rows": len(want), "auction_id_sum": sum(want)} and q3["rows"] > 0
    q20 = m.q20_truth(ev)
    by_id = {int(i): (int(c), int(t)) for i, c, t in zip(a["id"], a["category"], a["date_time"], strict=True)}
    b = ev.bids
    regular = sum(1 for x in b["auction"] if by_id.get(int(x), (0, 0))[0] == 10)
    as_of = sum(
        1
        for x, t in zip(b["auction"], b["date_time"], strict=True)
        if by_id.get(int(x), (0, 0))[0] == 10 and by_id[int(x)][1] <= t
    )
    assert (q20["rows_regular"], q20["rows_as_of"]) == (regular, as_of)
    assert q20["bids_before_their_auction"] == regular - as_of > 0  # the model's id leads and the disorder
    until = int(np.median(b["date_time"]))
    assert m.q20_truth(ev, until)["rows_regular"] < regular
