package org.apache.spark.sql.kstate.processor.dedup

import org.apache.spark.sql.kstate.processor.{Counters, StreamTime}

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
 * Counts into [[DedupMetrics]]. Not thread-safe; one instance per task.
 */
final class DedupProcessor[K](
    intervalMs: Long,
    state: DedupState[K],
    val counters: Counters = DedupMetrics.newCounters()
) {
  import DedupMetrics._
  require(intervalMs >= 0, s"interval must be >= 0, got $intervalMs")
  require(counters.set eq DedupMetrics, "counters of another operator")
  private val streamTime = new StreamTime(state.streamTime)

  /** Raises stream time to at least `t` (the watermark-follow option). */
  def advanceStreamTime(t: Long): Unit = streamTime.advance(t)

  def currentStreamTime: Long = streamTime.current

  /**
   * Decides one record. `identity` is ignored when `identityIsNull`; `ts` when `tsIsNull`.
   * @return true if the record is forwarded.
   */
  def process(identity: K, identityIsNull: Boolean, ts: Long, tsIsNull: Boolean): Boolean = {
    if (tsIsNull) {
      counters.add(if (identityIsNull) NullKeysForwarded else NullTimestampsForwarded)
      counters.add(Forwarded)
      return true
    }
    streamTime.advance(ts)
    if (identityIsNull) {
      counters.add(NullKeysForwarded)
      counters.add(Forwarded)
      return true
    }
    val expiryBound = streamTime.closeTime(intervalMs)
    val stored = state.get(identity)
    val live = stored != DedupState.NoEntry && stored >= expiryBound
    if (live && StreamTime.within(stored, ts, intervalMs)) {
      counters.add(DuplicatesDropped)
      false
    } else if (ts < expiryBound) {
      counters.add(LateForwarded)
      counters.add(Forwarded)
      true
    } else {
      val replaces = stored != DedupState.NoEntry
      if (replaces) counters.add(EntriesPurged) // an expired entry not swept yet: replaced
      state.put(identity, ts, replaces)
      counters.add(EntriesStored)
      counters.add(Forwarded)
      true
    }
  }

  /** Ends the batch: purges expired entries, persists stream time, records the state size. */
  def finish(): Unit = {
    counters.add(EntriesPurged, state.purgeOlderThan(streamTime.closeTime(intervalMs)))
    state.streamTime = streamTime.current
    counters.set(StoredEntries, state.numEntries)
  }
}
