package org.apache.spark.sql.kstate.processor.window

/**
 * Where a session or sliding aggregation processor sends its results; the exec turns them into
 * rows. Arguments are valid only during the call (copy what is kept).
 */
trait SpanOutput[K, A] {

  /** The window `[start, end]` of `key` has aggregate `agg`; `maxTs` is its largest record timestamp. */
  def result(key: K, start: Long, end: Long, agg: A, maxTs: Long): Unit

  /** The session `[start, end]` of `key`, emitted before, no longer exists (merged away). */
  def tombstone(key: K, start: Long, end: Long, maxTs: Long): Unit
}
