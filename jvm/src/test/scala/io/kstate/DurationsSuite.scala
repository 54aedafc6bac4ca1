package io.kstate

import java.time.{Duration => JDuration}

import org.scalatest.funsuite.AnyFunSuite

class DurationsSuite extends AnyFunSuite {

  private def ms(text: String): Long = Durations.toMillis("deduplicationInterval", text)

  private def rejects(f: => Long): KStateException = {
    val e = intercept[KStateException](f)
    assert(e.errorClass === "KSTATE_INVALID_DURATION")
    assert(e.getMessage.startsWith("[KSTATE_INVALID_DURATION] deduplicationInterval"))
    e
  }
  private def rejectsText(text: String): KStateException = rejects(ms(text))

  test("Spark interval-like strings") {
    assert(ms("10 seconds") === 10000L)
    assert(ms("10s") === 10000L)
    assert(ms("500ms") === 500L)
    assert(ms("500 milliseconds") === 500L)
    assert(ms("1 minute 30 seconds") === 90000L)
    assert(ms("1m30s") === 90000L)
    assert(ms("interval 2 hours") === 7200000L)
    assert(ms("INTERVAL 2 HOURS") === 7200000L)
    assert(ms("2h") === 7200000L)
    assert(ms("1 day") === 86400000L)
    assert(ms("1w") === 604800000L)
    assert(ms("  10 Seconds  ") === 10000L)
    assert(ms("0 seconds") === 0L)
    assert(ms("1 hour 1 minute 1 second 1 ms") === 3661001L)
  }

  test("ISO-8601 strings") {
    assert(ms("PT1M") === 60000L)
    assert(ms("PT0.5S") === 500L)
    assert(ms("pt10s") === 10000L)
    assert(ms("P1D") === 86400000L)
    assert(ms("PT0S") === 0L)
  }

  test("digit strings are milliseconds") {
    assert(ms("0") === 0L)
    assert(ms("1500") === 1500L)
    assert(ms(" 42 ") === 42L)
    assert(ms("10") === 10L)
    assert(ms(Long.MaxValue.toString) === Long.MaxValue)
  }

  test("millisecond and java.time.Duration overloads") {
    assert(Durations.toMillis("x", 0L) === 0L)
    assert(Durations.toMillis("x", 1234L) === 1234L)
    assert(Durations.toMillis("x", JDuration.ofSeconds(3)) === 3000L)
    assert(Durations.toMillis("x", JDuration.ZERO) === 0L)
    val e1 = intercept[KStateException](Durations.toMillis("x", -1L))
    assert(e1.errorClass === "KSTATE_INVALID_DURATION")
    val e2 = intercept[KStateException](Durations.toMillis("x", JDuration.ofMillis(-1)))
    assert(e2.errorClass === "KSTATE_INVALID_DURATION")
    val e3 = intercept[KStateException](Durations.toMillis("x", null: JDuration))
    assert(e3.errorClass === "KSTATE_INVALID_DURATION")
    val e4 = intercept[KStateException](Durations.toMillis("x", JDuration.ofSeconds(Long.MaxValue)))
    assert(e4.errorClass === "KSTATE_INVALID_DURATION")
  }

  test("negative durations are rejected") {
    rejectsText("-10 seconds")
    rejectsText("-5")
    rejectsText(" -1ms")
    rejectsText("PT-1S")
    rejectsText("-PT1S")
  }

  test("empty, null and malformed strings are rejected") {
    rejectsText("")
    rejectsText("   ")
    rejectsText(null)
    rejectsText("abc")
    rejectsText("10 parsecs")
    rejectsText("seconds")
    rejectsText("interval")
    rejectsText("1.5 seconds")
    rejectsText("10 seconds 5")
    rejectsText("+10s")
    rejectsText("P")
    rejectsText("PTxyz")
  }

  test("a sub-millisecond part is rejected: kstate durations are whole milliseconds") {
    def subMs(f: => Long): Unit =
      assert(rejects(f).getMessage.contains("whole milliseconds"))
    subMs(ms("1500us"))
    subMs(ms("1 ms 1 ns"))
    subMs(ms("PT0.0005S"))
    subMs(ms("PT1.2345S"))
    subMs(Durations.toMillis("deduplicationInterval", JDuration.ofNanos(1)))
    subMs(Durations.toMillis("deduplicationInterval", JDuration.ofMillis(3).plusNanos(500)))
    // whole milliseconds in any unit are accepted
    assert(ms("2000us") === 2L)
    assert(ms("3000000 ns") === 3L)
    assert(ms("1 ms 1000 microseconds") === 2L)
    assert(ms("PT1.001000S") === 1001L)
    assert(Durations.toMillis("x", JDuration.ofNanos(5000000L)) === 5L)
  }

  test("unknown unit is named in the message") {
    assert(rejectsText("10 parsecs").getMessage.contains("parsecs"))
  }

  test("overflowing unit strings are rejected") {
    rejectsText("9999999999999 weeks")
    rejectsText("99999999999999999999 ms")
    rejectsText("P99999999999999D")
  }

  test("an all-digit string beyond Long.MaxValue is a named error") {
    rejectsText("99999999999999999999")
  }
}
