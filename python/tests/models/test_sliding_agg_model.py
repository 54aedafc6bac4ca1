"""The sliding-aggregation model against hand-worked cases (so the model itself is checked)."""

from models.sliding_agg_model import SlidingAggModel, window_starts


def test_kafkas_example_gives_its_five_windows() -> None:
    # SlidingWindows' javadoc: d = 5000, records at 8000, 9200, 12400
    assert window_starts([8000, 9200, 12400], 5000) == {3000, 4200, 7400, 8001, 9201}
    m = SlidingAggModel(d=5000, grace=10_000)
    for ts, v in ((8000, 1), (9200, 2), (12400, 3)):
        m.process("A", ts, v)
    assert sorted(m.end_batch()) == [
        ("A", 3000, 8000, 1, 1, 1, 8000),
        ("A", 4200, 9200, 2, 3, 2, 9200),
        ("A", 7400, 12400, 3, 6, 3, 12400),
        ("A", 8001, 13001, 2, 5, 3, 12400),
        ("A", 9201, 14201, 1, 3, 3, 12400),
    ]


def test_early_records_share_the_window_from_zero() -> None:
    m = SlidingAggModel(d=10, grace=100)
    m.process("a", 3, 1)
    m.process("a", 7, 1)
    # [0,10] holds both; 3's right window [4,14] holds 7; 7's right window is empty
    assert sorted(m.end_batch()) == [("a", 0, 10, 2, 2, 1, 7), ("a", 4, 14, 1, 1, 1, 7)]


def test_a_late_record_only_joins_open_windows_and_closed_windows_are_final() -> None:
    m = SlidingAggModel(d=10, grace=0, final=True)
    m.process("a", 100, 1)  # [90,100]
    m.process("a", 125, 1)  # close time 125: [90,100] closes; [115,125] open
    assert m.end_batch() == [("a", 90, 100, 1, 1, 1, 100)]
    m.process("a", 116, 1)  # 116 + 10 >= 125: accepted; joins [115,125]; its left window
    # [106,116] is closed (not created); its right window [117,127] holds 125
    m.process("a", 110, 1)  # 110 + 10 < 125: late
    assert m.late_dropped == 1
    m.process("b", 200, 1)  # close time 200: a's windows close
    assert sorted(m.end_batch()) == [("a", 115, 125, 2, 2, 1, 125), ("a", 117, 127, 1, 1, 1, 125)]
    assert sorted(m.windows) == [("b", 190)]


def test_kafka_difference_a_a_record_whose_left_window_is_closed_counts_where_it_is_on_time() -> None:
    """docs/windows.md, "Differences from Kafka Streams" (a): d 5, grace 0, (b,16),(a,14),(a,16).
    Kafka 4.3 gives a[11,16]=1 (a@14 joins no window); the definition gives a[11,16]=2 and
    a@14's right window a[15,20]=1."""
    m = SlidingAggModel(d=5, grace=0)
    for k, ts in (("b", 16), ("a", 14), ("a", 16)):
        m.process(k, ts, 1)
    assert sorted((r[0], r[1], r[2], r[3]) for r in m.end_batch()) == [
        ("a", 11, 16, 2),
        ("a", 15, 20, 1),
        ("b", 11, 16, 1),
    ]


def test_kafka_difference_b_a_keys_windows_do_not_depend_on_other_keys() -> None:
    """(b): d 1, grace 0, (b,1),(c,1),(c,2),(b,2): Kafka 4.3 gives b[1,2]=1 and no b[2,3] (its
    store's retention counts from c's window start); b's windows are c's windows here."""
    m = SlidingAggModel(d=1, grace=0)
    for k, ts in (("b", 1), ("c", 1), ("c", 2), ("b", 2)):
        m.process(k, ts, 1)
    rows = sorted((r[0], r[1], r[2], r[3]) for r in m.end_batch())
    assert (
        [r[1:] for r in rows if r[0] == "b"]
        == [r[1:] for r in rows if r[0] == "c"]
        == [(0, 1, 1), (1, 2, 2), (2, 3, 1)]
    )
