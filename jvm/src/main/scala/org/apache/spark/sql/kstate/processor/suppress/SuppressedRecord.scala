package org.apache.spark.sql.kstate.processor.suppress

/** A record leaving an [[InMemorySuppressBuffer]]: its key and latest value, when its key was
 * first buffered, and the timestamp of that latest value. */
final case class SuppressedRecord[K, V](key: K, value: V, bufferTime: Long, recordTime: Long)
