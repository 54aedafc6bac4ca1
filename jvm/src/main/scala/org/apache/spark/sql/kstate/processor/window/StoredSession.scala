package org.apache.spark.sql.kstate.processor.window

/**
 * One stored span of a key: `[start, end]` (both inclusive, Kafka's session and sliding window
 * bounds), its aggregate and its largest record timestamp. Session aggregations store a key's
 * sessions as these; sliding aggregations store a key's windows and, with `start = end = ts`
 * kept until `end`, its records' own aggregates.
 */
final case class StoredSession[A](start: Long, end: Long, maxTs: Long, agg: A)
