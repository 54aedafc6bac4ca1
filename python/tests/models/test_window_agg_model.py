"""The windowed-aggregation model against hand-worked cases (so the model itself is checked)."""

from models.window_agg_model import WindowAggModel, windows_for


def test_windows_for_tumbling_hopping_and_negative_timestamps() -> None:
    assert windows_for(12, 10, 10) == [10]
    assert windows_for(-3, 10, 10) == [-10]
    assert windows_for(12, 10, 5) == [5, 10]
    assert windows_for(3, 10, 5) == [0]  # Kafka: no window starting before 0 for ts >= 0
    assert windows_for(-3, 10, 5) == [-10, -5]
    assert windows_for(10, 10, 5) == [5, 10]


def test_kip_328_hourly_count_with_grace() -> None:
    # one key, hour windows, 10 min grace; times in minutes
    m = WindowAggModel(size=60, advance=60, grace=10, final=True)
    for ts in (5, 20, 59):
        m.process("u", ts, 1)
    assert m.end_batch() == []
    m.process("u", 65, 1)  # stream time 65: [0,60) still open (60 + 10 > 65)
    assert m.end_batch() == []
    m.process("u", 50, 1)  # late enough? close time 55 < 60: still aggregated
    m.process("u", 70, 1)  # stream time 70: [0,60) closes
    assert m.end_batch() == [("u", 0, 60, 4, 4, 1, 59)]
    m.process("u", 30, 1)  # [0,60) closed: dropped
    assert m.late_dropped == 1
    assert m.end_batch() == []


def test_updates_once_per_batch_without_suppression() -> None:
    m = WindowAggModel(size=10, advance=10, grace=0)
    m.process("a", 1, 2)
    m.process("a", 2, 3)
    m.process("b", 3, None)
    assert sorted(m.end_batch(), key=str) == [("a", 0, 10, 2, 5, 3, 2), ("b", 0, 10, 1, None, None, 3)]
    m.process("a", 15, 1)  # closes [0,10) for both keys: no update for them
    assert m.end_batch() == [("a", 10, 20, 1, 1, 1, 15)]
    assert set(m.windows) == {("a", 10)}
