package org.apache.spark.sql.kstate.processor.window

import org.apache.spark.sql.kstate.processor.{AverageMetric, Counters, Metric, MetricSet, StreamTime}

/**
 * The metrics every windowed aggregation declares first (time, session and sliding windows):
 * records seen and dropped for a null key or timestamp, and Kafka's record lateness (stream time
 * − record timestamp when positive: its total, its largest, and the average over records).
 * Each aggregation's own metric set extends this and declares its metrics after these;
 * `nullTimestampsDescription` is the description of `nullTimestampsDropped` (sliding windows also
 * drop negative timestamps there).
 */
abstract class AggregateMetricSet(nullTimestampsDescription: String = "records dropped: null timestamp")
    extends MetricSet {
  val Records: Metric = sum("recordsAggregated", "records with a timestamp and a key")
  val NullKeys: Metric = sum("nullKeysDropped", "records dropped: null key")
  val NullTimestamps: Metric = sum("nullTimestampsDropped", nullTimestampsDescription)
  val LatenessTotal: Metric =
    sum("recordLatenessTotalMs", "sum over records of stream time - record timestamp, when positive")
  val LatenessMax: Metric = max("recordLatenessMaxMs", "largest stream time - record timestamp of a record")
  val LatenessAvg: AverageMetric = average(
    "recordLatenessAvgMs",
    "average over records of stream time - record timestamp, when positive",
    LatenessTotal,
    Records
  )

  /** Counts one record with a key and a timestamp, and its lateness, before it advances `streamTime`. */
  final def recordSeen(c: Counters, streamTime: StreamTime, ts: Long): Unit = {
    val lateness = streamTime.latenessOf(ts)
    if (lateness > 0) {
      // the total saturates at Long.MaxValue rather than wrapping
      if (c(LatenessTotal) > Long.MaxValue - lateness) c.set(LatenessTotal, Long.MaxValue)
      else c.add(LatenessTotal, lateness)
      c.raise(LatenessMax, lateness)
    }
    c.add(Records)
  }
}
