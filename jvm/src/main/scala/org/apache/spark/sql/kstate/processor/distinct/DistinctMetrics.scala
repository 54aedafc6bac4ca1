package org.apache.spark.sql.kstate.processor.distinct

import org.apache.spark.sql.kstate.processor.{Metric, MetricSet}

/** What the windowed distinct processors count; the reported ones are the operator's custom metrics. */
object DistinctMetrics extends MetricSet {
  val Emitted: Metric = sum("recordsEmitted", "records emitted (first of their window)")
  val DuplicatesDropped: Metric = sum("duplicatesDropped", "records dropped: window already seen")
  val LateDropped: Metric = sum("lateRecordsDropped", "records dropped: window closed (end + grace <= stream time)")
  val NullKeysDropped: Metric = sum("nullKeysDropped", "records dropped: null key")
  val NullTimestampsDropped: Metric = sum("nullTimestampsDropped", "records dropped: null timestamp")
  val StoredWindows: Metric = sum("storedWindows", "windows (tumbling) or sessions kept in state")
  val WindowsStored: Metric = tally("windowsStored")
  val WindowsPurged: Metric = tally("windowsPurged")
}
