"""kstate.to_millis: the duration forms every kstate API accepts, and the ones it rejects."""

from __future__ import annotations

import datetime as dt

import kstate
import pytest
from kstate import KStateError, to_millis
from kstate._jvm_errors import kstate_error_of

S, M, H, D, W = 1000, 60_000, 3_600_000, 86_400_000, 604_800_000
LONG_MAX = 2**63 - 1

ACCEPTED_STRINGS = [
    ("10 seconds", 10 * S),
    ("10s", 10 * S),
    ("10 S", 10 * S),
    ("1 second", S),
    ("1 sec", S),
    ("2 secs", 2 * S),
    ("500ms", 500),
    ("500 milliseconds", 500),
    ("1 millisecond", 1),
    ("1 milli", 1),
    ("3 millis", 3),
    ("1 minute 30 seconds", 90 * S),
    ("1m30s", 90 * S),
    ("1 min", M),
    ("5 mins", 5 * M),
    ("2 minutes", 2 * M),
    ("2h", 2 * H),
    ("1 hour", H),
    ("3 hours", 3 * H),
    ("1d", D),
    ("3 days", 3 * D),
    ("1 day", D),
    ("1w", W),
    ("2 weeks", 2 * W),
    ("1 week", W),
    ("interval 5 minutes", 5 * M),
    ("INTERVAL 1 HOUR", H),
    ("  10 Seconds  ", 10 * S),
    ("1h 1m 1s 1ms", H + M + S + 1),
    ("0", 0),
    ("123", 123),
    ("0 seconds", 0),
    ("0ms", 0),
    ("PT1M", M),
    ("pt10s", 10 * S),
    ("PT0S", 0),
    ("PT0.5S", 500),
    ("PT1.25S", 1250),
    ("PT1.001S", 1001),
    ("PT1.001000S", 1001),
    ("PT1,5S", 1500),
    ("2000us", 2),
    ("3000000 ns", 3),
    ("1 ms 1000 microseconds", 2),
    ("P1DT2H", D + 2 * H),
    ("P2D", 2 * D),
    ("PT1H30M", H + 30 * M),
    ("P1DT1H1M1.5S", D + H + M + 1500),
    (str(LONG_MAX), LONG_MAX),
]

REJECTED_STRINGS = [
    "-1s",
    "-5 seconds",
    "-0",
    "",
    "   ",
    "10 parsecs",
    "ten seconds",
    "1.5s",
    "1,000ms",
    "10 seconds ago",
    "s",
    "seconds",
    "+10s",
    "10 seconds 10",
    "1e3",
    "0x10",
    "P",
    "PT",
    "PT-1S",
    "P-1D",
    "P1W",
    "P1DT",
    "PT1.5M",
    "１０s",
    "²",
    "10 y",
    "interval",
    "10 seconds;",
    str(LONG_MAX + 1),
    "100000000000000000 weeks",
    "PT9999999999999999S",
]

# kstate durations are whole milliseconds: a sub-millisecond part is an error, not truncated.
SUB_MILLISECOND = [
    "1500us",
    "1 ms 1 ns",
    "1 nanosecond",
    "PT0.0005S",
    "PT1.2345S",
    dt.timedelta(microseconds=500),
    dt.timedelta(microseconds=1500),
    dt.timedelta(seconds=1, microseconds=1),
    dt.timedelta.max,
]


@pytest.mark.parametrize("text,ms", ACCEPTED_STRINGS)
def test_accepted_strings(text: str, ms: int) -> None:
    assert to_millis(text) == ms


@pytest.mark.parametrize(
    "value,ms",
    [
        (dt.timedelta(seconds=10), 10 * S),
        (dt.timedelta(milliseconds=5), 5),
        (dt.timedelta(microseconds=2000), 2),  # whole milliseconds
        (dt.timedelta(minutes=1, seconds=30), 90 * S),
        (dt.timedelta(days=1), D),
        (dt.timedelta(0), 0),
        (dt.timedelta.max - dt.timedelta(microseconds=999), dt.timedelta.max // dt.timedelta(milliseconds=1)),
    ],
)
def test_accepted_timedeltas(value: dt.timedelta, ms: int) -> None:
    assert to_millis(value) == ms


@pytest.mark.parametrize("value", [0, 1, 7, 10_000, LONG_MAX])
def test_accepted_ints_are_milliseconds(value: int) -> None:
    assert to_millis(value) == value
    assert type(to_millis(value)) is int


@pytest.mark.parametrize("value", SUB_MILLISECOND, ids=str)
def test_sub_millisecond_part_rejected(value: object) -> None:
    with pytest.raises(KStateError) as ei:
        to_millis(value)  # type: ignore[arg-type]
    assert ei.value.error_class == "KSTATE_INVALID_DURATION"
    assert "whole milliseconds" in ei.value.message


@pytest.mark.parametrize("text", REJECTED_STRINGS)
def test_rejected_strings(text: str) -> None:
    with pytest.raises(KStateError) as ei:
        to_millis(text)
    assert ei.value.error_class == "KSTATE_INVALID_DURATION"


@pytest.mark.parametrize(
    "value",
    [
        -1,
        -10_000,
        LONG_MAX + 1,
        10**20,
        dt.timedelta(milliseconds=-1),
        dt.timedelta(days=-1),
        True,
        False,  # bools are ints in Python, but not durations
        None,
        1.5,
        10.0,
        [10],
        (10,),
        b"10s",
        {"seconds": 10},
        object(),
    ],
)
def test_rejected_values(value: object) -> None:
    with pytest.raises(KStateError) as ei:
        to_millis(value)  # type: ignore[arg-type]
    assert ei.value.error_class == "KSTATE_INVALID_DURATION"


@pytest.mark.parametrize("text", ["²", "1²s", "¹⁰"])
def test_unicode_digit_lookalikes_rejected_as_invalid_duration(text: str) -> None:
    # str.isdigit() is true for superscripts, but int() cannot parse them: the error must still
    # be KSTATE_INVALID_DURATION, not a bare ValueError from int().
    with pytest.raises(KStateError) as ei:
        to_millis(text)
    assert ei.value.error_class == "KSTATE_INVALID_DURATION"


def test_error_names_the_argument_and_value() -> None:
    with pytest.raises(KStateError) as ei:
        to_millis("10 parsecs", "grace")
    e = ei.value
    assert e.error_class == "KSTATE_INVALID_DURATION"
    assert str(e).startswith("[KSTATE_INVALID_DURATION] grace '10 parsecs' is not a valid duration")
    assert "unknown unit 'parsecs'" in e.message
    with pytest.raises(KStateError) as ei:
        to_millis(-5)
    assert "interval '-5'" in str(ei.value) and "negative" in ei.value.message


def test_to_millis_is_exported() -> None:
    assert kstate.to_millis is to_millis


# The Python parser and the JVM parser (io.kstate.Durations) document the same grammar.
@pytest.mark.parametrize(
    "text",
    [t for t, _ in ACCEPTED_STRINGS] + REJECTED_STRINGS + ["P1DT"] + [t for t in SUB_MILLISECOND if isinstance(t, str)],
)
def test_python_and_jvm_parsers_agree(spark, text: str) -> None:
    jvm = spark.sparkContext._jvm
    try:
        jvm_ms = int(jvm.io.kstate.Durations.toMillis("interval", text))
    except Exception as e:  # py4j wraps the KStateException
        k = kstate_error_of(e)
        assert k is not None, e
        jvm_ms = k.error_class
    try:
        py_ms = to_millis(text)
    except KStateError as e:
        py_ms = e.error_class
    assert py_ms == jvm_ms
