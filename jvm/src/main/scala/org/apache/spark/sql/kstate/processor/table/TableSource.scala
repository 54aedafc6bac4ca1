package org.apache.spark.sql.kstate.processor.table

/**
 * Kafka's `KTableSource` on a materialized table, for one state partition: applies one update
 * of the table's changelog to its [[TableState]] and returns the [[TableChange]] to pass on, or
 * null when the update is dropped because a versioned table did not store it (`NotPut`: older
 * than stream time − grace).
 *
 * `oldValue` is the state's latest value read before the put; `isLatest` is the put's result
 * (always true on an unversioned table). Null keys and null timestamps never reach it (the
 * caller drops and counts them). Not thread-safe; one per task.
 */
final class TableSource[K, V](val state: TableState[K, V]) {
  def update(key: K, value: V, ts: Long): TableChange[K, V] = {
    val old = state.get(key)
    val validTo = state.put(key, value, ts)
    if (validTo == TableState.NotPut) null
    else TableChange(
      key,
      value,
      if (old == null) null.asInstanceOf[V] else old.value,
      ts,
      isLatest = validTo == TableState.Latest
    )
  }
}
