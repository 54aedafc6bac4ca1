package io.kstate.suppress

import java.time.{Duration => JDuration}

import io.kstate.Durations

/** What `suppress` holds back (KIP-328's `Suppressed`). */
sealed trait Suppressed extends Serializable {
  def bufferConfig: BufferConfig[_]
  def describe: String
}

object Suppressed {

  /**
   * Exactly one final result per key and window, emitted once the window closes (stream time
   * >= window end + grace). Windowed input only; the buffer must be strict.
   */
  def untilWindowCloses(bufferConfig: StrictBufferConfig): UntilWindowCloses = UntilWindowCloses(bufferConfig)

  /**
   * Per-key rate limit: a key's first update starts its timer; later updates replace the value
   * without restarting it; the latest value is emitted once stream time >= first buffered time +
   * `timeToWaitForMoreEvents`.
   */
  def untilTimeLimit(timeToWaitForMoreEvents: JDuration, bufferConfig: BufferConfig[_]): UntilTimeLimit =
    UntilTimeLimit(Durations.toMillis("time_to_wait_for_more_events", timeToWaitForMoreEvents), bufferConfig)
  def untilTimeLimit(timeToWaitForMoreEvents: String, bufferConfig: BufferConfig[_]): UntilTimeLimit =
    UntilTimeLimit(Durations.toMillis("time_to_wait_for_more_events", timeToWaitForMoreEvents), bufferConfig)
}

final case class UntilWindowCloses(bufferConfig: StrictBufferConfig) extends Suppressed {
  override def describe: String = s"untilWindowCloses(${bufferConfig.describe})"
}

final case class UntilTimeLimit(timeLimitMs: Long, bufferConfig: BufferConfig[_]) extends Suppressed {
  override def describe: String = s"untilTimeLimit($timeLimitMs,${bufferConfig.describe})"
}
