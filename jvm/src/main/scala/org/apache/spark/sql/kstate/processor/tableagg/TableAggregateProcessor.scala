package org.apache.spark.sql.kstate.processor.tableagg

import org.apache.spark.sql.kstate.processor.Counters
import org.apache.spark.sql.kstate.processor.table.{TableChange, TableState}

/**
 * Stage 2 of a table aggregation (`count()`, `sum`, `reduce`, `agg` after `group_by`), Kafka's
 * `KTableAggregate` and `KTableReduce` (one rule set, a [[TableAggregator]] choosing which): runs
 * in the group's partition on the [[GroupChange]]s of stage 1 ([[TableRegroupProcessor]]), keeps
 * each group's aggregate and its timestamp in a [[TableState]] (the result table's
 * materialization: unversioned, KIP-914: an aggregation's result is an unversioned table), and
 * emits the result table's changes.
 *
 * For each group change, in the order stage 1 sent them (see [[TableAggregationDriver]]):
 *  1. subtract: when the change has an old value AND the group has an aggregate, the aggregate
 *     becomes `subtract(aggregate, old)`; with no aggregate (it was deleted) the old value is
 *     skipped (Kafka's rule; counted as `subtractsWithoutAggregate`);
 *  2. add: when the change has a new value, the aggregate becomes `add(aggregate or null, new)`
 *     (so after a subtract that deleted it, `aggregate` restarts from its initializer and `reduce`
 *     from the new value);
 *  3. ONE result per group change: the group's new aggregate with its previous one as the old
 *     value. A change carrying both values (the row stayed in its group) subtracts then adds and
 *     emits once; no intermediate "subtracted only" result is emitted (Kafka ≥ 3.4).
 *  4. The result's timestamp is max(change's timestamp, the previous aggregate's timestamp) when
 *     the group had an aggregate, else the change's timestamp (Kafka's rule in both
 *     `KTableAggregate` and `KTableReduce`: a group's timestamps never go backwards while it
 *     exists; a re-created group starts from its first record's time).
 *  5. A null aggregate (the aggregator returned null) deletes the group and emits a tombstone
 *     (new value null, old value the previous aggregate); a group whose count or sum reaches 0
 *     is NOT deleted, it emits 0 (Kafka's `count()` subtracts 1; only a user's subtractor that
 *     returns null deletes, and `agg`'s state, whose columns all turn null when its row count
 *     reaches 0: `plans.DeclarativeTableAggregates`). A subtract-only change to a group without
 *     an aggregate emits a tombstone with null old value, as Kafka does (it deletes an absent
 *     key and forwards).
 *  6. The result is stored with its timestamp; if the result store is versioned (Kafka's
 *     `Materialized.as(versioned store)` on the aggregate) and rejects it (`NotPut`: older than
 *     its grace), nothing is emitted; `isLatest` is the store's answer (always true unversioned).
 * Out-of-order records of a versioned source table never get here (stage 1, rule 1).
 *
 * kstate's decisions: every result is emitted with its old value (Kafka forwards the old value
 * only when a downstream processor asks for it; `toStream()` drops it) and one result per group
 * change, as Kafka with caches off: collapsing a micro-batch's results per group is the exec's
 * choice, not this processor's. `sum` is kstate's ([[TableAggregator.sum]]; Kafka's grouped
 * table has none): its results equal Kafka's `reduce(+, −)` (`TableAggregateKafkaDifferentialSuite`).
 *
 * Counts into [[TableAggregateMetrics]]. Not thread-safe; one per task.
 */
final class TableAggregateProcessor[G, GV, A](
    aggregator: TableAggregator[G, GV, A],
    state: TableState[G, A],
    val counters: Counters = TableAggregateMetrics.newCounters()
) {
  import TableAggregateMetrics._
  require(counters.set eq TableAggregateMetrics, "counters of another operator")

  /** Applies one group change and sends the group's new aggregate (if stored) to `emit`. */
  def process(change: GroupChange[G, GV], emit: TableChange[G, A] => Unit): Unit = {
    val group = change.group
    val previous = state.get(group)
    val oldAgg: A = if (previous == null) null.asInstanceOf[A] else previous.value
    val afterSubtract: A =
      if (change.oldValue == null) oldAgg
      else if (oldAgg == null) { counters.add(SubtractsSkipped); oldAgg }
      else aggregator.subtract(group, oldAgg, change.oldValue)
    val newAgg: A =
      if (change.newValue == null) afterSubtract else aggregator.add(group, afterSubtract, change.newValue)
    val ts = if (previous == null) change.timestamp else math.max(change.timestamp, previous.timestamp)
    val validTo = state.put(group, newAgg, ts)
    if (validTo == TableState.NotPut) { counters.add(NotPut); return }
    counters.add(Updates)
    if (newAgg == null) counters.add(Deleted)
    emit(TableChange(group, newAgg, oldAgg, ts, isLatest = validTo == TableState.Latest))
  }
}
