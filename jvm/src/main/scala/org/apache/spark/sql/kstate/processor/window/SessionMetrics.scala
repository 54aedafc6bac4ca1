package org.apache.spark.sql.kstate.processor.window

import org.apache.spark.sql.kstate.processor.Metric

/** What a [[SessionAggregateProcessor]] counts; the reported ones are the operator's custom metrics. */
object SessionMetrics extends AggregateMetricSet with SpanMetrics {
  val Updates: Metric = sum("sessionUpdates", "records aggregated into a session")
  val Merged: Metric = sum("sessionsMerged", "sessions merged into another by a record bridging them")
  val LateDropped: Metric = sum(
    "lateRecordsDropped",
    "records dropped as late: no open session within the gap, and ts < stream time - grace - gap"
  )
  val Emitted: Metric = sum("resultsEmitted", "rows emitted (updates and tombstones, or final results when suppressed)")
  val Closed: Metric = sum("windowsClosed", "sessions closed and removed from state")
  val BufferRecords: Metric = sum("bufferRecords", "open sessions kept in state")
  val BufferBytes: Metric = sum("bufferBytes", "bytes of the open sessions kept in state (keys and buffers)")
  val LateDroppedTotal: Metric = sum(
    "lateRecordsDroppedTotal",
    "late records dropped since the query started (kept with the state)"
  )
}
