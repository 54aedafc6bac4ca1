package org.apache.spark.sql.kstate.processor.window

/**
 * One time window of one key as a [[TimeWindowAggregateProcessor]] holds it during a batch: its
 * aggregate, the largest timestamp aggregated into it, its end, and `storedSize`, the state's
 * token for the stored value it replaces (its size in bytes; -1: not stored yet). The
 * [[TimeWindowState]] reads into it and sets `storedSize` when it writes it.
 */
final class WindowValue[A](var agg: A, var maxTs: Long, val end: Long, var storedSize: Int) {
  def isStored: Boolean = storedSize >= 0
}
