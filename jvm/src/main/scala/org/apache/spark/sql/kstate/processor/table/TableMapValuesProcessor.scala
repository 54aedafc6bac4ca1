package org.apache.spark.sql.kstate.processor.table

/**
 * Kafka's `KTableMapValues` (`KTable#mapValues`, unmaterialized) over the [[TableChange]]s of
 * one state partition. KIP-914 leaves it unchanged: it neither reorders nor drops anything, on
 * versioned and unversioned tables alike.
 *
 * For each change, in processing order:
 *  1. new value: `mapper(key, value)` when the value is not null, else null: the mapper is never
 *     called on a tombstone, and a mapper returning null turns the update into a tombstone (as in
 *     Kafka).
 *  2. old value: the same mapping of the change's old value when `sendOldValues`, else null (not
 *     computed: one mapper call per change). Kafka maps old values only when a downstream asks
 *     for them (aggregations, joins, a filter over a materialized source); kstate's table
 *     operators pass `true` when their downstream reads old values.
 *  3. always forwarded, with the change's key, timestamp and `isLatest`: duplicate tombstones
 *     (a null after a null) are forwarded too; only the filter drops them
 *     ([[TableFilterProcessor]] rule 3).
 *
 * The mapper must be deterministic: an old value is mapped again when it is forwarded as old.
 * Not thread-safe; one per task.
 */
final class TableMapValuesProcessor[K, V, W](mapper: (K, V) => W, sendOldValues: Boolean = true) {

  def process(change: TableChange[K, V]): TableChange[K, W] = {
    val key = change.key
    val newValue = map(key, change.newValue) // Kafka's order: new value first
    val oldValue = if (sendOldValues) map(key, change.oldValue) else null.asInstanceOf[W]
    TableChange(key, newValue, oldValue, change.timestamp, change.isLatest)
  }

  private def map(key: K, value: V): W = if (value == null) null.asInstanceOf[W] else mapper(key, value)
}
