package io.kstate.oracle

/** One input record: `key` null for a null key, `value` None for a null value. */
final case class Ev(key: String, ts: Long, value: Option[Long])

/**
 * One emitted row, as both engines are compared: the key, the window's start and end
 * (`until_time_limit`: the emitted row's timestamp for both) and the value (a count, or the
 * table's value for `until_time_limit`); None is a tombstone (a merged-away session).
 */
final case class Out(key: String, start: Long, end: Long, value: Option[Long])

/** What both engines run on the same input. */
sealed trait OracleCase { def describe: String = toString }

object OracleCase {

  /** `windowedBy(TimeWindows).count()`, optionally `suppress(untilWindowCloses(unbounded))`. */
  final case class TimeCount(sizeMs: Long, advanceMs: Long, graceMs: Long, suppressed: Boolean) extends OracleCase

  /** `windowedBy(SessionWindows).count()`, optionally suppressed until the sessions close. */
  final case class SessionCount(gapMs: Long, graceMs: Long, suppressed: Boolean) extends OracleCase

  /** `windowedBy(SlidingWindows).count()`, optionally suppressed until the windows close. */
  final case class SlidingCount(diffMs: Long, graceMs: Long, suppressed: Boolean) extends OracleCase

  /** A table (key, value, timestamp) rate-limited by `suppress(untilTimeLimit(limit, buffer))`. */
  final case class TimeLimit(limitMs: Long, buffer: Buffer) extends OracleCase

  /** `until_time_limit`'s buffer configurations compared. */
  sealed trait Buffer
  case object Unbounded extends Buffer
  final case class MaxRecordsEmitEarly(n: Long) extends Buffer
  final case class MaxRecordsShutDown(n: Long) extends Buffer
}

/**
 * What an engine emitted for a run split into micro-batches: the rows of each micro-batch, in
 * emission order, and the index of the micro-batch that failed because a `shutDownWhenFull`
 * buffer was full (its rows and later ones are not part of `batches`).
 */
final case class Emitted(batches: Seq[Seq[Out]], failedAt: Option[Int])
