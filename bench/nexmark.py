#!/usr/bin/env python3
"""Nexmark, the stateful-streaming benchmark other engines publish, ported to kstate.

Input: persons, auctions and bids from ``bench/nexmark_model.py``, a numpy re-implementation of
the Nexmark v0.2.0 generator's model (proportions 1 : 3 : 46, hot auctions / bidders / sellers,
event time from the event number at ``--rate`` events per second, out-of-order groups), written
as parquet, one file per stream and micro-batch in emission order. Every query reads only the
streams it needs with Spark's file source (``maxFilesPerTrigger`` 1), ``availableNow``.

Queries (Nexmark's SQL in docs/nexmark.md), each as kstate and as Spark's closest built-in, in
one Spark session on the same files:

* ``q3`` local item suggestion: auctions of category 10 joined with their sellers in OR, ID or
  CA. kstate: a foreign-key table–table join (auctions keyed by id, foreign key ``seller``, into
  persons keyed by id); built-in: an inner stream–stream join without watermarks.
* ``q5`` hot items: bids per auction in hopping windows (10 s, sliding 2 s), final counts, then
  the largest count per window (and one auction that has it). kstate: ``TimeWindows`` hopping
  count + ``until_window_closes``, then a second windowed aggregation over the final counts;
  built-in: the same two aggregations chained in append mode with a watermark.
* ``q7`` highest bid: the largest bid price per 10 s tumbling window and a bid that has it.
  kstate: a windowed ``max`` and ``max_by`` over one key + ``until_window_closes``; built-in:
  the same aggregates in an append-mode window.
* ``q11`` user sessions: bids per bidder in session windows (10 s gap). kstate:
  ``SessionWindows`` count + ``until_window_closes``; built-in: ``session_window`` count.
* ``q18`` one bid per (bidder, auction): kstate ``deduplicate_by_key`` (KIP-655 keeps the
  first; Nexmark keeps the last, see docs/nexmark.md); built-in ``dropDuplicatesWithinWatermark``.
* ``q20`` bids joined with their auction of category 10. kstate: versioned table of auctions +
  stream–table join (as-of, with a grace period); built-in: inner stream–stream join without
  watermarks (Nexmark's q20 is itself a regular stream–stream join).

Method (as ``bench/floor.py``): per query, one untimed run of each variant writes parquet and
is checked (it is also the warm-up), then ``--reps`` rounds run both variants to the no-op sink,
alternating which goes first; medians. Events per second per core = all Nexmark events of the
input (persons + auctions + bids, Nexmark's unit, also for a query that reads one stream) /
median wall time / the cores Spark runs on. Cross-checks: each variant's checked output against
the other's and against the exact answer computed from the generated arrays.

    PYTHONPATH=python .venv/bin/python bench/nexmark.py [--quick] [--queries q5,q7]

Writes ``bench/results/nexmark.json`` and ``.png`` (``nexmark-quick.*`` with ``--quick``).
``report_lines(d, path)`` and ``goal_line(d)`` render a result for ``bench/report.py``. Only the
standard library at import time, so the report can import this module without Spark or numpy.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

QUERIES = ["q3", "q5", "q7", "q11", "q18", "q20"]
STREAMS = {
    "q3": ("persons", "auctions"),
    "q5": ("bids",),
    "q7": ("bids",),
    "q11": ("bids",),
    "q18": ("bids",),
    "q20": ("bids", "auctions"),
}
TITLES = {
    "q3": "q3 local item suggestion (persons ⋈ auctions)",
    "q5": "q5 hot items (hopping-window counts, max per window)",
    "q7": "q7 highest bid (tumbling-window max)",
    "q11": "q11 user sessions (session-window counts)",
    "q18": "q18 one bid per bidder and auction (dedup)",
    "q20": "q20 expanded bids (bids ⋈ auctions)",
}
FORMS = {
    "q3": (
        "auctions `to_table` ⋈ persons `to_table`, foreign-key join on `seller` (unversioned)",
        "inner stream–stream join `seller = id`, no watermark",
    ),
    "q5": (
        "`TimeWindows.of_size(10 s).advance_by(2 s)` count + `until_window_closes`, then a 2 s tumbling "
        "`agg(max(count), max_by(auction, count))` on `window_start`, one key, + `until_window_closes`",
        "`groupBy(window(10 s, 2 s), auction).count()`, then `groupBy(window).agg(max, max_by)`, append",
    ),
    "q7": (
        "`TimeWindows.of_size(10 s)` `agg(max(price), max_by(bid, price))` over one key + `until_window_closes`",
        "`groupBy(window(10 s)).agg(max(price), max_by(bid, price))`, append",
    ),
    "q11": (
        "`SessionWindows.with_inactivity_gap(10 s)` count by bidder + `until_window_closes`",
        "`groupBy(session_window(10 s), bidder).count()`, append",
    ),
    "q18": (
        "`deduplicate_by_key(interval, key=[bidder, auction])` (keeps the first)",
        "`dropDuplicatesWithinWatermark([bidder, auction])` (keeps the first)",
    ),
    "q20": (
        "versioned `to_table` of category-10 auctions + stream–table `join(grace)` (as of the bid's time)",
        "inner stream–stream join `auction = id` with category-10 auctions, no watermark",
    ),
}


# ---------------------------------------------------------------------------------------------
# arguments


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    from common import add_spark_args

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small input (100k events, 4 micro-batches), 1 round")
    p.add_argument("--events", type=int, default=None, help="Nexmark events (default 1M; --quick 100k)")
    p.add_argument("--batches", type=int, default=None, help="micro-batches = files per stream (default 10; --quick 4)")
    p.add_argument(
        "--rate",
        type=float,
        default=None,
        help="events per second of event time (default Nexmark's firstEventRate, 10,000; --quick 2,000, "
        "so that its few events still span 50 s and close windows to check)",
    )
    p.add_argument(
        "--out-of-order-group",
        type=int,
        default=None,
        help="Nexmark's outOfOrderGroupSize: events emitted in permuted groups of this size "
        "(1 = in order; default half a second of events: up to 0.5 s of disorder)",
    )
    p.add_argument("--seed", type=int, default=2024)
    p.add_argument("--reps", type=int, default=None, help="timed rounds (default 3; --quick 1)")
    p.add_argument("--queries", default=",".join(QUERIES))
    p.add_argument("--variants", default="kstate,builtin")
    p.add_argument(
        "--grace",
        type=float,
        default=4.0,
        help="grace = watermark delay, s (Nexmark's source watermark: 4 s behind event time)",
    )
    p.add_argument(
        "--q5-stage2-grace",
        type=float,
        default=None,
        help="grace of q5's max-per-window step in kstate, s (default: 2 micro-batches of event time)",
    )
    p.add_argument(
        "--q18-interval",
        type=float,
        default=3600.0,
        help="q18 dedup interval = watermark delay, s (default longer than the input: one row per key, "
        "as Nexmark's q18 result)",
    )
    p.add_argument("--q20-retention", type=float, default=60.0, help="q20 versioned table's history retention, s")
    p.add_argument("--no-check", action="store_true", help="warm up on the no-op sink; skip the cross-checks")
    p.add_argument("--out", default=None, help="results file without extension")
    p.add_argument("--no-save", action="store_true")
    add_spark_args(p)
    p.set_defaults(master="local[2]", driver_memory="4g")
    a = p.parse_args(argv)
    a.events = a.events or (100_000 if a.quick else 1_000_000)
    a.batches = a.batches or (4 if a.quick else 10)
    a.rate = a.rate or (2_000.0 if a.quick else 10_000.0)
    a.out_of_order_group = a.out_of_order_group or max(1, int(a.rate // 2))
    a.reps = a.reps or (1 if a.quick else 3)
    a.query_list = [q for q in a.queries.split(",") if q]
    a.variant_list = [v for v in a.variants.split(",") if v]
    bad = [q for q in a.query_list if q not in QUERIES] + [v for v in a.variant_list if v not in ("kstate", "builtin")]
    if bad:
        p.error(f"unknown query or variant: {bad}")
    if any("=" not in kv for kv in a.conf):
        p.error("--conf takes KEY=VALUE")
    a.out = a.out or os.path.join(HERE, "results", "nexmark-quick" if a.quick else "nexmark")
    return a


def batch_span_s(a: argparse.Namespace) -> float:
    return a.events / a.rate / a.batches


def q5_stage2_grace_s(a: argparse.Namespace) -> float:
    """Final counts of one hopping window leave the state partitions of stage 1 when each one's
    stream time passes the window's end + grace, which can be a micro-batch apart; stage 2 (one
    key) must wait that long: two micro-batches of event time, rounded up to the slide."""
    if a.q5_stage2_grace is not None:
        return a.q5_stage2_grace
    return 2.0 * (int(2 * batch_span_s(a) / 2.0) + 1)


def cores(spark) -> int:
    return int(spark.sparkContext.defaultParallelism)


# ---------------------------------------------------------------------------------------------
# the queries


def source(spark, data: str, stream: str):
    import nexmark_model as m

    schema = {"persons": m.PERSONS_SCHEMA, "auctions": m.AUCTIONS_SCHEMA, "bids": m.BIDS_SCHEMA}[stream]
    return spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(os.path.join(data, stream))


def build(spark, q: str, variant: str, data: str, a: argparse.Namespace):
    """The streaming DataFrame of query ``q`` as ``variant`` (kstate or builtin), before its sink."""
    import kstate  # noqa: F401 - the DataFrame methods
    import nexmark_model as m
    from kstate import BufferConfig, SessionWindows, Suppressed, TimeWindows, VersionedTable
    from pyspark.sql import functions as F

    grace_ms = int(a.grace * 1000)
    Q7_BID = F.struct("auction", "bidder", "price", "date_time", "extra")  # noqa: N806 - Nexmark q7's output row
    wm = f"{int(grace_ms)} milliseconds"
    final = Suppressed.until_window_closes(BufferConfig.unbounded())
    if q == "q3":
        persons = (
            source(spark, data, "persons")
            .where(F.col("state").isin(*m.Q3_STATES))
            .select("id", "name", "city", "state", "date_time")
        )
        auctions = (
            source(spark, data, "auctions")
            .where(F.col("category") == m.Q3_CATEGORY)
            .select("id", "seller", "date_time")
        )
        if variant == "kstate":
            pt = persons.kstate.to_table("id", "date_time", name="persons")
            at = auctions.kstate.to_table("id", "date_time", name="auctions")
            return (
                at.join(pt, foreign_key="seller", name="q3").to_stream().select("id", "seller", "name", "city", "state")
            )
        p = persons.withColumnRenamed("id", "pid").withColumnRenamed("date_time", "p_time")
        return auctions.join(p, F.col("seller") == F.col("pid"), "inner").select(
            "id", "seller", "name", "city", "state"
        )
    if q == "q20":
        bids = source(spark, data, "bids")
        auctions = (
            source(spark, data, "auctions")
            .where(F.col("category") == m.Q3_CATEGORY)
            .select(
                "id",
                "item_name",
                "description",
                "initial_bid",
                "reserve",
                F.col("date_time"),
                F.col("date_time").alias("auction_date_time"),
                "expires",
                "seller",
                "category",
                F.col("extra").alias("auction_extra"),
            )
        )
        if variant == "kstate":
            table = auctions.kstate.to_table(
                "id", "date_time", versioned=VersionedTable(int(a.q20_retention * 1000)), name="auctions"
            )
            return bids.kstate.join(
                table, key="auction", timestamp="date_time", how="inner", grace=grace_ms, name="q20"
            )
        return bids.join(auctions.drop("date_time"), F.col("auction") == F.col("id"), "inner").drop("id")
    bids = source(spark, data, "bids")
    if q == "q5":
        if variant == "kstate":
            counts = (
                bids.kstate.windowed_by(
                    TimeWindows.of_size(10_000).advance_by(2_000).grace(grace_ms), key="auction", timestamp="date_time"
                )
                .count(name="q5_counts")
                .kstate.suppress(final)
            )
            g2 = int(q5_stage2_grace_s(a) * 1000)
            return (
                counts.kstate.windowed_by(TimeWindows.of_size(2_000).grace(g2), key=F.lit(0), timestamp="window_start")
                .agg(F.max("count").alias("maxn"), F.max_by("auction", "count").alias("top_auction"), name="q5_max")
                .kstate.suppress(final)
                .select("window_start", "maxn", "top_auction")
            )
        counts = (
            bids.withWatermark("date_time", wm)
            .groupBy(F.window("date_time", "10 seconds", "2 seconds").alias("w"), "auction")
            .count()
        )
        return (
            counts.groupBy("w")
            .agg(F.max("count").alias("maxn"), F.max_by("auction", "count").alias("top_auction"))
            .select(F.col("w.start").alias("window_start"), "maxn", "top_auction")
        )
    if q == "q7":
        if variant == "kstate":
            return (
                bids.kstate.windowed_by(
                    TimeWindows.of_size(10_000).grace(grace_ms), key=F.lit(0), timestamp="date_time"
                )
                .agg(F.max("price").alias("max_price"), F.max_by(Q7_BID, "price").alias("bid"), name="q7")
                .kstate.suppress(final)
                .select("window_start", "max_price", "bid")
            )
        return (
            bids.withWatermark("date_time", wm)
            .groupBy(F.window("date_time", "10 seconds").alias("w"))
            .agg(F.max("price").alias("max_price"), F.max_by(Q7_BID, "price").alias("bid"))
            .select(F.col("w.start").alias("window_start"), "max_price", "bid")
        )
    if q == "q11":
        if variant == "kstate":
            return (
                bids.kstate.windowed_by(
                    SessionWindows.with_inactivity_gap(10_000).grace(grace_ms), key="bidder", timestamp="date_time"
                )
                .count(name="q11")
                .kstate.suppress(final)
                .select("bidder", "window_start", F.col("window_end").alias("last_time"), "count")
            )
        return (
            bids.withWatermark("date_time", wm)
            .groupBy(F.session_window("date_time", "10 seconds").alias("s"), "bidder")
            .count()
            .select(
                "bidder",
                F.col("s.start").alias("window_start"),
                (F.col("s.end") - F.expr("INTERVAL 10 SECONDS")).alias("last_time"),
                "count",
            )
        )
    if q == "q18":
        interval_ms = int(a.q18_interval * 1000)
        if variant == "kstate":
            return bids.kstate.deduplicate_by_key(
                interval_ms, key=["bidder", "auction"], timestamp="date_time", name="q18"
            )
        return bids.withWatermark("date_time", f"{interval_ms} milliseconds").dropDuplicatesWithinWatermark(
            ["bidder", "auction"]
        )
    raise ValueError(q)


def run(spark, q: str, variant: str, data: str, work: str, a: argparse.Namespace, meter, sink: str) -> Dict[str, Any]:
    """One availableNow query to the no-op sink or (``sink="parquet"``) to ``work/out``."""
    from common import timed_query

    shutil.rmtree(work, ignore_errors=True)

    def start():
        w = (
            build(spark, q, variant, data, a)
            .writeStream.outputMode("append")
            .option("checkpointLocation", os.path.join(work, "ckpt"))
            .trigger(availableNow=True)
        )
        w = w.format("noop") if sink == "noop" else w.format("parquet").option("path", os.path.join(work, "out"))
        return w.start()

    qh, wall, cpu = timed_query(spark, start, meter)
    progress = [json.loads(p.json) for p in qh.recentProgress]
    last_ops = progress[-1].get("stateOperators", []) if progress else []
    return {
        "wall_s": round(wall, 3),
        "cpu": cpu,
        "sink": sink,
        "batches": sum(1 for p in progress if p.get("numInputRows", 0) > 0),
        "input_rows": sum(int(p.get("numInputRows", 0)) for p in progress),
        "state_at_end": [
            {"operator": o.get("operatorName"), "rows": o.get("numRowsTotal"), "memory_bytes": o.get("memoryUsedBytes")}
            for o in last_ops
        ],
    }


# ---------------------------------------------------------------------------------------------
# cross-checks


def cutoffs(a: argparse.Namespace, max_ts_ms: int, disorder_ms: float) -> Dict[str, int]:
    """Per query, the event time up to which both variants have surely emitted their final
    results by the end of the input (each closes on its own clock: kstate per state partition,
    Spark on its global watermark), with a margin of the input's disorder."""
    g, d = int(a.grace * 1000), int(disorder_ms) + 1
    return {
        "q5": max_ts_ms - g - 10_000 - int(q5_stage2_grace_s(a) * 1000) - 2_000 - d,  # window end by then
        "q7": max_ts_ms - g - 10_000 - d,  # window end
        "q11": max_ts_ms - 2 * (10_000 + g) - d,  # session's last bid
        "q20": max_ts_ms - g - d - 1_000,
    }  # bid time (kstate holds each bid for the grace)


def observe(spark, q: str, variant: str, out: str, cut: Dict[str, int]) -> Dict[str, Any]:
    """What the checked run wrote: the figures compared across variants and with the model."""
    from pyspark.sql import functions as F

    df = spark.read.parquet(out)
    ms = F.unix_millis
    if q == "q3":
        r = df.agg(F.count(F.lit(1)).alias("rows"), F.sum("id").alias("s"), F.countDistinct("id").alias("d")).first()
        return {"rows": int(r["rows"]), "auction_id_sum": int(r["s"] or 0), "distinct_auctions": int(r["d"])}
    if q in ("q5", "q7"):
        size = 10_000
        col = "maxn" if q == "q5" else "max_price"
        closed = df.where(ms("window_start") + size <= cut[q])
        rows = closed.select(ms("window_start").alias("s"), col).collect()
        out = {"windows": {int(x["s"]): int(x[col]) for x in rows}, "rows_total": df.count()}
        if q == "q7":  # the winning bid: has the max price, lies in its window
            bids = closed.select(
                ms("window_start").alias("s"),
                "max_price",
                "bid.auction",
                "bid.bidder",
                "bid.price",
                ms("bid.date_time").alias("t"),
            ).collect()
            out["bids"] = {
                int(x["s"]): [int(x["auction"]), int(x["bidder"]), int(x["price"]), int(x["t"])] for x in bids
            }
            out["bids_consistent"] = all(
                x["price"] == x["max_price"] and x["s"] <= x["t"] < x["s"] + size for x in bids
            )
        return out
    if q == "q11":
        rows = (
            df.where(ms("last_time") <= cut["q11"])
            .select("bidder", ms("window_start").alias("s"), ms("last_time").alias("e"), "count")
            .collect()
        )
        return {
            "sessions": sorted((int(x["bidder"]), int(x["s"]), int(x["e"]), int(x["count"])) for x in rows),
            "rows_total": df.count(),
        }
    if q == "q18":
        r = df.agg(F.count(F.lit(1)).alias("rows"), F.countDistinct("bidder", "auction").alias("d")).first()
        return {"rows": int(r["rows"]), "distinct_keys": int(r["d"])}
    if q == "q20":
        settled = ms("date_time") <= cut["q20"]
        as_of = F.col("auction_date_time") <= F.col("date_time")
        r = df.agg(
            F.count(F.lit(1)).alias("rows"),
            F.sum(settled.cast("int")).alias("settled"),
            F.sum((settled & as_of).cast("int")).alias("as_of"),
        ).first()
        return {
            "rows_total": int(r["rows"]),
            "rows": int(r["settled"] or 0),
            "rows_bid_at_or_after_auction": int(r["as_of"] or 0),
        }
    raise ValueError(q)


def compare(q: str, obs: Dict[str, Dict[str, Any]], truth: Dict[str, Any], cut: Dict[str, int]) -> Dict[str, Any]:
    """Agreement of the variants with each other and with the exact answer from the model."""
    k, b = obs.get("kstate"), obs.get("builtin")
    out: Dict[str, Any] = {}
    if q == "q3":
        t = truth["q3"]
        out = {
            "model": t,
            "kstate": k,
            "builtin": b,
            "kstate_matches_model": None
            if k is None
            else (k["rows"], k["auction_id_sum"]) == (t["rows"], t["auction_id_sum"]),
            "builtin_matches_model": None
            if b is None
            else (b["rows"], b["auction_id_sum"]) == (t["rows"], t["auction_id_sum"]),
        }
        out["agree"] = None if k is None or b is None else k == b
        out["compared"] = "join rows, sum and count of distinct auction ids"
    elif q in ("q5", "q7"):
        t = {s: v for s, v in truth[q].items() if s + 10_000 <= cut[q]}
        out = {
            "windows_compared": len(t),
            "cutoff_ms": cut[q],
            "compared": "per window surely closed by both: "
            + ("the largest bid count of an auction" if q == "q5" else "the largest price"),
        }
        for v, o in (("kstate", k), ("builtin", b)):
            if o is not None:
                got = o["windows"]
                out[v] = {
                    "windows": len(got),
                    "rows_total": o["rows_total"],
                    "differing_windows": sorted(s for s in set(t) | set(got) if t.get(s) != got.get(s))[:20],
                }
                out[f"{v}_matches_model"] = got == t
                if q == "q7":
                    out[v]["winning_bid_has_the_max_price_and_is_in_the_window"] = o["bids_consistent"]
        out["agree"] = None if k is None or b is None else (k["windows"] == b["windows"] and len(t) > 0)
        if q == "q7" and k is not None and b is not None:  # equal prices may pick different bids (ties)
            out["same_winning_bid_windows"] = sum(1 for s in k["bids"] if k["bids"][s] == b["bids"].get(s))
    elif q == "q11":
        t = sorted(s for s in truth["q11"] if s[2] <= cut["q11"])
        out = {
            "cutoff_ms": cut["q11"],
            "model_sessions": len(t),
            "exact_gap_pairs_in_input": truth["q11_exact_gap_pairs"],
            "compared": "every session whose last bid is surely closed by both: bidder, first and last bid time, count",
        }
        for v, o in (("kstate", k), ("builtin", b)):
            if o is not None:
                out[v] = {"sessions": len(o["sessions"]), "rows_total": o["rows_total"]}
                out[f"{v}_matches_model"] = o["sessions"] == t
        if k is not None and b is not None:
            ks, bs = set(k["sessions"]), set(b["sessions"])
            out["only_kstate"], out["only_builtin"] = len(ks - bs), len(bs - ks)
            out["agree"] = ks == bs and len(ks) > 0
        else:
            out["agree"] = None
    elif q == "q18":
        t = truth["q18"]
        out = {
            "model": t,
            "kstate": k,
            "builtin": b,
            "compared": "distinct (bidder, auction) keys in the output, "
            "and output rows (with an interval longer than the input both emit each key once)",
        }
        for v, o in (("kstate", k), ("builtin", b)):
            if o is not None:
                out[f"{v}_matches_model"] = o["distinct_keys"] == t["distinct_keys"]
        out["agree"] = None if k is None or b is None else k["distinct_keys"] == b["distinct_keys"]
        out["rows_agree"] = None if k is None or b is None else k["rows"] == b["rows"]
    elif q == "q20":
        t = truth["q20"]
        out = {
            "model": t,
            "kstate": k,
            "builtin": b,
            "cutoff_ms": cut["q20"],
            "compared": "join rows of the bids up to the cutoff (kstate holds the last grace period of bids "
            "back), where the semantics match (bids at or after their auction's time: the built-in's "
            "rows so restricted vs all of kstate's); each variant's rows vs the model",
        }
        if k is not None:
            out["kstate_matches_model"] = k["rows"] == t["rows_as_of"]
        if b is not None:
            out["builtin_matches_model"] = b["rows"] == t["rows_regular"]
        out["agree"] = None if k is None or b is None else k["rows"] == b["rows_bid_at_or_after_auction"]
    return out


def truths(ev, cut: Dict[str, int]) -> Dict[str, Any]:
    import nexmark_model as m

    return {
        "q3": m.q3_truth(ev),
        "q20": m.q20_truth(ev, cut["q20"]),
        "q18": m.q18_truth(ev),
        "q7": m.tumbling_max_truth(ev, 10_000),
        "q5": m.hopping_max_count_truth(ev, 10_000, 2_000),
        "q11": m.sessions_truth(ev, 10_000),
        "q11_exact_gap_pairs": m.exact_gap_pairs(ev, 10_000),
    }


# ---------------------------------------------------------------------------------------------


def measure(spark, q: str, data: str, work: str, a, meter, n_events: int, n_cores: int) -> Dict[str, Any]:
    names = [v for v in ("kstate", "builtin") if v in a.variant_list]
    res: Dict[str, Any] = {"kstate_form": FORMS[q][0], "builtin_form": FORMS[q][1], "streams": list(STREAMS[q])}
    runs: Dict[str, List[Dict[str, Any]]] = {v: [] for v in names}
    checked: Dict[str, Dict[str, Any]] = {}
    for v in names:  # warm-up; its output is the checked one
        r = run(spark, q, v, data, os.path.join(work, f"{q}-{v}-check"), a, meter, "noop" if a.no_check else "parquet")
        checked[v] = r
        print(
            f"[{q} {v} warm-up{'' if a.no_check else ' + check'}] {r['wall_s']:.1f} s, {r['batches']} batches",
            flush=True,
        )
    for i in range(a.reps):
        for v in names if i % 2 == 0 else names[::-1]:
            r = run(spark, q, v, data, os.path.join(work, f"{q}-{v}"), a, meter, "noop")
            runs[v].append(r)
            print(
                f"[{q} {v} rep {i}] {r['wall_s']:.1f} s  {n_events / r['wall_s'] / n_cores:,.0f} events/s/core  "
                f"cpu {r['cpu'].get('own_cpu_s')} s (others {r['cpu'].get('foreign_cpu_s')} s)",
                flush=True,
            )
    for v in names:
        wall = statistics.median(x["wall_s"] for x in runs[v])
        cpu = [x["cpu"].get("own_cpu_s") for x in runs[v] if x["cpu"].get("own_cpu_s") is not None]
        rows = runs[v][0]["input_rows"]
        res[v] = {
            "runs": runs[v],
            "warmup": checked[v],
            "median_wall_s": wall,
            "events_per_s": round(n_events / wall),
            "events_per_s_per_core": round(n_events / wall / n_cores),
            "input_rows": rows,
            "input_rows_per_s": round(rows / wall),
            "median_cpu_s": statistics.median(cpu) if cpu else None,
            "events_per_cpu_s": round(n_events / statistics.median(cpu)) if cpu else None,
        }
    if "kstate" in res and "builtin" in res:
        res["ratio_kstate_vs_builtin"] = round(res["kstate"]["events_per_s"] / res["builtin"]["events_per_s"], 3)
    res["_checked_dirs"] = {v: os.path.join(work, f"{q}-{v}-check", "out") for v in names}
    return res


def main(argv: Optional[List[str]] = None) -> int:
    a = parse_args(argv)
    import nexmark_model as m
    from common import ROCKSDB, TMP, CpuMeter, environment, other_processes, start_spark, wait_for_jar

    t_start = time.perf_counter()
    load_before = open("/proc/loadavg").read().split()[:3]
    others_before = other_processes()
    jar = wait_for_jar()
    tmp = os.path.join(TMP, f"nexmark-{os.getpid()}")
    data = os.path.join(tmp, "data")
    t0 = time.perf_counter()
    cfg = m.ModelConfig(events=a.events, rate=a.rate, out_of_order_group=a.out_of_order_group)
    ev = m.generate(cfg, a.seed)
    inp = m.write_batches(ev, data, a.batches)
    max_ts = int(max(ev.persons["date_time"].max(), ev.auctions["date_time"].max(), ev.bids["date_time"].max()))
    cut = cutoffs(a, max_ts, cfg.max_disorder_ms())
    truth = truths(ev, cut) if not a.no_check else {}
    del ev
    print(
        f"input: {inp['events']:,} events ({inp['persons']:,} persons, {inp['auctions']:,} auctions, "
        f"{inp['bids']:,} bids) in {a.batches} micro-batches, {inp['bytes'] / 1e6:.1f} MB, event time "
        f"{inp['event_time_span_s']:.0f} s, at most {inp['max_behind_ms']} ms out of order; hot auction "
        f"{inp['hot_auction_bid_share']:.1%} of bids, hot bidder {inp['hot_bidder_bid_share']:.1%}; "
        f"generated in {time.perf_counter() - t0:.1f} s",
        flush=True,
    )
    spark = start_spark(
        a,
        "kstate-bench-nexmark",
        os.path.join(tmp, "spark-local"),
        conf={
            "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
            "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        },
    )
    meter = CpuMeter(int(spark.sparkContext._jvm.ProcessHandle.current().pid()))
    n_cores = cores(spark)
    result: Dict[str, Any] = {
        "benchmark": "nexmark",
        "quick": a.quick,
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
        "input": inp,
        "cores": n_cores,
        "parameters": {
            "events": a.events,
            "batches": a.batches,
            "rate": a.rate,
            "out_of_order_group": a.out_of_order_group,
            "seed": a.seed,
            "reps": a.reps,
            "grace_s": a.grace,
            "q5_stage2_grace_s": q5_stage2_grace_s(a),
            "q18_interval_s": a.q18_interval,
            "q20_retention_s": a.q20_retention,
            "shuffle_partitions": a.shuffle_partitions,
            "master": a.master,
            "conf": a.conf,
            "builtin_provider": "RocksDB, changelog checkpointing",
            "kstate_provider": "kstate's",
        },
        "unit": "events_per_s_per_core = all Nexmark events of the input (persons + auctions + bids) / median wall "
        "time / cores (Spark's default parallelism)",
        "queries": {},
        "load_before": load_before,
        "others_before": others_before,
    }
    try:
        for q in a.query_list:
            res = measure(spark, q, data, os.path.join(tmp, "work"), a, meter, a.events, n_cores)
            dirs = res.pop("_checked_dirs")
            if not a.no_check:
                obs = {v: observe(spark, q, v, d, cut) for v, d in dirs.items()}
                res["check"] = compare(q, obs, truth, cut)
            result["queries"][q] = res
            k, b = res.get("kstate", {}), res.get("builtin", {})
            print(
                f"== {q}: kstate {k.get('events_per_s_per_core', 0):,} events/s/core, built-in "
                f"{b.get('events_per_s_per_core', 0):,}, ratio {res.get('ratio_kstate_vs_builtin')}; "
                f"check: {summary_of_check(res.get('check'))}",
                flush=True,
            )
            for d in dirs.values():
                shutil.rmtree(os.path.dirname(d), ignore_errors=True)
        result["environment"] = environment(spark, a, jar)
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    result["load_after"] = open("/proc/loadavg").read().split()[:3]
    result["others_after"] = other_processes()
    result["total_wall_s"] = round(time.perf_counter() - t_start, 1)
    print(f"\ntotal {result['total_wall_s']:.0f} s; load average before {load_before}, after {result['load_after']}")
    for line in report_lines(result, a.out + ".json"):
        print(line)
    if not a.no_save:
        from common import write_json_and_chart

        write_json_and_chart(a.out, result, write_chart)
    return 0


def summary_of_check(c: Optional[Dict[str, Any]]) -> str:
    if not c:
        return "not run"
    parts = [f"agree={c.get('agree')}"]
    for v in ("kstate", "builtin"):
        if f"{v}_matches_model" in c:
            parts.append(f"{v} = model: {c[f'{v}_matches_model']}")
    return ", ".join(parts)


# ---------------------------------------------------------------------------------------------
# chart and report


def write_chart(path: str, d: Dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    qs = list(d["queries"])
    ks = [d["queries"][q].get("kstate", {}).get("events_per_s_per_core", 0) / 1000 for q in qs]
    bs = [d["queries"][q].get("builtin", {}).get("events_per_s_per_core", 0) / 1000 for q in qs]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    xs = range(len(qs))
    ax.bar([x - 0.2 for x in xs], ks, 0.4, label="kstate", color="#2a7")
    ax.bar([x + 0.2 for x in xs], bs, 0.4, label="Spark built-in", color="#c63")
    for x, q in zip(xs, qs, strict=True):
        r = d["queries"][q].get("ratio_kstate_vs_builtin")
        c = (d["queries"][q].get("check") or {}).get("agree")
        label = (f"{r:.2f}x" if r is not None else "") + ("" if c is None else (" ✓" if c else " ✗"))
        ax.annotate(label, (x, max(ks[x], bs[x])), ha="center", va="bottom", fontsize=9)
    ax.set_xticks(list(xs))
    ax.set_xticklabels(qs)
    ax.set_ylabel("thousand Nexmark events / s / core")
    inp = d["input"]
    ax.set_title(
        f"Nexmark on kstate vs Spark built-ins ({inp['events']:,} events, {inp['batches']} micro-batches, "
        f"{d['cores']} cores); label: kstate / built-in, ✓ results agree"
    )
    ax.title.set_fontsize(9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _k(x: Optional[float]) -> str:
    if x is None:
        return "n/a"
    return f"{x / 1000:,.1f}k" if x >= 10_000 else f"{x:,.0f}"


def _yn(x: Optional[bool]) -> str:
    return "n/a" if x is None else ("yes" if x else "**no**")


def check_cell(q: str, c: Optional[Dict[str, Any]]) -> str:
    """One table cell: what was compared and whether it agreed."""
    if not c:
        return "not run"
    k, b = c.get("kstate_matches_model"), c.get("builtin_matches_model")
    model = f"kstate = model: {_yn(k)}, built-in = model: {_yn(b)}"
    if q == "q3":
        return f"{c['model']['rows']:,} join rows; kstate = built-in: {_yn(c.get('agree'))}; {model}"
    if q in ("q5", "q7"):
        return f"{c['windows_compared']} closed windows; kstate = built-in: {_yn(c.get('agree'))}; {model}"
    if q == "q11":
        extra = ""
        if c.get("agree") is False:
            extra = f" ({c.get('only_kstate')} sessions only in kstate, {c.get('only_builtin')} only in the built-in)"
        return f"{c['model_sessions']:,} closed sessions; kstate = built-in: {_yn(c.get('agree'))}{extra}; {model}"
    if q == "q18":
        return f"{c['model']['distinct_keys']:,} distinct keys; kstate = built-in: {_yn(c.get('agree'))}; {model}"
    if q == "q20":
        t = c["model"]
        return (
            f"settled bids: kstate {c['kstate']['rows']:,} rows (as-of join: model {t['rows_as_of']:,}), built-in "
            f"{c['builtin']['rows']:,} (regular join: model {t['rows_regular']:,}); on bids at or after their "
            f"auction kstate = built-in: {_yn(c.get('agree'))}"
            if c.get("kstate") and c.get("builtin")
            else f"agree: {_yn(c.get('agree'))}; {model}"
        )
    return _yn(c.get("agree"))


def report_lines(d: Dict[str, Any], path: str) -> List[str]:
    """The benchmark's section for docs/benchmarks.md (markdown lines, after the section title)."""
    inp, p, e = d["input"], d["parameters"], d.get("environment", {})
    seen = {}
    for x in (d.get("others_before") or []) + (d.get("others_after") or []):
        seen[x["pid"]] = x["cmd"].split(" ")[0].rsplit("/", 1)[-1] + (" (sbt)" if "sbt" in x["cmd"] else "")
    others = ", ".join(sorted(set(seen.values()))) or "none recorded"
    out = [
        "What it measures: Nexmark's stateful queries q3, q5, q7, q11, q18 and q20 written with kstate's "
        "operators and with Spark's closest built-ins, on the same input in one Spark session: persons, auctions "
        "and bids following the Nexmark v0.2.0 generator's model (bench/nexmark_model.py: proportions 1:3:46, hot "
        "auctions, bidders and sellers, event time from the event rate, out-of-order groups). Unit: Nexmark events "
        "(all three kinds) per second of wall time per core, as Nexmark counts them also for a query that reads "
        "one stream. The mapping of each query and its differences from Nexmark: [nexmark.md](nexmark.md).",
        "",
        f"When and how: run of {str(d.get('date_utc'))[:16].replace('T', ' ')} UTC; Spark "
        f"{e.get('spark_version')}, `{p.get('master')}` ({d.get('cores')} cores), commit "
        f"{str(e.get('git_commit'))[:10]}. {inp['events']:,} events ({inp['bids']:,} bids, {inp['auctions']:,} "
        f"auctions, {inp['persons']:,} persons) in {inp['batches']} micro-batches, {p['rate']:,.0f} events per "
        f"second of event time ({inp['event_time_span_s']:.0f} s), out-of-order groups of "
        f"{p['out_of_order_group']:,} events (at most {inp['max_behind_ms']} ms behind); grace = watermark delay "
        f"{p['grace_s']:g} s; built-ins on RocksDB with changelog checkpointing, kstate on its provider; "
        f"{p['shuffle_partitions']} shuffle partitions; median of {p['reps']} runs per variant after a checked "
        f"warm-up, alternating. Load average before / after: {' '.join(d.get('load_before') or [])} / "
        f"{' '.join(d.get('load_after') or [])}; other processes: {others}; {foreign_share(d)}.",
        "",
        "| query | kstate, events/s/core | built-in, events/s/core | kstate / built-in | cross-check |",
        "| --- | --- | --- | --- | --- |",
    ]
    for q, r in d["queries"].items():
        k, b = r.get("kstate", {}), r.get("builtin", {})
        ratio = r.get("ratio_kstate_vs_builtin")
        out.append(
            f"| {TITLES.get(q, q)} | {_k(k.get('events_per_s_per_core'))} | {_k(b.get('events_per_s_per_core'))} "
            f"| {'n/a' if ratio is None else f'{ratio:.2f}x'} | {check_cell(q, r.get('check'))} |"
        )
    out += ["", "kstate's form and the built-in's, per query:", ""]
    for q, r in d["queries"].items():
        out.append(f"- {q}: kstate {r['kstate_form']}; built-in {r['builtin_form']}.")
    return out


def foreign_share(d: Dict[str, Any]) -> str:
    """How much of the machine's CPU time other processes took during the timed runs."""
    cpu = [r["cpu"] for q in d["queries"].values() for v in ("kstate", "builtin") for r in q.get(v, {}).get("runs", [])]
    machine = sum(c.get("machine_cpu_s") or 0 for c in cpu)
    foreign = sum(c.get("foreign_cpu_s") or 0 for c in cpu)
    if not machine:
        return "CPU time of other processes not recorded"
    return (
        f"other processes used {foreign / machine:.0%} of the machine's CPU time during the timed runs "
        f"({foreign:,.0f} of {machine:,.0f} CPU seconds)"
    )


def goal_line(d: Dict[str, Any]) -> str:
    """One line for the summary table."""
    qs = d.get("queries", {})
    ratios = {q: r.get("ratio_kstate_vs_builtin") for q, r in qs.items() if r.get("ratio_kstate_vs_builtin")}
    agree = [q for q, r in qs.items() if (r.get("check") or {}).get("agree") is True]
    disagree = [q for q, r in qs.items() if (r.get("check") or {}).get("agree") is False]
    if not ratios:
        return "none set; no ratio measured"
    best, worst = max(ratios, key=ratios.get), min(ratios, key=ratios.get)
    return (
        f"none set (the outside yardstick); kstate / built-in from {ratios[worst]:.2f}x ({worst}) to "
        f"{ratios[best]:.2f}x ({best}); results agree on {len(agree)} of {len(agree) + len(disagree)} "
        f"checked queries" + (f" (not: {', '.join(disagree)})" if disagree else "")
    )


if __name__ == "__main__":
    sys.exit(main())
