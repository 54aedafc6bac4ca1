package io.kstate.suppress

import io.kstate.KStateException
import org.scalatest.funsuite.AnyFunSuite

/** KIP-328's config objects: strictness is in the types, limits are checked when built. */
class SuppressedSuite extends AnyFunSuite {

  test("until_window_closes only compiles with a strict buffer config") {
    assertCompiles("Suppressed.untilWindowCloses(BufferConfig.unbounded)")
    assertCompiles("Suppressed.untilWindowCloses(BufferConfig.maxRecords(10).shutDownWhenFull)")
    assertCompiles("Suppressed.untilWindowCloses(BufferConfig.maxBytes(10).spillToDiskWhenFull)")
    assertTypeError("Suppressed.untilWindowCloses(BufferConfig.maxRecords(10))")
    assertTypeError("Suppressed.untilWindowCloses(BufferConfig.unbounded.emitEarlyWhenFull)")
    assertCompiles("""Suppressed.untilTimeLimit("30 seconds", BufferConfig.maxRecords(1000))""")
  }

  test("builders keep the other limit and set the strategy; withNoBound is strict and unbounded") {
    val eager = BufferConfig.maxRecords(5).withMaxBytes(100)
    assert((eager.maxRecords, eager.maxBytes, eager.whenFull, eager.isStrict) == (5L, 100L, WhenFull.EmitEarly, false))
    val strict = eager.spillToDiskWhenFull.withMaxRecords(7)
    assert((strict.maxRecords, strict.maxBytes, strict.whenFull, strict.isStrict) == (
      7L,
      100L,
      WhenFull.SpillToDisk,
      true
    ))
    val none = strict.withNoBound
    assert((none.maxRecords, none.maxBytes, none.isStrict) == (Long.MaxValue, Long.MaxValue, true))
    val unbounded = BufferConfig.unbounded
    assert((unbounded.maxRecords, unbounded.maxBytes, unbounded.whenFull) == (
      Long.MaxValue,
      Long.MaxValue,
      WhenFull.ShutDown
    ))
    assert(Suppressed.untilTimeLimit("30 seconds", eager).timeLimitMs == 30000L)
  }

  test("limits must be positive: a named error") {
    Seq(
      () => BufferConfig.maxRecords(0),
      () => BufferConfig.maxBytes(-1),
      () => BufferConfig.unbounded.withMaxRecords(0)
    ).foreach { f =>
      assert(intercept[KStateException](f()).errorClass == "KSTATE_INVALID_BUFFER_CONFIG")
    }
  }
}
