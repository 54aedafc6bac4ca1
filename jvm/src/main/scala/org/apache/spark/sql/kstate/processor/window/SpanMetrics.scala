package org.apache.spark.sql.kstate.processor.window

import org.apache.spark.sql.kstate.processor.Metric

/**
 * The metrics a [[SpanAggregateProcessor]]'s exec reads besides the reported map: state rows
 * updated and removed, and the late records it adds to the running total kept with the state.
 */
trait SpanMetrics { this: AggregateMetricSet =>
  def Updates: Metric
  def Closed: Metric
  def LateDropped: Metric
  def LateDroppedTotal: Metric
}
