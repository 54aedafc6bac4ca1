package org.apache.spark.sql.kstate.processor.window

/**
 * What a session (or sliding) aggregation keeps for one state partition: each key's stored
 * spans ([[StoredSession]], ordered by start), a time index by span end for closing them, stream
 * time, and span and byte counts (for suppression limits).
 *
 * Contract:
 *  - `get(key)` returns the key's spans (empty when none), ordered by start; the array and its
 *    aggregates are the caller's to keep.
 *  - `put(key, spans, old)` replaces the key's spans; `old` are its spans as `get` returned them
 *    (for the counts: no second read). No spans removes the key (none before either: nothing to
 *    do, the key was never written). Keys and aggregates handed in are copied when kept, so the
 *    caller may reuse them.
 *  - `closeBefore(bound)(f)` removes every span with end < bound and calls `f(key, span)` for
 *    each (keys found through the time index: only keys with such a span are read); returns how
 *    many it removed.
 *  - `records` / `bytes`: spans stored and their size (implementation-defined unit: bytes of
 *    keys and aggregates for the state store).
 *  - `streamTime` is read once at the start of a batch; `finish(streamTime)` persists it and
 *    the counts once at the end.
 */
trait SessionStore[K, A] {
  def streamTime: Long
  def get(key: K): Array[StoredSession[A]]
  def put(key: K, spans: Seq[StoredSession[A]], old: Seq[StoredSession[A]]): Unit
  def closeBefore(bound: Long)(f: (K, StoredSession[A]) => Unit): Long
  def records: Long
  def bytes: Long
  def finish(streamTime: Long): Unit
}
