package org.apache.spark.sql.kstate.processor.suppress

import org.apache.spark.sql.kstate.processor.{Metric, MetricSet}

/** What a [[SuppressProcessor]] counts; all are the operator's custom metrics. */
object SuppressMetrics extends MetricSet {
  val Emitted: Metric = sum("resultsEmitted", "rows emitted (time limit reached, or early)")
  val SuppressedUpdates: Metric =
    sum("updatesSuppressed", "buffered rows replaced by a later update of their key (never emitted)")
  val EarlyEvictions: Metric =
    sum("earlyEvictions", "rows emitted early because the buffer was full (emit_early_when_full)")
  val NullKeys: Metric = sum("nullKeysDropped", "records dropped: null key")
  val NullTimestamps: Metric = sum("nullTimestampsDropped", "records dropped: null timestamp or window end")
  val BufferRecords: Metric = sum("bufferRecords", "rows in the buffer at the end of the micro-batch")
  val BufferBytes: Metric =
    sum("bufferBytes", "bytes in the buffer at the end of the micro-batch (keys, rows, timestamps)")
  val LateDropped: Metric = sum("lateRecordsDropped", "updates dropped: their window had closed (until_window_closes)")
  val BufferRecordsMax: Metric = max(
    "bufferRecordsMax",
    "most rows in a partition's buffer during the micro-batch (the largest over partitions)"
  )
  val BufferBytesMax: Metric = max(
    "bufferBytesMax",
    "most bytes in a partition's buffer during the micro-batch (the largest over partitions)"
  )
}
