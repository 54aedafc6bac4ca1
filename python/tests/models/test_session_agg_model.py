"""The session-aggregation model against hand-worked cases (so the model itself is checked)."""

from models.session_agg_model import SessionAggModel


def test_records_within_the_gap_merge_and_a_bridge_joins_two_sessions() -> None:
    m = SessionAggModel(gap=10, grace=100)
    m.process("a", 0, 1)
    m.process("a", 10, 2)  # exactly the gap: same session (inclusive)
    m.process("a", 25, 3)  # 15 after 10: a second session
    assert sorted(m.end_batch(), key=repr) == [("a", 0, 10, 2, 3, 2, 10, False), ("a", 25, 25, 1, 3, 3, 25, False)]
    m.process("a", 17, None)  # within 10 of both: bridges them into [0, 25]
    assert sorted(m.end_batch(), key=repr) == [
        ("a", 0, 10, None, None, None, 10, True),
        ("a", 0, 25, 4, 6, 3, 25, False),
        ("a", 25, 25, None, None, None, 25, True),
    ]


def test_a_session_created_and_merged_in_one_batch_leaves_no_tombstone() -> None:
    m = SessionAggModel(gap=5, grace=0)
    m.process("a", 0, 1)
    m.process("a", 3, 1)  # extends [0,0] to [0,3] within the batch
    m.process("a", 20, 1)  # close time 15: [0,3] closes at the batch end, after its update
    assert sorted(m.end_batch(), key=repr) == [("a", 0, 3, 2, 2, 1, 3, False), ("a", 20, 20, 1, 1, 1, 20, False)]


def test_close_time_subtracts_grace_and_gap_and_closed_sessions_never_reopen() -> None:
    m = SessionAggModel(gap=10, grace=5, final=True)
    m.process("a", 100, 1)
    m.process("a", 114, 1)  # close time 99: [100,100] still open (end > close time)
    assert m.end_batch() == []
    m.process("b", 115, 1)  # close time 100: [100,100] closes (end <= close time) at the batch end
    assert m.end_batch() == [("a", 100, 100, 1, 1, 1, 100, False)]
    m.process("a", 105, 1)  # within the gap of the closed [100,100] and of [114,114]: merges with the open one
    m.process("a", 90, 1)  # no open session within 10, and 90 < close time 100: late
    assert m.late_dropped == 1
    m.process("c", 200, 1)
    assert sorted(m.end_batch(), key=repr) == [
        ("a", 105, 114, 2, 2, 1, 114, False),
        ("b", 115, 115, 1, 1, 1, 115, False),
    ]


def test_a_closed_session_in_the_gap_does_not_merge_within_the_batch_either() -> None:
    m = SessionAggModel(gap=10, grace=0)
    m.process("a", 0, 1)
    assert m.end_batch() == [("a", 0, 0, 1, 1, 1, 0, False)]
    m.process("b", 20, 1)  # close time 10: a's [0,0] is closed from here on
    m.process("a", 11, 1)  # within 10 of [0,0], but that is closed: a new session (11 >= close time)
    assert sorted(m.end_batch(), key=repr) == [("a", 11, 11, 1, 1, 1, 11, False), ("b", 20, 20, 1, 1, 1, 20, False)]
    assert [(s.start, s.end) for s in m.sessions["a"]] == [(11, 11)]


def test_a_record_at_close_time_starts_a_session_that_is_closed_at_once() -> None:
    m = SessionAggModel(gap=2, grace=0, final=True)
    m.process("a", 10, 1)
    m.process("b", 8, 1)  # close time 8: not late (8 is not < 8), but its end <= close time
    assert m.end_batch() == [("b", 8, 8, 1, 1, 1, 8, False)]
    m.process("b", 7, 1)  # 7 < close time 8 and [8,8] is closed: late
    assert m.late_dropped == 1 and m.end_batch() == []


def test_kafka_emits_a_session_at_end_equal_to_close_time_and_never_merges_into_it() -> None:
    """Issue 13, checked against Kafka Streams 4.3's TopologyTestDriver: gap 2, grace 0,
    (a,4),(b,6) | (a,5) | (c,20): Kafka emits a[4,4]=1, then a[5,5]=1 and b[6,6]=1."""
    m = SessionAggModel(gap=2, grace=0, final=True)
    m.process("a", 4, 1)
    m.process("b", 6, 1)  # close time 4: a[4,4] is final
    assert m.end_batch() == [("a", 4, 4, 1, 1, 1, 4, False)]
    m.process("a", 5, 1)  # within the gap of the emitted a[4,4]: a new session
    assert m.end_batch() == []
    m.process("c", 20, 1)
    assert sorted(m.end_batch(), key=repr) == [("a", 5, 5, 1, 1, 1, 5, False), ("b", 6, 6, 1, 1, 1, 6, False)]


def test_kafka_drops_a_record_whose_only_session_in_the_gap_is_closed() -> None:
    """Issue 13: gap 2, grace 0, (c,5),(x,7) | (c,4): c[5,5] is final at close time 5 and c@4
    (4 < 5) is late, as in Kafka 4.3."""
    m = SessionAggModel(gap=2, grace=0, final=True)
    m.process("c", 5, 1)
    m.process("x", 7, 1)
    assert m.end_batch() == [("c", 5, 5, 1, 1, 1, 5, False)]
    m.process("c", 4, 1)
    assert m.late_dropped == 1
    assert m.end_batch() == []
