package org.apache.spark.sql.kstate.processor.tableagg

/**
 * One record of a table's changelog as a micro-batch delivers it: `value` null is a tombstone;
 * `keyIsNull` / `timestampIsNull` flag a null key / timestamp (`key` / `timestamp` are then
 * ignored). Keys and values are not reused by the caller.
 */
final case class TableUpdate[K, V](
    key: K,
    value: V,
    timestamp: Long,
    keyIsNull: Boolean = false,
    timestampIsNull: Boolean = false
)
