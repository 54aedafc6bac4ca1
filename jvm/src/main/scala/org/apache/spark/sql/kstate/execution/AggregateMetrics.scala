package org.apache.spark.sql.kstate.execution

/**
 * Custom metrics the windowed aggregations share (time and session windows): records seen and
 * dropped for a null key or timestamp, and Kafka's record lateness (stream time - record
 * timestamp when positive: its total, the largest, and the average over records).
 */
private[execution] object AggregateMetrics {
  val Records: (String, String) = "recordsAggregated" -> "records with a timestamp and a key"
  val NullKeys: (String, String) = "nullKeysDropped" -> "records dropped: null key"
  val NullTimestamps: (String, String) = "nullTimestampsDropped" -> "records dropped: null timestamp"
  val LatenessTotal: (String, String) =
    "recordLatenessTotalMs" -> "sum over records of stream time - record timestamp, when positive"
  val LatenessMax: (String, String) =
    "recordLatenessMaxMs" -> "largest stream time - record timestamp of a record"

  /**
   * Records Kafka's lateness of a record at `ts` (stream time before it, `Long.MinValue` when
   * none) into `counters` at `total` and `max`.
   */
  def recordLateness(counters: Array[Long], total: Int, max: Int, streamTime: Long, ts: Long): Unit =
    if (streamTime != Long.MinValue && ts < streamTime) {
      val lateness = streamTime - ts
      counters(total) += lateness
      if (lateness > counters(max)) counters(max) = lateness
    }

  /** For [[KStateStatefulExec.maxMetrics]]. */
  val Maxima: Set[String] = Set(LatenessMax._1)
  /** For [[KStateStatefulExec.averageMetrics]]: `recordLatenessAvgMs` = total / records. */
  val Averages: Seq[(String, String, String)] = Seq(("recordLatenessAvgMs", LatenessTotal._1, Records._1))
}
