package org.apache.spark.sql.kstate.execution

import org.apache.spark.sql.catalyst.plans.physical.{Partitioning, UnknownPartitioning}
import org.apache.spark.sql.execution.UnaryExecNode
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.kstate.processor.Metric

/**
 * A stateless narrow map over a table's change rows whose output a shuffle sends to another key:
 * stage 1 of a table aggregation (by group), the subscriptions of a foreign-key join (by foreign
 * key). Its counts are SQL metrics (it is no stateful operator, so none reach the progress), and
 * its output has no known partitioning: the rows leave the table's partitions at the next
 * exchange.
 */
trait RekeyingMapExec extends UnaryExecNode {

  /** The counts reported as SQL metrics, in the order of [[sqlMetrics]]. */
  protected def reported: Seq[Metric]

  override lazy val metrics: Map[String, SQLMetric] =
    reported.map(m => m.name -> SQLMetrics.createMetric(sparkContext, m.description)).toMap

  override def outputPartitioning: Partitioning = UnknownPartitioning(child.outputPartitioning.numPartitions)

  /** The SQL metrics of [[reported]], in its order; call on the driver (in `doExecute`). */
  protected def sqlMetrics: Seq[SQLMetric] = reported.map(m => longMetric(m.name))
}
