package io.kstate.dedup

/** Per-task counters a [[DedupProcessor]] keeps; the exec turns them into SQL metrics. */
final class DedupCounters {
  var forwarded: Long = 0L
  var duplicatesDropped: Long = 0L
  var lateForwarded: Long = 0L
  var nullKeysForwarded: Long = 0L
  var nullTimestampsForwarded: Long = 0L
  /** Expired entries removed: by a purge, or replaced by a new entry for their identity. */
  var entriesPurged: Long = 0L
  var entriesStored: Long = 0L
}
