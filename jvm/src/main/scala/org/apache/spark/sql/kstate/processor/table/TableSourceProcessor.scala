package org.apache.spark.sql.kstate.processor.table

import org.apache.spark.sql.kstate.processor.Counters

/**
 * A table's changelog entering its materialization, one update at a time, for one state
 * partition (one Kafka task): Kafka's `KTableSource` on a materialized table (a
 * [[TableSource]]) with the rules for what Kafka never lets reach it, and its metrics.
 *
 * Spark mapping: a table's changelog is a DataFrame of keyed updates, processed per state
 * partition in Kafka task order; stream time is the largest timestamp the partition's table has
 * put ([[TableState.streamTime]]).
 *
 * For each update, in processing order:
 *  1. a null key: dropped, counted (`tableNullKeysDropped`), stream time unchanged (Kafka's
 *     `KTableSource` rule: "Skipping record due to null key");
 *  2. a null timestamp: dropped, counted (`tableNullTimestampsDropped`), stream time unchanged
 *     (kstate's rule: Kafka never sees one: its default timestamp extractor fails the task on an
 *     invalid timestamp and `LogAndSkipOnInvalidTimestamp` drops the record; a table cannot place
 *     an update without a time, so kstate drops it);
 *  3. otherwise the update is put ([[TableSource.update]]): counted as an update, and as a
 *     tombstone when its value is null;
 *  4. a versioned table's put older than stream time − grace stores nothing (`NotPut`): dropped,
 *     counted (`tableUpdatesNotPut`), nothing forwarded (Kafka: "if not put to store, do not
 *     forward downstream either");
 *  5. a stored update is forwarded as a [[TableChange]]: new value, the latest value before it
 *     (by processing order unversioned, by timestamp versioned), the update's timestamp, and
 *     `isLatest` = the put returned `Latest`; a versioned put into history also counts as
 *     out of order. Tombstones are forwarded even when the key had no value (Kafka's source
 *     does not drop them; only the filter does, [[TableFilterProcessor]] rule 3).
 *
 * Differences from Kafka (deliberate):
 *  D1. rule 2: a null timestamp is dropped and counted (Kafka's default extractor fails the task);
 *      `TableSourceSuite` "rule 2 (source difference D1)".
 *  D2. a versioned table's grace is its own setting (≤ history retention), where Kafka's
 *      versioned store uses its history retention as grace (KIP-914 lists that as a
 *      limitation). Example: retention 100, grace 10, updates k:1 @50 then k:2 @39: kstate drops
 *      k:2 @39 (older than 50 − 10, counted `tableUpdatesNotPut`); Kafka (grace = retention = 100)
 *      puts it into history and forwards it. With grace = retention the two agree
 *      (`TableKafkaDifferentialSuite`); `TableSourceSuite` "source difference D2".
 *  D3. (Kafka's defect, not followed) a tombstone replacing a key's latest version at that
 *      version's own timestamp is a version: the key is deleted from then on, and a later
 *      out-of-order update goes into history before it (KIP-889's rules; [[TableState]]).
 *      Kafka 4.3's RocksDB versioned store deletes the latest value without recording the
 *      tombstone, so the key's history is empty and the out-of-order update becomes the latest.
 *      Example, retention = grace = 15: c:6 @33, c:null @33, c:3 @19, c:7 @26. kstate: 3 @19 is
 *      history (isLatest false), the key stays deleted, c:7 @26's old value is null. Kafka:
 *      3 @19 is the latest, c:7 @26's old value is 3 (a downstream aggregation would subtract
 *      it). Asserted by `TableKafkaDifferentialSuite` ("source difference D3"); the random
 *      differential inputs leave such same-timestamp tombstones out on versioned tables.
 *
 * Not thread-safe; one per task.
 */
final class TableSourceProcessor[K, V](
    source: TableSource[K, V],
    val counters: Counters = TableMetrics.newCounters()
) {
  import TableMetrics._
  require(counters.set eq TableMetrics, "counters of another operator")

  /**
   * Applies one update; `key` is ignored when `keyIsNull`, `ts` when `tsIsNull`.
   * @return the change to forward, or null when the update is dropped.
   */
  def process(key: K, keyIsNull: Boolean, value: V, ts: Long, tsIsNull: Boolean): TableChange[K, V] = {
    if (keyIsNull) { counters.add(NullKeysDropped); return null }
    if (tsIsNull) { counters.add(NullTimestampsDropped); return null }
    counters.add(Updates)
    if (value == null) counters.add(Tombstones)
    val change = source.update(key, value, ts)
    if (change == null) counters.add(UpdatesNotPut)
    else {
      counters.add(VersionsStored)
      if (!change.isLatest) counters.add(OutOfOrderUpdates)
    }
    change
  }
}
