package org.apache.spark.sql.kstate.processor.window

import org.apache.spark.sql.kstate.processor.Metric

/** What a [[TimeWindowAggregateProcessor]] counts, after the metrics all windowed aggregations share. */
object TimeWindowAggregateMetrics extends AggregateMetricSet {
  val Updates: Metric = sum("windowUpdates", "window updates (a record updates each open window it falls in)")
  val LateDropped: Metric = sum(
    "lateRecordsDropped",
    "records dropped for a window that had closed (end + grace <= stream time), per window"
  )
  val Emitted: Metric = sum("resultsEmitted", "rows emitted (updates, or final results when suppressed)")
  val Closed: Metric = sum("windowsClosed", "windows closed and removed from state")
  val BufferRecords: Metric = sum("bufferRecords", "open windows kept in state")
  val BufferBytes: Metric = sum("bufferBytes", "bytes of the open windows kept in state (keys and values)")
  val LateDroppedTotal: Metric =
    sum("lateRecordsDroppedTotal", "late records dropped since the query started (kept with the state)")
}
