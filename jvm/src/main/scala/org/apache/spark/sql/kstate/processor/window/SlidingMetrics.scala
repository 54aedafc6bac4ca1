package org.apache.spark.sql.kstate.processor.window

import org.apache.spark.sql.kstate.processor.Metric

/** What a [[SlidingAggregateProcessor]] counts; the reported ones are the operator's custom metrics. */
object SlidingMetrics extends AggregateMetricSet("records dropped: null or negative timestamp") with SpanMetrics {
  val Updates: Metric = sum(
    "windowUpdates",
    "window updates: the micro-batch's records counted into windows, once per window each (joined, or merged when the window was created)"
  )
  val Created: Metric = sum(
    "windowsCreated",
    "windows created (a record's left and right windows, its predecessor's right window)"
  )
  val LateDropped: Metric =
    sum("lateRecordsDropped", "records dropped as late: ts + time difference < stream time - grace")
  val Emitted: Metric = sum("resultsEmitted", "rows emitted (updates, or final results when suppressed)")
  val Closed: Metric = sum("windowsClosed", "windows closed and removed from state")
  val BufferRecords: Metric = sum("bufferRecords", "windows and records kept in state")
  val BufferBytes: Metric = sum("bufferBytes", "bytes of the windows and records kept in state (keys and buffers)")
  val LateDroppedTotal: Metric = sum(
    "lateRecordsDroppedTotal",
    "late records dropped since the query started (kept with the state)"
  )
}
