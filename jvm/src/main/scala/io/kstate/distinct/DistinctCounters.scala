package io.kstate.distinct

/** Per-task counters of a windowed distinct processor. */
final class DistinctCounters {
  var emitted: Long = 0L
  var duplicatesDropped: Long = 0L
  var lateDropped: Long = 0L
  var nullKeysDropped: Long = 0L
  var nullTimestampsDropped: Long = 0L
  var windowsStored: Long = 0L
  var windowsPurged: Long = 0L
}
