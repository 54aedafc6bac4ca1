"""The distinct model on the KIP's worked examples and Kafka's grace rules."""

from .distinct_model import SessionDistinct, TumblingDistinct

BURSTS = [4, 5, 6, 23, 22, 24, 34, 33, 32, 7, 22, 35]  # seconds; last three are late arrivals


def emitted(model, records):
    return [(ts, w) for ts in records if (w := model.process("key", ts * 1000)) is not None]


def test_tumbling_10s_kip_example():
    assert emitted(TumblingDistinct(10_000), BURSTS) == [
        (4, (0, 10_000)),
        (23, (20_000, 30_000)),
        (34, (30_000, 40_000)),
    ]


def test_session_gap_10s_kip_example():
    assert [ts for ts, _ in emitted(SessionDistinct(10_000), BURSTS)] == [4, 23]


def test_session_gap_9s_kip_example():
    assert [ts for ts, _ in emitted(SessionDistinct(9_000), BURSTS)] == [4, 23, 34]


def test_tumbling_grace_keeps_a_window_open():
    assert [ts for ts, _ in emitted(TumblingDistinct(10_000), [15, 25, 5])] == [15, 25]
    assert [ts for ts, _ in emitted(TumblingDistinct(10_000, grace=20_000), [15, 25, 5])] == [15, 25, 5]


def test_late_session_record_changes_nothing():
    m = SessionDistinct(1_000)
    assert m.process("k", 100_000) == (100_000, 100_000)
    assert m.process("k", 1_000) is None  # merged end 1 000 < stream time 100 000: late
    assert m.sessions["k"] == [(100_000, 100_000)]


def test_null_key_and_null_timestamp_are_dropped_null_key_advances_stream_time():
    m = TumblingDistinct(10_000)
    assert m.process(None, 50_000) is None
    assert m.stream_time == 50_000
    assert m.process("k", None) is None
    assert m.process("k", 5_000) is None  # window [0, 10 s) closed at stream time 50 s
