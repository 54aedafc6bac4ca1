package org.apache.spark.sql.kstate.processor.tableagg

import org.apache.spark.sql.kstate.processor.Counters
import org.apache.spark.sql.kstate.processor.table.TableChange

/**
 * Stage 1 of a table aggregation (`table.group_by(key, value)`), Kafka's `KTableRepartitionMap`:
 * runs in the table's partition (partitioned by the table key) on the [[TableChange]]s of the
 * table's source, and sends each change to the group(s) it touches as [[GroupChange]]s, which
 * Spark shuffles by group to stage 2 ([[TableAggregateProcessor]]).
 *
 * For each table change, in the table's processing order:
 *  1. versioned table, `isLatest` false (an out-of-order update: a newer version of the key
 *     exists): ignored entirely, nothing is sent (KIP-914: a versioned table's aggregate holds
 *     the latest version by timestamp of each key; Kafka also skips sending it). Counted as
 *     `outOfOrderRecordsIgnored`. On an unversioned table every change is aggregated.
 *  2. The new value (if not a tombstone) and the old value (if the key had one) are each mapped
 *     by the [[GroupSelector]]; a mapping with a null group or a null value contributes to no
 *     group and is skipped (Kafka's rule; counted as `noGroupValuesSkipped`).
 *  3. Both contribute and their groups are the same group: ONE change to that group carrying both
 *     (subtract old, add new), so the group's aggregate is updated and emitted once (Kafka ≥ 3.4,
 *     KIP-904; Kafka before 3.4 sent two records and the aggregate emitted an intermediate result).
 *  4. Otherwise (different groups, or only one side contributes): "subtract the old value" to
 *     the old group FIRST, then "add the new value" to the new group (Kafka's order, "to be
 *     consistent with reduce and aggregate"): a re-keyed row leaves its old group before it
 *     joins the new one.
 *  5. Every change sent carries the table change's timestamp (Kafka forwards the record's).
 * A tombstone (or a key's first value) sends only an add (only a subtract); a tombstone for a
 * key without a value sends nothing.
 *
 * Null keys and null timestamps never reach it: the table source's caller drops and counts them
 * (Kafka's `KTableSource` drops null keys; a Kafka record always has a timestamp).
 *
 * kstate's decisions (differences from Kafka, each with the test that shows it):
 *  K1. a table record with a null timestamp is dropped at the source and counted
 *      (`nullTimestampsDropped`); Kafka has no such record (`TableAggregateProcessorSuite`,
 *      "driver: null keys, null timestamps ...");
 *  K2. "same group" is the selector's `sameGroup`, not `equals`, so byte-array group keys work
 *      (`TableRegroupProcessorSuite`, "rule 3: ... sameGroup, not ==");
 *  K3. with several table partitions, the order in which a group sees their changes is fixed:
 *      Kafka task order over the table partitions (each partition's changes in the order sent,
 *      merged by running maximum timestamp, ties by lower partition) — one of the orders Kafka
 *      may produce ([[TableAggregationDriver]], rule 3).
 * Everything else is Kafka's, record for record (`TableAggregateKafkaDifferentialSuite`).
 *
 * Counts into [[TableRegroupMetrics]]. Keeps no state. Not thread-safe; one per task.
 */
final class TableRegroupProcessor[K, V, G, GV](
    selector: GroupSelector[K, V, G, GV],
    versionedTable: Boolean,
    val counters: Counters = TableRegroupMetrics.newCounters()
) {
  import TableRegroupMetrics._
  require(counters.set eq TableRegroupMetrics, "counters of another operator")

  /** Sends the group changes of `change` to `emit`, in order. */
  def process(change: TableChange[K, V], emit: GroupChange[G, GV] => Unit): Unit = {
    if (versionedTable && !change.isLatest) {
      counters.add(OutOfOrderIgnored)
      return
    }
    val added = contribution(change.key, change.newValue)
    val removed = contribution(change.key, change.oldValue)
    val ts = change.timestamp
    if (added != null && removed != null && selector.sameGroup(removed.group, added.group)) {
      send(GroupChange(removed.group, added.value, removed.value, ts), emit)
    } else {
      if (removed != null) send(GroupChange(removed.group, null.asInstanceOf[GV], removed.value, ts), emit)
      if (added != null) send(GroupChange(added.group, added.value, null.asInstanceOf[GV], ts), emit)
    }
  }

  /** The value's group and contribution; null for a null value or one that selects no group. */
  private def contribution(key: K, value: V): GroupedValue[G, GV] =
    if (value == null) null
    else {
      val g = selector.select(key, value)
      if (g != null && g.contributes) g else { counters.add(NoGroup); null }
    }

  private def send(c: GroupChange[G, GV], emit: GroupChange[G, GV] => Unit): Unit = {
    counters.add(GroupChanges)
    emit(c)
  }
}
