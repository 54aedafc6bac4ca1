package io.kstate.dedup

/**
 * KIP-655 deduplication of one state partition, record by record.
 *
 * For each record, in processing order:
 *  1. null timestamp: forwarded, not stored, stream time unchanged (kstate's rule; Kafka drops
 *     records with invalid timestamps before they reach a processor, a Spark user would rather
 *     see them); counted as a null key if the identity is null too;
 *  2. stream time := max(stream time, ts) — every timestamped record advances it, also those
 *     with a null identity;
 *  3. null identity (null key / null id): forwarded, never stored or deduplicated;
 *  4. duplicate: an unexpired entry for the identity with |stored − ts| ≤ interval (both ends
 *     inclusive) → dropped; the stored entry is not refreshed, so the first record wins;
 *  5. late: ts < stream time − interval and no duplicate → forwarded, not stored;
 *  6. otherwise forwarded and stored.
 * An entry is expired once its ts < stream time − interval; expired entries behave as if purged
 * the moment stream time advanced past them.
 *
 * Not thread-safe; one instance per task.
 */
final class DedupProcessor[K](intervalMs: Long, state: DedupState[K], counters: DedupCounters) {
  require(intervalMs >= 0, s"interval must be >= 0, got $intervalMs")

  private var streamTime: Long = state.streamTime

  /** Raises stream time to at least `t` (the watermark-follow option). */
  def advanceStreamTime(t: Long): Unit = if (t > streamTime) streamTime = t

  def currentStreamTime: Long = streamTime

  /**
   * Decides one record. `identity` is ignored when `identityIsNull`; `ts` when `tsIsNull`.
   * @return true if the record is forwarded.
   */
  def process(identity: K, identityIsNull: Boolean, ts: Long, tsIsNull: Boolean): Boolean = {
    if (tsIsNull) {
      if (identityIsNull) counters.nullKeysForwarded += 1 else counters.nullTimestampsForwarded += 1
      counters.forwarded += 1
      return true
    }
    if (ts > streamTime) streamTime = ts
    if (identityIsNull) {
      counters.nullKeysForwarded += 1
      counters.forwarded += 1
      return true
    }
    val expiryBound = DedupProcessor.minus(streamTime, intervalMs)
    val stored = state.get(identity)
    val live = stored != DedupState.NoEntry && stored >= expiryBound
    if (live && DedupProcessor.within(stored, ts, intervalMs)) {
      counters.duplicatesDropped += 1
      false
    } else if (ts < expiryBound) {
      counters.lateForwarded += 1
      counters.forwarded += 1
      true
    } else {
      val replaces = stored != DedupState.NoEntry
      if (replaces) counters.entriesPurged += 1 // an expired entry not swept yet: replaced
      state.put(identity, ts, replaces)
      counters.entriesStored += 1
      counters.forwarded += 1
      true
    }
  }

  /** Ends the batch: purges expired entries and persists stream time. */
  def finish(): Unit = {
    counters.entriesPurged += state.purgeOlderThan(DedupProcessor.minus(streamTime, intervalMs))
    state.streamTime = streamTime
  }
}

object DedupProcessor {
  /** `a - b` saturating at Long.MinValue (b >= 0). */
  def minus(a: Long, b: Long): Long = if (a < Long.MinValue + b) Long.MinValue else a - b

  /** |a - b| <= d without overflow (d >= 0). */
  def within(a: Long, b: Long, d: Long): Boolean =
    if (a >= b) minus(a, d) <= b else minus(b, d) <= a
}
