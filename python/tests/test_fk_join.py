"""Foreign-key table–table joins: ``left.join(right, foreign_key=..., how=)`` (KIP-213).

Examples (batch and streaming), errors at construction, a restart, and a property test against
the record-by-record model ``models/fk_join_model.py`` on 1 and 3 shuffle partitions.

Both tables read one source of updates ``(side, k, v, ts)``: side "L" rows are the left table's
(key ``k``, value ``lv``: an order amount whose customer is "c" + lv % 3, none when lv % 4 = 3),
side "R" rows the right table's (key ``k`` in c0..c2, value ``rv``); a null ``v`` is a tombstone.
"""

from __future__ import annotations

import os

import pytest
from _property import PROPERTY_SETTINGS, micro_batches
from _streaming import FileStream, run_batch_df, shuffle_partitions
from hypothesis import given
from hypothesis import strategies as st
from kstate import KStateError, VersionedTable
from models.fk_join_model import FkJoin, Side
from pyspark.sql import functions as F

SCHEMA = "side STRING, k STRING, v LONG, ts LONG"
V = VersionedTable("1 hour")  # a retention no test update exceeds: nothing is dropped as late


def FOREIGN_KEY():
    return F.when(F.col("lv") % 4 == 3, F.lit(None)).otherwise(F.concat(F.lit("c"), (F.col("lv") % 3).cast("string")))


def foreign_key(v):
    return None if v % 4 == 3 else f"c{v % 3}"


def _tables(df, lv=None, rv=None):
    left = (
        df.filter(F.col("side") == "L")
        .select("k", F.col("v").alias("lv"), "ts")
        .kstate.to_table("k", "ts", versioned=lv)
    )
    right = (
        df.filter(F.col("side") == "R")
        .select("k", F.col("v").alias("rv"), "ts")
        .kstate.to_table("k", "ts", versioned=rv)
    )
    return left, right


def _joined(how="inner", lv=None, rv=None, fk=FOREIGN_KEY, name=None):
    def build(df):
        left, right = _tables(df, lv, rv)
        return left.join(right, foreign_key=fk(), how=how, name=name).to_stream()

    return build


def _recs(seq):
    return [{"side": s, "k": k, "v": v, "ts": ts} for s, k, v, ts in seq]


def _table(rows, table=None):
    """Folds change rows (k, lv, rv, ts) into the result table k -> (lv, rv)."""
    t = dict(table or {})
    for r in rows:
        if r["lv"] is None and r["rv"] is None:
            t.pop(r["k"], None)
        else:
            t[r["k"]] = (r["lv"], r["rv"])
    return t


def _stream_tables(spark, workdir, batches, build, partitions=None):
    """The result table after each micro-batch."""
    tables, table = [], {}
    with shuffle_partitions(spark, partitions):
        with FileStream(spark, os.path.join(workdir, "src"), os.path.join(workdir, "ckpt"), build, schema=SCHEMA) as fs:
            for b in batches:
                seen = len(fs.rows())
                fs.add_batch(_recs(b))
                table = _table(fs.rows()[seen:], table)
                tables.append(table)
    return tables


# ----------------------------------------------------------------------------------- examples

ORDERS = [("L", "o1", 4, 1), ("L", "o2", 5, 2), ("L", "o3", 3, 3), ("R", "c1", 100, 4), ("R", "c2", 200, 5)]


@pytest.mark.parametrize(
    "how,expected",
    [
        # o1 (customer c1) and o2 (c2) join when their customer arrives, o3 has no foreign key
        ("inner", [("o1", 4, 100, 4), ("o2", 5, 200, 5)]),
        # left: every order at once with null customer columns, then re-joined
        ("left", [("o1", 4, None, 1), ("o2", 5, None, 2), ("o3", 3, None, 3), ("o1", 4, 100, 4), ("o2", 5, 200, 5)]),
    ],
)
def test_orders_join_their_customer_batch(spark, how, expected):
    rows = run_batch_df(spark, _joined(how), _recs(ORDERS), schema=SCHEMA, partitions=1)
    assert [(r["k"], r["lv"], r["rv"], r["ts"]) for r in rows] == expected
    assert rows[0].asDict().keys() == {"k", "lv", "rv", "ts"}


def test_foreign_key_change_leaves_no_stale_result_streaming(spark, tmp_path):
    batches = [
        [("R", "c1", 100, 1), ("R", "c2", 200, 1)],
        [("L", "o1", 4, 2)],  # c1: joined
        [("L", "o1", 5, 3), ("R", "c1", 101, 4)],  # moved to c2, and c1 changes: only c2's result
        [("R", "c2", None, 5)],  # c2 deleted: inner result deleted
        [("R", "c2", 202, 6)],
    ]
    assert _stream_tables(spark, str(tmp_path), batches, _joined("inner"), partitions=3) == [
        {},
        {"o1": (4, 100)},
        {"o1": (5, 200)},
        {},
        {"o1": (5, 202)},
    ]


def test_restart_between_micro_batches_keeps_subscriptions(spark, tmp_path):
    src, ckpt = str(tmp_path / "src"), str(tmp_path / "ckpt")
    tables = []
    table = {}
    for b in [[("L", "o1", 4, 1)], [("R", "c1", 100, 2)], [("R", "c1", 101, 3), ("L", "o2", 1, 3)]]:
        with FileStream(spark, src, ckpt, _joined("left", lv=V), schema=SCHEMA) as fs:
            fs.add_batch(_recs(b))
            table = _table(fs.rows(), table)
            tables.append(table)
    assert tables == [{"o1": (4, None)}, {"o1": (4, 100)}, {"o1": (4, 101), "o2": (1, 101)}]


def test_metrics_are_reported_under_the_fk_join_operators(spark, tmp_path):
    with FileStream(spark, str(tmp_path / "src"), str(tmp_path / "ckpt"), _joined("inner"), schema=SCHEMA) as fs:
        fs.add_batch(_recs(ORDERS))
        progress = fs.query.lastProgress
    ops = {op["operatorName"]: op["customMetrics"] for op in progress["stateOperators"]}
    assert ops["kstate_fk_join_subscriptions"]["responses"] >= 2
    assert ops["kstate_fk_join_subscriptions"]["subscriptions"] == 2  # o1 -> c1, o2 -> c2
    assert ops["kstate_fk_join"]["joinResults"] == 2


# ------------------------------------------------------------------------- errors at construction


@pytest.mark.parametrize(
    "how,fk,error",
    [
        ("outer", FOREIGN_KEY, "KSTATE_INVALID_JOIN_TYPE"),
        ("inner", lambda: F.col("lv"), "KSTATE_FOREIGN_KEY_TYPE_MISMATCH"),  # BIGINT vs the STRING key
        ("inner", lambda: F.when(F.rand() > 0.5, F.lit("c1")), "KSTATE_NON_DETERMINISTIC_EXPRESSION"),
        ("inner", lambda: "no_such_column", "KSTATE_MISSING_COLUMN"),
    ],
)
def test_bad_joins_fail_at_construction(spark, how, fk, error):
    df = spark.createDataFrame([], SCHEMA)
    left, right = _tables(df)
    with pytest.raises(KStateError) as e:
        left.join(right, foreign_key=fk(), how=how)
    assert e.value.error_class == error


def test_streaming_left_table_with_a_batch_right_table_fails_at_construction(spark, tmp_path):
    stream = spark.readStream.schema(SCHEMA).json(str(tmp_path))
    left, _ = _tables(stream)
    _, right = _tables(spark.createDataFrame([], SCHEMA))
    with pytest.raises(KStateError) as e:
        left.join(right, foreign_key=FOREIGN_KEY())
    assert e.value.error_class == "KSTATE_STREAM_STATIC_JOIN"


def test_changed_foreign_key_on_restart_is_config_changed(spark, tmp_path):
    src, ckpt = str(tmp_path / "src"), str(tmp_path / "ckpt")
    with FileStream(spark, src, ckpt, _joined("inner"), schema=SCHEMA) as fs:
        fs.add_batch(_recs([("L", "o1", 4, 1)]))
    other = lambda: F.concat(F.lit("c"), F.col("lv").cast("string"))  # noqa: E731
    with FileStream(spark, src, ckpt, _joined("inner", fk=other), schema=SCHEMA) as fs:
        fs.add_file(_recs([("R", "c1", 1, 2)]))
        with pytest.raises(Exception, match="KSTATE_OPERATOR_CONFIG_CHANGED"):
            fs.process()


# ----------------------------------------------------------------------- property: vs the model


@st.composite
def _scenario(draw):
    record = st.one_of(
        st.tuples(
            st.just("L"),
            st.sampled_from(["a", "b", "c", "d", None]),
            st.one_of(st.none(), st.integers(0, 11)),
            st.integers(-30, 60),
        ),
        st.tuples(
            st.just("R"),
            st.sampled_from(["c0", "c1", "c2", None]),
            st.one_of(st.none(), st.integers(0, 11)),
            st.integers(-30, 60),
        ),
    )
    records = draw(st.lists(record, min_size=2, max_size=14))
    return {
        "how": draw(st.sampled_from(["inner", "left"])),
        "versioned": draw(st.sampled_from([(False, False), (True, False), (True, True)])),
        "batches": draw(micro_batches(records)),
    }


def _model_tables(sc):
    lv, rv = sc["versioned"]
    m = FkJoin(foreign_key, sc["how"] == "left", left=Side(versioned=lv), right=Side(versioned=rv))
    out = []
    for b in sc["batches"]:
        for side, k, v, ts in b:
            m.update(side == "L", k, v, ts)
        out.append(dict(m.results))
    return out


def _check(spark, session_tmp, sc, partitions):
    lv, rv = sc["versioned"]
    got = _stream_tables(
        spark,
        str(session_tmp.mktemp("fk")),
        sc["batches"],
        _joined(sc["how"], V if lv else None, V if rv else None),
        partitions,
    )
    assert got == _model_tables(sc), sc


@PROPERTY_SETTINGS
@given(sc=_scenario())
def test_streaming_matches_model_one_partition(spark, session_tmp, sc):
    _check(spark, session_tmp, sc, 1)


@PROPERTY_SETTINGS
@given(sc=_scenario())
def test_streaming_matches_model_three_partitions(spark, session_tmp, sc):
    _check(spark, session_tmp, sc, 3)
