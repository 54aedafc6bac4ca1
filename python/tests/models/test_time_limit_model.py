"""The time-limit suppression model against hand-worked cases (so the model itself is checked)."""

import pytest

from models.time_limit_model import BufferFull, TimeLimitModel


def test_timer_starts_at_the_first_update_and_is_not_restarted() -> None:
    m = TimeLimitModel(limit=30)
    assert m.process("k", 0, 1) == []
    assert m.process("k", 20, 2) == []  # replaces seq 1, timer still from 0
    assert m.suppressed == 1
    assert m.process("x", 30, 3) == [2]  # stream time 30 >= 0 + 30: the latest update of k
    assert m.process("k", 31, 4) == []  # k starts a new timer at 31
    assert m.process(None, 99, 5) == [] and m.process("k", None, 6) == []  # dropped, no time
    assert m.process("y", 61, 7) == [3, 4]  # x (30) then k (31), oldest first


def test_full_buffer_emits_oldest_early_or_shuts_down() -> None:
    m = TimeLimitModel(limit=100, max_records=2)
    m.process("b", 5, 1)
    m.process("a", 5, 2)
    assert m.process("c", 6, 3) == [2]  # a and b tie at 5: key order
    s = TimeLimitModel(limit=100, max_records=1, when_full="shut_down")
    s.process("a", 1, 1)
    with pytest.raises(BufferFull):
        s.process("b", 2, 2)
