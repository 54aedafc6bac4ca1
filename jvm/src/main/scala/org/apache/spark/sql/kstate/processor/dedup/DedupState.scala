package org.apache.spark.sql.kstate.processor.dedup

/**
 * What a deduplication processor keeps for one state partition (one Kafka task).
 *
 * Contract:
 *  - At most one live entry per identity. [[DedupProcessor]] guarantees this: a record is stored
 *    only when no entry for its identity lies within the interval, and any older entry for that
 *    identity is already expired (see KIP-655 analysis in docs/deduplication.md).
 *  - `get` may return an entry that has expired but not been purged yet; the processor treats
 *    expired entries as absent, so purging is an optimisation of space, never of semantics.
 *  - `put(identity, ts, replaces)` may overwrite such an expired entry; `replaces` says whether
 *    `get` just returned an entry for this identity (so implementations need not look again).
 *  - `purgeOlderThan(bound)` removes every entry whose timestamp is `< bound`, now or, if the
 *    implementation amortises purging, by a later call (expired entries behave as absent
 *    either way); it returns how many entries it removed in this call.
 *  - Identity keys passed in may be reused by the caller after the call returns; an
 *    implementation that keeps them must copy them.
 *  - `streamTime` is read once at the start of a batch and written once at the end.
 */
trait DedupState[K] {

  /** Stored timestamp for `identity`, or [[DedupState.NoEntry]]. */
  def get(identity: K): Long
  def put(identity: K, ts: Long, replaces: Boolean): Unit

  /** Removes entries with timestamp `< bound`; returns how many it removed. */
  def purgeOlderThan(bound: Long): Long

  /** Number of stored entries (including expired ones not purged yet). */
  def numEntries: Long
  def streamTime: Long
  def streamTime_=(t: Long): Unit
}

object DedupState {

  /** "No entry". Callers never pass `Long.MinValue` as a timestamp: it counts as null. */
  val NoEntry: Long = Long.MinValue
}
