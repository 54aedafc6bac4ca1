package org.apache.spark.sql.kstate.processor.table

import org.apache.spark.sql.kstate.processor.Counters

/**
 * Kafka's `KTableFilter` (`KTable#filter`, unmaterialized) with KIP-914, over the
 * [[TableChange]]s of one state partition: a value the predicate rejects becomes a tombstone.
 *
 * For each change, in processing order:
 *  1. new value: kept when it is not null and `predicate(key, value)` holds, else null (a
 *     rejected value is a tombstone downstream). The predicate is never called on null: a
 *     tombstone stays a tombstone.
 *  2. old value: the same test applied to the change's old value when `sendOldValues`, else
 *     null (not computed: the predicate is called once per change).
 *  3. duplicate tombstones: on an UNVERSIONED table (`versioned` false) with `sendOldValues`, a
 *     change whose filtered new and old values are both null is dropped (counted
 *     `tableDuplicateTombstonesDropped`): the downstream key has no value and stays so (Kafka's
 *     optimization). On a VERSIONED table it is forwarded (KIP-914): with out-of-order updates a
 *     second tombstone is a version of its own. KIP-914's example, one key, a predicate keeping
 *     `v1` and `v2`:
 *     {{{
 *       source update   unversioned forwards   versioned forwards
 *       v1 @1           v1 @1                   v1 @1
 *       null @2         null @2                 null @2
 *       null @4         -  (dropped)            null @4
 *       v2 @3           v2 @3                   v2 @3   (the table's latest stays null @4)
 *     }}}
 *  4. otherwise forwarded with the change's key, timestamp and `isLatest` unchanged.
 *
 * When Kafka knows the old value (kstate's `sendOldValues`): Kafka's filter asks its parent to
 * send old values when it is built, and gets them iff the source table is materialized
 * (`builder.table(topic, Materialized.as(store))`, versioned or not, or any downstream that
 * forces materialization: joins, aggregations). On an unmaterialized source
 * (`builder.table(topic)`) the filter gets null old values and drops nothing. kstate's tables are
 * always materialized ([[TableSource]]), so its table operators pass `sendOldValues = true`;
 * `false` is Kafka's unmaterialized source, kept so that both topologies have a kstate
 * equivalent.
 *
 * Difference from Kafka (deliberate):
 *  D1. kstate's tables are always materialized, so a filter on an unversioned table always knows
 *      the old value and drops duplicate tombstones; Kafka's filter over an unmaterialized
 *      `builder.table(topic)` does not. Example, one key, predicate `v > 0`: updates -1 @1, -2 @2;
 *      Kafka (unmaterialized) forwards null @1, null @2; kstate forwards nothing (both changes
 *      are (null, null)), as Kafka does over `builder.table(topic, Materialized.as(store))`.
 *      Downstream tables are the same (the key never has a value); only the redundant tombstones
 *      differ. Asserted by `TableKafkaDifferentialSuite` and `TableFilterProcessorSuite`
 *      ("filter difference D1").
 *
 * `filterNot(p)` is Kafka's `KTable#filterNot`: `filter(!p)` (Kafka computes
 * `value != null && (filterNot ^ p(value))`, so tombstones stay tombstones either way).
 *
 * `versioned` is whether the filtered table is versioned (KIP-914: materialized versioned
 * upstream with no unversioned materialization, aggregation or join in between). Keys and values
 * are passed on, never copied or compared. Not thread-safe; one per task.
 */
final class TableFilterProcessor[K, V](
    predicate: (K, V) => Boolean,
    val versioned: Boolean,
    sendOldValues: Boolean = true,
    val counters: Counters = TableMetrics.newCounters()
) {
  require(counters.set eq TableMetrics, "counters of another operator")

  /** The change to forward, or null when it is dropped (rule 3). */
  def process(change: TableChange[K, V]): TableChange[K, V] = {
    val key = change.key
    val newValue = keep(key, change.newValue)
    val oldValue = if (sendOldValues) keep(key, change.oldValue) else null.asInstanceOf[V]
    if (!versioned && sendOldValues && newValue == null && oldValue == null) {
      counters.add(TableMetrics.DuplicateTombstonesDropped)
      null
    } else TableChange(key, newValue, oldValue, change.timestamp, change.isLatest)
  }

  private def keep(key: K, value: V): V =
    if (value != null && predicate(key, value)) value else null.asInstanceOf[V]
}

object TableFilterProcessor {

  /** Kafka's `KTable#filterNot`: keeps the values `predicate` rejects. */
  def filterNot[K, V](
      predicate: (K, V) => Boolean,
      versioned: Boolean,
      sendOldValues: Boolean = true,
      counters: Counters = TableMetrics.newCounters()
  ): TableFilterProcessor[K, V] =
    new TableFilterProcessor[K, V]((k, v) => !predicate(k, v), versioned, sendOldValues, counters)
}
