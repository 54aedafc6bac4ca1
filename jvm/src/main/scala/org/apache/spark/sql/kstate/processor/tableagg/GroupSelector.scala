package org.apache.spark.sql.kstate.processor.tableagg

/**
 * Kafka's `KTable#groupBy` key-value mapper: the group a table row belongs to and the value it
 * contributes there.
 *
 * Contract:
 *  - `select(key, value)` is called with a non-null `value` (a tombstone belongs to no group) and
 *    returns the row's [[GroupedValue]], or null when the row contributes to no group. A returned
 *    `GroupedValue` whose group or value is null contributes to no group either (Kafka skips a
 *    `KeyValue` with a null key or value).
 *  - It is deterministic: the same row always selects the same group and value (the old value of
 *    a change is selected again when it is subtracted).
 *  - `sameGroup(a, b)` tells whether two selected (non-null) groups are one group: Kafka's
 *    `equals`, given explicitly so that group keys without a useful `equals` (byte arrays) work.
 * Arguments are not modified and not kept; the returned group and value are owned by the caller.
 */
trait GroupSelector[K, V, G, GV] {
  def select(key: K, value: V): GroupedValue[G, GV]
  def sameGroup(a: G, b: G): Boolean
}

/** A table row's group and the value it contributes to that group's aggregate. */
final case class GroupedValue[G, GV](group: G, value: GV) {

  /** Whether the row contributes to a group (Kafka: neither the key nor the value is null). */
  def contributes: Boolean = group != null && value != null
}
