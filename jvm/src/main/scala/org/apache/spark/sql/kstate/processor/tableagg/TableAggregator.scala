package org.apache.spark.sql.kstate.processor.tableagg

/**
 * How a table aggregation folds group values of type `GV` into a group's aggregate of type `A`,
 * with subtraction (a table row's old value leaves the aggregate when the row changes): Kafka's
 * `KGroupedTable#aggregate(initializer, adder, subtractor)`, `reduce(adder, subtractor)` and
 * `count()` are each one of these ([[TableAggregator$]]).
 *
 * Contract:
 *  - `add(group, agg, value)`: `agg` with `value` added; `agg` is null when the group has no
 *    aggregate (first value, or after the aggregate was deleted): `aggregate` starts from its
 *    initializer, `reduce` returns the value itself.
 *  - `subtract(group, agg, value)`: `agg` (never null) without `value`.
 *  - Either may return null: the group's aggregate is deleted and a tombstone is emitted (Kafka:
 *    a null aggregate is a delete). Count never does: an empty group's count is 0, not deleted.
 *  - Arguments are not modified and not kept; the result is a new value the caller owns (the
 *    previous aggregate is still emitted as the old value).
 * Not thread-safe; one per task.
 */
trait TableAggregator[G, GV, A] {
  def add(group: G, agg: A, value: GV): A
  def subtract(group: G, agg: A, value: GV): A
}

object TableAggregator {

  /** Kafka's `aggregate(initializer, adder, subtractor)`; the functions take (group, value, aggregate). */
  def aggregate[G, GV, A](initializer: () => A, adder: (G, GV, A) => A, subtractor: (G, GV, A) => A)
      : TableAggregator[G, GV, A] = new TableAggregator[G, GV, A] {
    override def add(group: G, agg: A, value: GV): A = adder(group, value, if (agg == null) initializer() else agg)
    override def subtract(group: G, agg: A, value: GV): A = subtractor(group, value, agg)
  }

  /**
   * Kafka's `reduce(adder, subtractor)`; the functions take (aggregate, value). A group's first
   * value is its aggregate (the adder is not called).
   */
  def reduce[G, V](adder: (V, V) => V, subtractor: (V, V) => V): TableAggregator[G, V, V] =
    new TableAggregator[G, V, V] {
      override def add(group: G, agg: V, value: V): V = if (agg == null) value else adder(agg, value)
      override def subtract(group: G, agg: V, value: V): V = subtractor(agg, value)
    }

  /** Kafka's `count()`: 0 + 1 per value added − 1 per value subtracted; 0 is kept, never deleted. */
  def count[G, GV]: TableAggregator[G, GV, java.lang.Long] =
    aggregate[G, GV, java.lang.Long](() => 0L, (_, _, a) => a + 1L, (_, _, a) => a - 1L)

  /**
   * kstate's `sum` of long values (Kafka has none on a grouped table): `aggregate` from 0 with
   * + and −, so an empty group's sum is 0, kept (as `reduce(+, −)` would give: the same values).
   */
  def sum[G]: TableAggregator[G, java.lang.Long, java.lang.Long] =
    aggregate[G, java.lang.Long, java.lang.Long](() => 0L, (_, v, a) => a + v, (_, v, a) => a - v)
}
