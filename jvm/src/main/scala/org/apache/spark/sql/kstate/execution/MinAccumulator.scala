package org.apache.spark.sql.kstate.execution

import org.apache.spark.util.AccumulatorV2

/**
 * The smallest long added or merged over a job's tasks (`Long.MaxValue` when none was): a kstate
 * operator's output time floor, the minimum over its state partitions.
 */
final class MinAccumulator extends AccumulatorV2[Long, Long] {
  private var min = Long.MaxValue
  override def isZero: Boolean = min == Long.MaxValue
  override def copy(): MinAccumulator = { val a = new MinAccumulator; a.min = min; a }
  override def reset(): Unit = min = Long.MaxValue
  override def add(v: Long): Unit = if (v < min) min = v
  override def merge(other: AccumulatorV2[Long, Long]): Unit = add(other.value)
  override def value: Long = min
}
