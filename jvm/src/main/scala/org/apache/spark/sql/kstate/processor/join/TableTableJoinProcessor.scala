package org.apache.spark.sql.kstate.processor.join

import org.apache.spark.sql.kstate.processor.Counters
import org.apache.spark.sql.kstate.processor.table.{TableChange, TableSource, TableState}

/**
 * Kafka's primary-key table–table join (`KTableKTableInnerJoin`, `KTableKTableLeftJoin` with
 * `KTableKTableRightJoin` for its right side, `KTableKTableOuterJoin`) for one state partition
 * (one Kafka task), with KIP-914's rule for versioned tables. Each side is materialized by its own
 * [[TableSource]] over its own [[TableState]], versioned or not, independently of the other.
 * `joiner(left, right)` makes a result value; it is called with null for an absent side where the
 * kind keeps such a row (left: right may be null; outer: either may be null, never both).
 *
 * For each raw update of one side (`processLeft` / `processRight`), in processing order
 * ("this" side is the updated one, "other" the opposite):
 *  1. a null key or a null timestamp: dropped and counted, nothing stored (Kafka drops null keys
 *     at the table source; a Kafka record always has a timestamp, kstate has no place in a
 *     version history for a null one, so it drops it too);
 *  2. the update is applied to this side's table (`TableSource.update`); an update a versioned
 *     table did not store (older than its stream time − grace, KIP-914's `NotPut`) ends here,
 *     counted as late (Kafka's table source forwards nothing either);
 *  3. KIP-914: an update of a versioned side that is not its key's latest version (the put
 *     returned a validTo ≠ -1) is stored but produces no join result (counted as out of order).
 *     Out-of-order updates of an unversioned side do produce results (every put is the latest
 *     by processing order), so a mixed join keeps Kafka's mixed semantics;
 *  4. the other side's latest value is looked up (`get`: latest by timestamp when versioned, by
 *     processing order when not; never `getAsOf`, as in Kafka);
 *  5. a result is emitted iff the other side has a value, or this side is preserved by the kind
 *     (left side of a left join, both sides of an outer join) and its new or old value is
 *     non-null. So an inner join emits a tombstone (new and old null) for the delete of a key
 *     that had no value, as Kafka does, when the other side has one; and a left join's right
 *     side emits only while the left side has a value;
 *  6. the result's new value is the joined row of this side's new value and the other's value,
 *     its old value the joined row of this side's old value ([[TableChange.oldValue]]: the
 *     table's latest before the update) and the other's value; a joined row exists when both
 *     sides have a value, or one side has one and the kind preserves that side; otherwise it is
 *     null (a tombstone / "no row before");
 *  7. the result's timestamp is max(update's timestamp, other side's value timestamp), or the
 *     update's timestamp when the other side has no value. Its `isLatest` is true (a join
 *     result is not a versioned table, KIP-914).
 *
 * Deliberate differences from Kafka (each asserted by its own test):
 *  - (D1) the old join value is always computed; Kafka computes it only when something
 *    downstream asks for old values (a table aggregation, a materialization). Which updates
 *    produce a result does not depend on it in Kafka (the left/outer checks read the old value
 *    of a side whose old values Kafka always sends), so Kafka's forwarded new values and
 *    timestamps are the same either way;
 *  - (D2) with no value on the other side the result keeps the update's timestamp; Kafka takes
 *    max(timestamp, -1), which is the same for every timestamp Kafka accepts (>= 0), while a
 *    Spark event time before 1970 (negative) stays itself rather than becoming -1.
 *
 * Spark mapping: a Kafka task is one state partition; both sides are co-partitioned by key and
 * merged into one processing order by the two-input operator. In Spark each side's table is
 * materialized by its own operator upstream (`KStateTableSource`, then any filter / mapValues),
 * whose change rows carry rules 1–2's outcome, the old value and `isLatest`: the operator calls
 * [[joinLeft]] / [[joinRight]] with those changes, over two unversioned states that mirror each
 * side's latest value (Kafka's join reads the upstream store through a value getter; the join
 * only ever reads a side's latest value, so a mirror of it is all the join keeps). `processLeft`
 * / `processRight` do the same from raw updates, with each side materialized here. Counts into [[TableTableJoinMetrics]]. Not thread-safe; one
 * instance per task (state lives in the two tables, so an instance per micro-batch is fine).
 */
final class TableTableJoinProcessor[K, VL, VR, R](
    kind: TableTableJoinKind,
    left: TableSource[K, VL],
    right: TableSource[K, VR],
    joiner: (VL, VR) => R,
    val counters: Counters = TableTableJoinMetrics.newCounters()
) {
  import TableTableJoinMetrics._
  require(counters.set eq TableTableJoinMetrics, "counters of another operator")

  private val rightFirst: (VR, VL) => R = (r, l) => joiner(l, r)

  /** Applies one update of the left table and emits the join result it produces, if any. */
  def processLeft(
      key: K,
      keyIsNull: Boolean,
      value: VL,
      ts: Long,
      tsIsNull: Boolean,
      emit: TableChange[K, R] => Unit
  ): Unit = {
    val change = apply(left, key, keyIsNull, value, ts, tsIsNull)
    if (change != null) {
      join(change, right.state.get(key), kind.leftPreserved, kind.rightPreserved, joiner, emit)
    }
  }

  /** Applies one update of the right table and emits the join result it produces, if any. */
  def processRight(
      key: K,
      keyIsNull: Boolean,
      value: VR,
      ts: Long,
      tsIsNull: Boolean,
      emit: TableChange[K, R] => Unit
  ): Unit = {
    val change = apply(right, key, keyIsNull, value, ts, tsIsNull)
    if (change != null) {
      join(change, left.state.get(key), kind.rightPreserved, kind.leftPreserved, rightFirst, emit)
    }
  }

  /**
   * Joins one change the left table passed on, when that table is materialized upstream of the
   * join (Spark: its own operator applied rules 1–2 and computed the change's old value and
   * `isLatest`). The left state here then only mirrors each key's latest value for the right
   * side's lookups: it must be unversioned, and a change is put into it iff it is the latest
   * (rule 3). Same results as [[processLeft]] on the raw update.
   */
  def joinLeft(change: TableChange[K, VL], emit: TableChange[K, R] => Unit): Unit =
    if (mirrored(left, change)) {
      join(change, right.state.get(change.key), kind.leftPreserved, kind.rightPreserved, joiner, emit)
    }

  /** [[joinLeft]] for a change of the right table. */
  def joinRight(change: TableChange[K, VR], emit: TableChange[K, R] => Unit): Unit =
    if (mirrored(right, change)) {
      join(change, left.state.get(change.key), kind.rightPreserved, kind.leftPreserved, rightFirst, emit)
    }

  /** Rules 1–3: the change to join, or null when the update produces no result. */
  private def apply[V](
      side: TableSource[K, V],
      key: K,
      keyIsNull: Boolean,
      value: V,
      ts: Long,
      tsIsNull: Boolean
  ): TableChange[K, V] = {
    if (keyIsNull) { counters.add(NullKeys); return null }
    if (tsIsNull) { counters.add(NullTimestamps); return null }
    val change = side.update(key, value, ts)
    if (change == null) { counters.add(LateDropped); null }
    else if (latest(change)) change
    else null
  }

  /** Rule 3: whether `change` joins (counts it when it does not). */
  private def latest(change: TableChange[K, _]): Boolean =
    change.isLatest || { counters.add(OutOfOrderIgnored); false }

  /** Rule 3 for an upstream change: a latest one is mirrored into the side's (unversioned) state. */
  private def mirrored[V](side: TableSource[K, V], change: TableChange[K, V]): Boolean = {
    require(!side.state.versioned, "a mirror of an upstream table is unversioned")
    latest(change) && { side.state.put(change.key, change.newValue, change.timestamp); true }
  }

  /** Rules 4–7 for a change of "this" side (type T) against the other side's latest value. */
  private def join[T, O](
      change: TableChange[K, T],
      other: TableState.Versioned[O],
      thisPreserved: Boolean,
      otherPreserved: Boolean,
      j: (T, O) => R,
      emit: TableChange[K, R] => Unit
  ): Unit = {
    val otherPresent = other != null
    if (!otherPresent && !(thisPreserved && (change.newValue != null || change.oldValue != null))) {
      counters.add(NoMatch)
      return
    }
    val o: O = if (otherPresent) other.value else null.asInstanceOf[O]
    def row(t: T): R =
      if ((t != null && (otherPresent || thisPreserved)) || (otherPresent && otherPreserved)) j(t, o)
      else null.asInstanceOf[R]
    val ts = if (otherPresent) math.max(change.timestamp, other.timestamp) else change.timestamp
    counters.add(JoinResults)
    emit(TableChange(change.key, row(change.newValue), row(change.oldValue), ts, isLatest = true))
  }
}
