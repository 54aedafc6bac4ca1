"""Nexmark's event model, regenerated in numpy: persons, auctions and bids as parquet micro-batches.

The model is the one of the Nexmark benchmark's Flink generator at release **v0.2.0**
(``nexmark-flink``, package ``com.github.nexmark.flink.generator``); this module is an independent
vectorised re-implementation of its rules, written from reading that generator, not a port of its
code. What it reproduces:

* **Event kinds by event number.** Event ``n`` (0-based) is a person, an auction or a bid by
  ``n mod 50``: 1 person, 3 auctions, 46 bids in every 50 events (Nexmark's proportions
  1 : 3 : 46). Person ids and auction ids are consecutive (from 1000 each), so a person's id is
  ``1000 + n // 50`` and an auction's ``1000 + 3 * (n // 50) + (n mod 50) - 1``.
* **Event time from the event number.** ``date_time(n) = base + floor(n * 1e6 / rate) // 1000``
  milliseconds: ``rate`` events per second of event time (Nexmark's ``firstEventRate``, default
  10,000), one generator (``numEventGenerators = 1``).
* **Out-of-orderness.** Events are emitted in groups of ``out_of_order_group`` events
  (Nexmark's ``outOfOrderGroupSize``); the event emitted at position ``i`` of a group starting at
  ``b`` is event number ``b + (i * 953) mod G`` (kind, ids and time all follow that number), so
  an event is at most ``G - 1`` events' worth of event time behind the newest one before it.
  ``G = 1`` (Nexmark's default) is in order.
* **Hot keys.** A bid is for the *hot auction* (the first auction of the current block of 100
  auction ids) with probability ``1 - 1/hot_auction_ratio``, else for a uniformly chosen auction
  among the last 100 in flight plus 10 ids not yet created; its bidder is the *hot bidder* (the
  second person of the current block of 100 person ids) with probability
  ``1 - 1/hot_bidders_ratio``, else a uniformly chosen person among the last 1000 active ones plus
  10 not yet created. An auction's seller is the *hot seller* (the first person of the block) with
  probability ``1 - 1/hot_sellers_ratio``, else chosen like a cold bidder. Nexmark's defaults:
  ratios 2, 4, 4.
* **Values.** Category ``10 + U{0..4}``; a person's state one of six US state codes (uniform);
  prices ``round(10 ** (6 U) * 100)``; reserve = initial bid + another price; an auction expires
  ``1 + U[0, 2 h)`` ms after it starts, ``h`` the event time in which 100 more auctions are
  generated; half of the bids come from 4 hot channels, the rest from 10,000 channels.

Deliberate differences: (1) in v0.2.0 a bid's bidder id gets the person id offset (1000) added
twice, so no bidder id matches a person id; here bidder ids are person ids, as the model's
comments intend (no query kstate runs joins bidders with persons). (2) Names, cities, e-mail
addresses, item names, descriptions, URLs and the ``extra`` padding are drawn from small pools
of random strings of the model's lengths (parquet stores them dictionary-encoded), not a fresh
string per event; the queries never look inside them. (3) One generator timeline: Nexmark's
Flink source splits the stream over parallel generators, each with its own timeline.

:func:`generate` returns the events as numpy arrays (the reference for the tests and the
benchmark's exact answers); :func:`write_batches` writes them as parquet files, one file per
micro-batch and stream (``persons/``, ``auctions/``, ``bids/``), the batches cut in emission
order, each file's mtime in batch order so Spark's file source reads them in order.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Optional

import numpy as np

# the model's constants (Nexmark v0.2.0 generator)
FIRST_PERSON_ID = 1000
FIRST_AUCTION_ID = 1000
FIRST_CATEGORY = 10
NUM_CATEGORIES = 5
HOT_BLOCK = 100  # hot auction / seller / bidder: one per block of 100 ids
ID_LEAD = 10  # a cold pick may name one of the next 10 ids, not yet created
OUT_OF_ORDER_STRIDE = 953
NUM_CHANNELS = 10_000
HOT_CHANNELS = 4
US_STATES = ("AZ", "CA", "ID", "OR", "WA", "WY")  # six codes, uniform; q3 keeps OR, ID, CA
Q3_STATES = ("OR", "ID", "CA")
Q3_CATEGORY = 10
T0_MS = 1_700_000_000_000  # 2023-11-14T22:13:20Z: a fixed base time, every run the same

PERSONS_SCHEMA = (
    "id BIGINT, name STRING, email_address STRING, credit_card STRING, city STRING, "
    "state STRING, date_time TIMESTAMP, extra STRING"
)
AUCTIONS_SCHEMA = (
    "id BIGINT, item_name STRING, description STRING, initial_bid BIGINT, reserve BIGINT, "
    "date_time TIMESTAMP, expires TIMESTAMP, seller BIGINT, category BIGINT, extra STRING"
)
BIDS_SCHEMA = (
    "auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING, date_time TIMESTAMP, extra STRING"
)


@dataclass(frozen=True)
class ModelConfig:
    """The generator's knobs, named after Nexmark's configuration; defaults are Nexmark's."""

    events: int
    rate: float = 10_000.0  # events per second of event time (firstEventRate)
    person_proportion: int = 1
    auction_proportion: int = 3
    bid_proportion: int = 46
    hot_auction_ratio: int = 2
    hot_sellers_ratio: int = 4
    hot_bidders_ratio: int = 4
    num_in_flight_auctions: int = 100
    num_active_people: int = 1000
    out_of_order_group: int = 1  # outOfOrderGroupSize: 1 = in order
    base_time_ms: int = T0_MS

    @property
    def total_proportion(self) -> int:
        return self.person_proportion + self.auction_proportion + self.bid_proportion

    @property
    def inter_event_us(self) -> float:
        return 1e6 / self.rate

    def max_disorder_ms(self) -> float:
        """Bound on how far an event's time can be behind an earlier-emitted event's."""
        return (self.out_of_order_group - 1) * self.inter_event_us / 1000.0 + 1.0


# ---------------------------------------------------------------------------------------------
# the model's rules, on arrays of event numbers


def event_numbers(cfg: ModelConfig) -> np.ndarray:
    """The event number of the event emitted at each position (the out-of-order permutation)."""
    pos = np.arange(cfg.events, dtype=np.int64)
    g = cfg.out_of_order_group
    if g <= 1:
        return pos
    if g % OUT_OF_ORDER_STRIDE == 0:
        raise ValueError(f"out_of_order_group must not be a multiple of {OUT_OF_ORDER_STRIDE}")
    return (pos // g) * g + (pos * OUT_OF_ORDER_STRIDE) % g


def timestamp_ms(cfg: ModelConfig, n: np.ndarray) -> np.ndarray:
    """Event time (epoch ms) of event number ``n``."""
    return cfg.base_time_ms + (np.floor(n * cfg.inter_event_us).astype(np.int64) // 1000)


def last_person(cfg: ModelConfig, n: np.ndarray) -> np.ndarray:
    """0-based id of the newest person at event ``n`` (its own id for a person event)."""
    epoch, off = np.divmod(n, cfg.total_proportion)
    return epoch * cfg.person_proportion + np.minimum(off, cfg.person_proportion - 1)


def last_auction(cfg: ModelConfig, n: np.ndarray) -> np.ndarray:
    """0-based id of the newest auction at event ``n`` (its own id for an auction event; -1 before
    the first auction)."""
    p, a = cfg.person_proportion, cfg.auction_proportion
    epoch, off = np.divmod(n, cfg.total_proportion)
    in_person = off < p
    epoch = np.where(in_person, epoch - 1, epoch)
    off = np.where(in_person | (off >= p + a), a - 1, off - p)
    return epoch * a + off


def cold_person(cfg: ModelConfig, n: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A uniformly chosen recent ('active') person, or one of the next ids (0-based)."""
    people = last_person(cfg, n) + 1
    active = np.minimum(people, cfg.num_active_people)
    return people - active + (rng.random(len(n)) * (active + ID_LEAD)).astype(np.int64)


def cold_auction(cfg: ModelConfig, n: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A uniformly chosen auction likely still in flight, or one of the next ids (0-based)."""
    hi = last_auction(cfg, n)
    lo = np.maximum(hi - cfg.num_in_flight_auctions, 0)
    return lo + (rng.random(len(n)) * (hi - lo + 1 + ID_LEAD)).astype(np.int64)


def is_hot(ratio: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """The model's hot draw: hot unless a uniform pick among ``ratio`` values is the first one."""
    return rng.integers(0, ratio, size) > 0


def price(size: int, rng: np.random.Generator) -> np.ndarray:
    return np.round(10.0 ** (rng.random(size) * 6.0) * 100.0).astype(np.int64)


# ---------------------------------------------------------------------------------------------
# string pools


def _random_strings(rng: np.random.Generator, count: int, lengths: np.ndarray, blank: str = " ") -> np.ndarray:
    """``count`` strings of lowercase letters (about one in 13 characters ``blank``)."""
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    out = []
    for length in lengths[:count]:
        chars = letters[rng.integers(0, 26, int(length))]
        chars = np.where(rng.integers(0, 13, int(length)) == 0, ord(blank), chars).astype(np.uint8)
        out.append(chars.tobytes().decode().strip())
    return np.array(out, dtype=object)


def _pool(rng: np.random.Generator, size: int, min_len: int, max_len: int, blank: str = " ") -> np.ndarray:
    return _random_strings(rng, size, rng.integers(min_len, max_len + 1, size), blank)


POOL = 1024
FIRST_NAMES = ("Ada", "Bruno", "Chen", "Dalia", "Emil", "Farah", "Goran", "Hana", "Ivo", "Jun", "Kira")
LAST_NAMES = ("Okafor", "Lindqvist", "Moreau", "Tanaka", "Novak", "Reyes", "Haddad", "Kowalski", "Brandt")
CITIES = ("Tucson", "Fresno", "Oakland", "Nampa", "Eugene", "Salem", "Tacoma", "Spokane", "Casper", "Laramie")


# ---------------------------------------------------------------------------------------------


@dataclass
class Events:
    """The generated events, each kind with its emission position (``pos``: the order of arrival)."""

    cfg: ModelConfig
    seed: int
    persons: Dict[str, np.ndarray]
    auctions: Dict[str, np.ndarray]
    bids: Dict[str, np.ndarray]
    pools: Dict[str, np.ndarray]


def generate(cfg: ModelConfig, seed: int = 0) -> Events:
    """Generates ``cfg.events`` events (deterministic for a seed), in emission order per kind."""
    rng = np.random.default_rng(seed)
    n = event_numbers(cfg)
    ts = timestamp_ms(cfg, n)
    kind_of = n % cfg.total_proportion
    is_person = kind_of < cfg.person_proportion
    is_auction = ~is_person & (kind_of < cfg.person_proportion + cfg.auction_proportion)
    is_bid = ~is_person & ~is_auction
    pos = np.arange(cfg.events, dtype=np.int64)

    pools = {
        "name": np.array([f"{f} {last}" for f in FIRST_NAMES for last in LAST_NAMES], dtype=object),
        "email": np.array(
            [
                f"{a.replace(' ', '')}@{b.replace(' ', '')}.com"
                for a, b in zip(_pool(rng, POOL, 3, 6), _pool(rng, POOL, 3, 4), strict=True)
            ],
            dtype=object,
        ),
        "card": np.array([" ".join(f"{x:04d}" for x in rng.integers(0, 10_000, 4)) for _ in range(POOL)], dtype=object),
        "city": np.array(CITIES, dtype=object),
        "state": np.array(US_STATES, dtype=object),
        "item": _pool(rng, POOL, 3, 19),
        "desc": _pool(rng, POOL, 3, 99),
        "channel": np.array(
            ["Google", "Facebook", "Baidu", "Apple"][:HOT_CHANNELS] + [f"channel-{c}" for c in range(NUM_CHANNELS)],
            dtype=object,
        ),
        "person_extra": _pool(rng, POOL, 110, 160),  # ~200-byte persons, as in the model
        "auction_extra": _pool(rng, POOL, 290, 430),  # ~500-byte auctions
        "bid_extra": _pool(rng, POOL, 54, 80),  # ~100-byte bids
    }
    pools["url"] = np.array(
        [
            f"https://www.nexmark.com/{a}/{b}/{c}/item.htm?query=1" + ("" if k % 10 == 0 else f"&channel_id={k}")
            for k, (a, b, c) in enumerate(
                zip(
                    _pool(rng, len(pools["channel"]), 3, 4, "_"),
                    _pool(rng, len(pools["channel"]), 3, 4, "_"),
                    _pool(rng, len(pools["channel"]), 3, 4, "_"),
                    strict=True,
                )
            )
        ],
        dtype=object,
    )

    # persons
    pn = n[is_person]
    k = len(pn)
    persons = {
        "pos": pos[is_person],
        "n": pn,
        "id": last_person(cfg, pn) + FIRST_PERSON_ID,
        "name": rng.integers(0, len(pools["name"]), k),
        "email_address": rng.integers(0, POOL, k),
        "credit_card": rng.integers(0, POOL, k),
        "city": rng.integers(0, len(CITIES), k),
        "state": rng.integers(0, len(US_STATES), k),
        "date_time": ts[is_person],
        "extra": rng.integers(0, POOL, k),
    }

    # auctions
    an = n[is_auction]
    k = len(an)
    hot_seller = (last_person(cfg, an) // HOT_BLOCK) * HOT_BLOCK
    seller = np.where(is_hot(cfg.hot_sellers_ratio, k, rng), hot_seller, cold_person(cfg, an, rng))
    initial = price(k, rng)
    a_ts = ts[is_auction]
    ahead = (cfg.num_in_flight_auctions * cfg.total_proportion) // cfg.auction_proportion
    horizon = timestamp_ms(cfg, an + ahead) - a_ts
    auctions = {
        "pos": pos[is_auction],
        "n": an,
        "id": last_auction(cfg, an) + FIRST_AUCTION_ID,
        "item_name": rng.integers(0, POOL, k),
        "description": rng.integers(0, POOL, k),
        "initial_bid": initial,
        "reserve": initial + price(k, rng),
        "date_time": a_ts,
        "expires": a_ts + 1 + (rng.random(k) * np.maximum(2 * horizon, 1)).astype(np.int64),
        "seller": seller + FIRST_PERSON_ID,
        "category": FIRST_CATEGORY + rng.integers(0, NUM_CATEGORIES, k),
        "extra": rng.integers(0, POOL, k),
    }

    # bids
    bn = n[is_bid]
    k = len(bn)
    hot_auction = (last_auction(cfg, bn) // HOT_BLOCK) * HOT_BLOCK
    auction = np.where(is_hot(cfg.hot_auction_ratio, k, rng), hot_auction, cold_auction(cfg, bn, rng))
    hot_bidder = (last_person(cfg, bn) // HOT_BLOCK) * HOT_BLOCK + 1
    bidder = np.where(is_hot(cfg.hot_bidders_ratio, k, rng), hot_bidder, cold_person(cfg, bn, rng))
    hot_channel = rng.integers(0, 2, k) > 0
    channel = np.where(hot_channel, rng.integers(0, HOT_CHANNELS, k), HOT_CHANNELS + rng.integers(0, NUM_CHANNELS, k))
    bids = {
        "pos": pos[is_bid],
        "n": bn,
        "auction": auction + FIRST_AUCTION_ID,
        "bidder": bidder + FIRST_PERSON_ID,
        "price": price(k, rng),
        "channel": channel,
        "url": channel,
        "date_time": ts[is_bid],
        "extra": rng.integers(0, POOL, k),
    }
    return Events(cfg, seed, persons, auctions, bids, pools)


# which pool each string column's indices point into
STRING_COLUMNS = {
    "persons": {
        "name": "name",
        "email_address": "email",
        "credit_card": "card",
        "city": "city",
        "state": "state",
        "extra": "person_extra",
    },
    "auctions": {"item_name": "item", "description": "desc", "extra": "auction_extra"},
    "bids": {"channel": "channel", "url": "url", "extra": "bid_extra"},
}
COLUMNS = {
    "persons": ["id", "name", "email_address", "credit_card", "city", "state", "date_time", "extra"],
    "auctions": [
        "id",
        "item_name",
        "description",
        "initial_bid",
        "reserve",
        "date_time",
        "expires",
        "seller",
        "category",
        "extra",
    ],
    "bids": ["auction", "bidder", "price", "channel", "url", "date_time", "extra"],
}
TIME_COLUMNS = {"date_time", "expires"}


def write_batches(ev: Events, out_dir: str, batches: int) -> Dict[str, Any]:
    """Writes ``out_dir/{persons,auctions,bids}/part-NNNN.parquet``, one file per micro-batch
    and stream: batch ``b`` holds the events emitted at positions ``[b N / B, (b + 1) N / B)``.
    Returns the input's description."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    bounds = np.linspace(0, ev.cfg.events, batches + 1).round().astype(np.int64)
    mtime0 = time.time() - 10 * batches - 60
    nbytes = 0
    for stream, cols in (("persons", ev.persons), ("auctions", ev.auctions), ("bids", ev.bids)):
        d = os.path.join(out_dir, stream)
        os.makedirs(d, exist_ok=True)
        dicts = {c: pa.array(list(ev.pools[p]), type=pa.string()) for c, p in STRING_COLUMNS[stream].items()}
        cut = np.searchsorted(cols["pos"], bounds)
        for b in range(batches):
            s = slice(cut[b], cut[b + 1])
            arrays = {}
            for c in COLUMNS[stream]:
                x = cols[c][s]
                if c in dicts:
                    arrays[c] = pa.DictionaryArray.from_arrays(pa.array(x.astype(np.int32)), dicts[c])
                elif c in TIME_COLUMNS:
                    arrays[c] = pa.array(x * 1000, type=pa.timestamp("us", tz="UTC"))
                else:
                    arrays[c] = pa.array(x.astype(np.int64))
            path = os.path.join(d, f"part-{b:04d}.parquet")
            pq.write_table(pa.table(arrays), path)
            os.utime(path, (mtime0 + 10 * b, mtime0 + 10 * b))
            nbytes += os.path.getsize(path)
    return describe(ev, batches, nbytes)


def describe(ev: Events, batches: int, nbytes: int = 0) -> Dict[str, Any]:
    """The input's shape: counts, event-time span, disorder, hot-key shares."""
    all_ts = np.empty(ev.cfg.events, dtype=np.int64)
    for cols in (ev.persons, ev.auctions, ev.bids):
        all_ts[cols["pos"]] = cols["date_time"]
    behind = np.maximum.accumulate(all_ts) - all_ts
    span_s = (all_ts.max() - all_ts.min()) / 1000.0
    b = ev.bids
    return {
        "model": "Nexmark v0.2.0 generator (nexmark-flink), re-implemented in numpy (bench/nexmark_model.py)",
        "config": asdict(ev.cfg),
        "seed": ev.seed,
        "batches": batches,
        "events": ev.cfg.events,
        "persons": len(ev.persons["id"]),
        "auctions": len(ev.auctions["id"]),
        "bids": len(b["auction"]),
        "bytes": nbytes,
        "event_time_span_s": round(float(span_s), 2),
        "event_time_per_batch_s": round(float(span_s) / batches, 2),
        "events_behind_max_time": int((behind > 0).sum()),
        "max_behind_ms": int(behind.max()),
        "hot_auction_bid_share": round(hot_share(b["auction"] - FIRST_AUCTION_ID, b["n"], ev.cfg, "auction"), 4),
        "hot_bidder_bid_share": round(hot_share(b["bidder"] - FIRST_PERSON_ID, b["n"], ev.cfg, "bidder"), 4),
        "hot_seller_auction_share": round(
            hot_share(ev.auctions["seller"] - FIRST_PERSON_ID, ev.auctions["n"], ev.cfg, "seller"), 4
        ),
        "distinct_bid_auctions": int(len(np.unique(b["auction"]))),
        "distinct_bidders": int(len(np.unique(b["bidder"]))),
    }


def hot_share(ids0: np.ndarray, n: np.ndarray, cfg: ModelConfig, role: str) -> float:
    """Fraction of events naming the hot id of their moment (0-based ids)."""
    if len(ids0) == 0:
        return 0.0
    if role == "auction":
        hot = (last_auction(cfg, n) // HOT_BLOCK) * HOT_BLOCK
    else:
        hot = (last_person(cfg, n) // HOT_BLOCK) * HOT_BLOCK + (1 if role == "bidder" else 0)
    return float((ids0 == hot).mean())


# ---------------------------------------------------------------------------------------------
# exact answers of the queries, from the arrays (the benchmark's reference)


def q3_truth(ev: Events) -> Dict[str, Any]:
    """q3: auctions of category 10 joined with their sellers living in OR, ID or CA."""
    p, a = ev.persons, ev.auctions
    states = np.array(US_STATES)[p["state"]]
    keep = np.isin(states, Q3_STATES)
    a_ok = a["category"] == Q3_CATEGORY
    match = a_ok & np.isin(a["seller"], p["id"][keep])
    return {"rows": int(match.sum()), "auction_id_sum": int(a["id"][match].sum())}


def q20_truth(ev: Events, bids_until_ms: Optional[int] = None) -> Dict[str, Any]:
    """q20: bids joined with their auction of category 10. ``rows_regular``: every such pair
    (Nexmark's regular join: time plays no part); ``rows_as_of``: only bids at or after the
    auction's own time (a versioned table's as-of lookup finds the auction then). With
    ``bids_until_ms``, only bids up to that time."""
    a, b = ev.auctions, ev.bids
    if bids_until_ms is not None:
        keep = b["date_time"] <= bids_until_ms
        b = {c: x[keep] for c, x in b.items()}
    cat10 = a["category"] == Q3_CATEGORY
    order = np.argsort(a["id"])
    ids, times = a["id"][order], a["date_time"][order]
    idx = np.clip(np.searchsorted(ids, b["auction"]), 0, len(ids) - 1)
    found = ids[idx] == b["auction"]
    c10 = found & cat10[order][idx]
    as_of = c10 & (times[idx] <= b["date_time"])
    return {
        "rows_regular": int(c10.sum()),
        "rows_as_of": int(as_of.sum()),
        "bids_before_their_auction": int((c10 & ~as_of).sum()),
        "bids_of_auctions_not_generated": int((~found).sum()),
    }


def q18_truth(ev: Events) -> Dict[str, Any]:
    """q18: distinct (bidder, auction) pairs, the rows of Nexmark's final result."""
    b = ev.bids
    return {"distinct_keys": int(len(np.unique(b["bidder"] * (1 << 31) + b["auction"])))}


def tumbling_max_truth(ev: Events, size_ms: int) -> Dict[int, int]:
    """q7: largest bid price per tumbling window (window start, epoch ms -> price)."""
    b = ev.bids
    start = b["date_time"] - np.mod(b["date_time"], size_ms)
    keys, inv = np.unique(start, return_inverse=True)
    best = np.zeros(len(keys), dtype=np.int64)
    np.maximum.at(best, inv, b["price"])
    return dict(zip(keys.tolist(), best.tolist(), strict=True))


def hopping_max_count_truth(ev: Events, size_ms: int, slide_ms: int) -> Dict[int, int]:
    """q5: per hopping window (start, epoch ms), the largest number of bids of one auction."""
    b = ev.bids
    t0 = int(b["date_time"].min()) - size_ms
    t0 -= t0 % slide_ms  # windows start at multiples of the slide (epoch-aligned)
    slot = (b["date_time"] - t0) // slide_ms  # the last window holding the bid starts at this slot
    span = 1 << 32
    keys = np.concatenate([(slot - k) * span + b["auction"] for k in range(size_ms // slide_ms)])
    uniq, counts = np.unique(keys, return_counts=True)
    win, inv = np.unique(uniq // span, return_inverse=True)
    best = np.zeros(len(win), dtype=np.int64)
    np.maximum.at(best, inv, counts)
    return dict(zip((t0 + win * slide_ms).tolist(), best.tolist(), strict=True))


def sessions_truth(ev: Events, gap_ms: int) -> List[tuple]:
    """q11: each bidder's sessions as (bidder, first time, last time, bids). Two bids at most
    ``gap`` apart (inclusive) are one session: Kafka's rule, and Spark's ``session_window``'s too
    (its session ends ``gap`` after the last event, and an event at exactly that end joins it)."""
    b = ev.bids
    order = np.lexsort((b["date_time"], b["bidder"]))
    bidder, ts = b["bidder"][order], b["date_time"][order]
    new = np.concatenate([[True], (bidder[1:] != bidder[:-1]) | (np.diff(ts) > gap_ms)])
    starts = np.flatnonzero(new)
    ends = np.concatenate([starts[1:], [len(ts)]]) - 1
    return list(
        zip(bidder[starts].tolist(), ts[starts].tolist(), ts[ends].tolist(), (ends - starts + 1).tolist(), strict=True)
    )


def exact_gap_pairs(ev: Events, gap_ms: int) -> int:
    """Consecutive bids of one bidder exactly ``gap`` apart: the boundary case of session merging."""
    b = ev.bids
    order = np.lexsort((b["date_time"], b["bidder"]))
    bidder, ts = b["bidder"][order], b["date_time"][order]
    return int(((bidder[1:] == bidder[:-1]) & (np.diff(ts) == gap_ms)).sum())
