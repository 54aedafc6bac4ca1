package org.apache.spark.sql.kstate.execution

import org.apache.spark.SparkContext
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.util.AccumulatorV2

/**
 * A SQL metric holding the largest value added or merged, not the sum: Kafka's `*-max` sensors
 * (record lateness). Typed as a timing so the Spark UI lists its max over tasks.
 */
final class MaxMetric extends SQLMetric("timing", 0L) {
  override def copy(): MaxMetric = {
    val m = new MaxMetric
    m.set(value)
    m
  }
  override def add(v: Long): Unit = if (v > value) set(v)
  override def merge(other: AccumulatorV2[Long, Long]): Unit = other match {
    case m: SQLMetric => if (m.value > value) set(m.value)
    case _ =>
      throw new UnsupportedOperationException(s"cannot merge ${getClass.getName} with ${other.getClass.getName}")
  }
}

object MaxMetric {
  def apply(sc: SparkContext, name: String): MaxMetric = {
    val m = new MaxMetric
    m.register(sc, name = Some(name), countFailedValues = false)
    m
  }
}
