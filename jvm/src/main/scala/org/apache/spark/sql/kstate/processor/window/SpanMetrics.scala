package org.apache.spark.sql.kstate.processor.window

import org.apache.spark.sql.kstate.processor.Metric

/**
 * The metrics every [[SpanAggregateProcessor]] counts under its own names and descriptions:
 * those it counts in common code, the state rows updated and removed its exec reports, and the
 * late records its exec adds to the running total kept with the state.
 */
trait SpanMetrics { this: AggregateMetricSet =>
  def Updates: Metric
  def Closed: Metric
  def LateDropped: Metric
  def LateDroppedTotal: Metric
  def Emitted: Metric
  def BufferRecords: Metric
  def BufferBytes: Metric
}
