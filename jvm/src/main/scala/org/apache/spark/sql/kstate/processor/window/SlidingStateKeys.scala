package org.apache.spark.sql.kstate.processor.window

/**
 * How a sliding aggregation keeps a key's two lists in one [[SessionStore]] of state keys `SK`:
 * the key's windows under `windows(key)`, its records' own aggregates under `records(key)`.
 * `isWindows(sk)` tells the two apart and `keyOf(sk)` gives the key back (for windows closed
 * through the store's time index). Returned keys may be kept by the caller.
 */
trait SlidingStateKeys[K, SK] {
  def windows(key: K): SK
  def records(key: K): SK
  def isWindows(stateKey: SK): Boolean
  def keyOf(stateKey: SK): K
}
