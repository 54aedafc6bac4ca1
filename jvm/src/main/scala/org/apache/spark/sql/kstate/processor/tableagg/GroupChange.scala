package org.apache.spark.sql.kstate.processor.tableagg

/**
 * What stage 1 of a table aggregation ([[TableRegroupProcessor]]) sends to the group's partition
 * (Kafka's `Change<V>` on the repartition topic, keyed by the group): subtract `oldValue` from the
 * group's aggregate, then add `newValue`; a null side is nothing to do. At least one side is
 * non-null. `timestamp` is the table change's.
 */
final case class GroupChange[G, GV](group: G, newValue: GV, oldValue: GV, timestamp: Long) {
  require(newValue != null || oldValue != null, "a group change subtracts or adds something")
}
