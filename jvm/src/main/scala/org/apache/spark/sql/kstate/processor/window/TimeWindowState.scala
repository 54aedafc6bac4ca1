package org.apache.spark.sql.kstate.processor.window

/**
 * What a [[TimeWindowAggregateProcessor]] keeps for one state partition: (key, window start) ->
 * (aggregate, largest record timestamp), windows by end for closing them in end order, stream
 * time, and the open windows' record and byte counts (for final results' buffer limits).
 *
 * Contract:
 *  - `get(key, start, into)` fills `into.agg`, `into.maxTs` and `into.storedSize` from the stored
 *    window and returns true, or returns false (leaving `into` alone) when none is stored.
 *  - `put(key, start, w)` stores `w`: a new window when `!w.isStored` (indexed by `w.end`), else
 *    it replaces the stored one; it sets `w.storedSize`.
 *  - `closeBefore(bound, f)` removes every window with end < `bound`, calling `f` for each in
 *    end order, and returns how many it removed. Ties are in an order the implementation fixes
 *    (the heap state: first stored first; the store: by the state key's encoded bytes).
 *  - `records` / `bytes`: the stored windows and their bytes (the implementation defines them).
 *  - Keys passed in may be reused by the caller after the call; an implementation copies what it
 *    keeps. Keys and aggregates handed to `f` may be reused after `f` returns. Aggregates put are
 *    never modified by the caller afterwards, so they may be kept as they are.
 *  - `streamTime` is read once at the start of a batch; `finish(streamTime)` persists it and the
 *    counts at the end.
 */
trait TimeWindowState[K, A] {
  def streamTime: Long
  def get(key: K, start: Long, into: WindowValue[A]): Boolean
  def put(key: K, start: Long, w: WindowValue[A]): Unit
  def closeBefore(bound: Long, f: ClosedWindow[K, A]): Long
  def records: Long
  def bytes: Long
  def finish(streamTime: Long): Unit
}

/** Receives the windows a [[TimeWindowState]] closes (a trait, so that `Long`s are not boxed). */
trait ClosedWindow[K, A] {
  def closed(key: K, start: Long, agg: A, maxTs: Long): Unit
}

/** Receives a [[TimeWindowAggregateProcessor]]'s results; arguments may be reused after the call. */
trait WindowResults[K, A] {
  def result(key: K, start: Long, end: Long, agg: A, maxTs: Long): Unit
}
