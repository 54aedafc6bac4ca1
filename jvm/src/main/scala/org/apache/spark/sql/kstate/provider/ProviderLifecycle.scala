package org.apache.spark.sql.kstate.provider

/**
 * The provider's current [[ProviderState]] and its one transition method.
 *
 * Threading: `current` may be read from any thread without the lock (it is volatile; the task
 * thread reads it on every store read). It changes only through [[moveTo]], which requires the
 * caller to hold `lock` (the provider's monitor): transitions are serialised with everything
 * else the lock guards.
 */
private[kstate] final class ProviderLifecycle(lock: AnyRef) {
  @volatile private var state: ProviderState = ProviderState.Created

  def current: ProviderState = state

  /**
   * Moves to `to`. Throws `IllegalStateException` naming both states if the life cycle has no
   * such transition, or if the caller does not hold the provider's lock.
   */
  def moveTo(to: ProviderState): Unit = {
    if (!Thread.holdsLock(lock)) {
      throw new IllegalStateException(
        s"provider state change $state -> $to outside the provider's lock (thread ${Thread.currentThread.getName})"
      )
    }
    if (!ProviderState.allows(state, to)) {
      throw new IllegalStateException(s"illegal provider state transition: $state -> $to")
    }
    state = to
  }
}
