package org.apache.spark.sql.kstate.processor.table

/**
 * A table's materialization in one state partition (one Kafka task): Kafka's timestamped
 * key-value store (unversioned) or its versioned key-value store (KIP-889 with KIP-914's put
 * result), as the table processors see it. Values of type `V` (`null` = tombstone / absent).
 *
 * Contract, both kinds:
 *  - `put(key, value, ts)` stores `value` (null deletes) and returns its validTo:
 *    [[TableState.Latest]] (KIP-914's -1; `Long.MinValue + 1` here) when it is now the key's latest value, the next version's
 *    timestamp when it went into history (versioned only), or [[TableState.NotPut]]
 *    (`Long.MinValue`) when nothing was stored (versioned only: `ts` is older than observed stream
 *    time − grace).
 *  - `get(key)` is the key's latest value with its timestamp, or null (absent or deleted).
 *  - `streamTime` is the largest timestamp put so far ([[org.apache.spark.sql.kstate.processor.StreamTime.Unknown]]
 *    before the first), persisted with the state.
 *  - `numVersions` is the number of versions a versioned state holds, tombstones included: a put
 *    of a new (key, timestamp) adds one, a put with the timestamp of an existing version of the
 *    key (it replaces it) and a put not stored add none, and dropping versions past the history
 *    retention subtracts them. An unversioned state holds no versions: 0.
 *  - Keys and values passed in are kept: the caller does not reuse them.
 *
 * Unversioned ([[versioned]] false): the latest value is the last one put, by processing order,
 * whatever its timestamp; every put returns `Latest`; `getAsOf(key, t)` is `get(key)` (Kafka's
 * unversioned stream–table join looks up the latest value whatever the stream record's time).
 *
 * Versioned ([[versioned]] true), with `historyRetentionMs` and `graceMs` (grace ≤ retention):
 *  - a put older than stream time − grace is not stored (`NotPut`);
 *  - a put with the timestamp of an existing version replaces that version's value;
 *  - the latest value is the one with the largest timestamp (a put with a smaller one goes into
 *    history and returns the timestamp of the version after it);
 *  - `getAsOf(key, t)` is the version with the largest timestamp ≤ t, null if that version is a
 *    tombstone or none exists; when `t` < stream time − history retention (the history may be
 *    gone) only the latest version answers: itself if its timestamp ≤ t, else null (Kafka's
 *    `RocksDBVersionedStore` rule: a key's latest version never expires);
 *  - versions whose validTo ≤ stream time − history retention may be dropped at any time
 *    (`getAsOf` never reaches them).
 * kstate's store implementation is `state.versioned.VersionedKeyValueStore` (bytes); the heap one
 * is [[InMemoryTableState]].
 */
trait TableState[K, V] {
  def versioned: Boolean
  def put(key: K, value: V, ts: Long): Long
  def get(key: K): TableState.Versioned[V]
  def getAsOf(key: K, asOf: Long): TableState.Versioned[V]
  def streamTime: Long
  def numVersions: Long
}

object TableState {

  /**
   * put's result when the value is the latest of its key. KIP-914 says -1, which is a valid
   * validTo here (event times may be negative: a version ending at -1), so kstate uses
   * `Long.MinValue + 1`: a validTo is above the put's timestamp, and a timestamp is above
   * `Long.MinValue` (the null time), so no validTo is `Long.MinValue + 1`.
   */
  val Latest: Long = Long.MinValue + 1

  /** put's result when nothing was stored: older than the grace period (KIP-914's MIN_VALUE). */
  val NotPut: Long = Long.MinValue

  /** A value (never null) and the timestamp it is valid from. */
  final case class Versioned[V](value: V, timestamp: Long)
}
