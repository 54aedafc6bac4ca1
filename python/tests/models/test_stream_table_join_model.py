"""The stream–table join model against KIP-914 / KIP-923 examples in docs/tables.md."""

from models.stream_table_join_model import StreamTableJoinModel


def _run(model, events):
    out = []
    for side, k, v, ts in events:
        if side == "t":
            model.table(k, v, ts)
        else:
            out += model.stream(k, v, ts)
    return [(v, tv, ts) for _, v, tv, ts in out]


ASOF = [("t", "a", "a0", 0), ("t", "a", "a4", 4), ("s", "a", "s2", 2), ("s", "a", "s5", 5)]


def test_kip914_lookup_as_of_the_stream_rows_time() -> None:
    assert _run(StreamTableJoinModel(retention=100), ASOF) == [("s2", "a0", 2), ("s5", "a4", 5)]
    assert _run(StreamTableJoinModel(), ASOF) == [("s2", "a4", 2), ("s5", "a4", 5)]


def test_past_the_history_retention_only_the_latest_version_if_old_enough() -> None:
    events = [("t", "a", "a0", 0), ("t", "a", "a4", 4), ("t", "b", "b30", 30), ("s", "a", "s2", 2), ("s", "a", "s5", 5)]
    assert _run(StreamTableJoinModel("inner", retention=10), events) == [("s5", "a4", 5)]
    assert _run(StreamTableJoinModel("left", retention=10), events) == [("s2", None, 2), ("s5", "a4", 5)]


KIP923 = [
    ("t", "a", "old", 0),
    ("s", "a", "click", 10),
    ("t", "a", "new", 8),
    ("s", "a", "later", 15),
    ("s", "b", "end", 30),
]


def test_kip923_grace_example() -> None:
    assert _run(StreamTableJoinModel("left", retention=20, grace=5), KIP923) == [
        ("click", "new", 10),
        ("later", "new", 15),
    ]
    assert _run(StreamTableJoinModel("left", retention=20), KIP923) == [
        ("click", "old", 10),
        ("later", "new", 15),
        ("end", None, 30),
    ]


def test_late_rows_join_at_once_and_null_keys_never_wait() -> None:
    m = StreamTableJoinModel("left", retention=100, grace=5)
    m.table("a", "x", 0)
    assert m.stream("a", "s30", 30) == []
    assert m.stream("a", "s20", 20) == [("a", "s20", "x", 20)]  # 20 < 30 - 5: at once
    assert m.stream(None, "n", 31) == [(None, "n", None, 31)]
    assert m.stream("a", "t", None) == [("a", "t", None, None)]
    assert m.buffer_time == 30


def test_release_order_is_timestamp_then_key_then_arrival() -> None:
    m = StreamTableJoinModel("left", retention=100, grace=10)
    for k, v, ts in [("b", "b1", 5), ("a", "a1", 5), ("b", "b2", 5), ("a", "a0", 3)]:
        assert m.stream(k, v, ts) == []
    assert [r[1] for r in m.stream("c", "c", 15)] == ["a0", "a1", "b1", "b2"]
