package org.apache.spark.sql.kstate.processor.table

/**
 * One update of a table as Kafka's table processors pass it on (Kafka's `Change<V>` with its
 * record's key and timestamp): the key's new value, its previous value, and whether the update
 * is the latest version of the key (KIP-914).
 *
 * Rules:
 *  - A null `newValue` is a tombstone (the key is deleted); a null `oldValue` means the key had
 *    no value (absent or deleted) before this update.
 *  - `isLatest` is false only on a versioned table, for an out-of-order update (its put returned
 *    a validTo other than [[TableState.Latest]]); on an unversioned table every update is the
 *    latest (by processing order).
 *  - `oldValue` is the value the materialization held as latest before the update: by
 *    processing order on an unversioned table, by timestamp on a versioned one (so for an
 *    out-of-order update it is the newer, still-latest value, as in Kafka).
 * Keys and values are immutable or never reused by the producer of the change.
 */
final case class TableChange[K, V](key: K, newValue: V, oldValue: V, timestamp: Long, isLatest: Boolean)
