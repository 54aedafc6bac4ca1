package org.apache.spark.sql.kstate.shim

import scala.util.Try

import org.apache.spark.sql.connector.read.InputPartition
import org.apache.spark.sql.execution.{
  ColumnarToRowExec,
  FilterExec,
  InputAdapter,
  ProjectExec,
  SparkPlan,
  UnionExec,
  WholeStageCodegenExec
}
import org.apache.spark.sql.execution.datasources.v2.MicroBatchScanExec
import org.apache.spark.sql.execution.streaming.operators.stateful.EventTimeWatermarkExec

/**
 * Whether a physical plan reads an ordered log: every row a task of `plan` produces comes from
 * one Kafka topic-partition, in offset order. Then a row's input position (partition, offset)
 * is its place in the log, and kstate can process records in a Kafka task's order.
 *
 * True when every leaf is Spark's Kafka micro-batch scan with at most one Spark partition per
 * topic-partition (options such as `minPartitions` split a topic-partition's range across
 * Spark partitions, which a Kafka task never does), reached only through operators that keep
 * each partition's rows in order (projections, filters, watermarks, unions, codegen stages).
 * Anything else, or anything that cannot be inspected, is not an ordered log (the safe
 * answer: kstate then orders by event time). Depends on the Kafka connector's class names, so
 * it lives in the shim layer.
 */
object OrderedLog {
  def apply(plan: SparkPlan): Boolean = plan match {
    case s: MicroBatchScanExec => isKafkaWithDistinctTopicPartitions(s)
    case _: ProjectExec | _: FilterExec | _: EventTimeWatermarkExec | _: UnionExec |
        _: WholeStageCodegenExec | _: InputAdapter | _: ColumnarToRowExec =>
      plan.children.nonEmpty && plan.children.forall(apply)
    case _ => false
  }

  private val KafkaStreamClass = "org.apache.spark.sql.kafka010.KafkaMicroBatchStream"

  private def isKafkaWithDistinctTopicPartitions(scan: MicroBatchScanExec): Boolean =
    scan.stream.getClass.getName == KafkaStreamClass && Try {
      val topicPartitions = scan.inputPartitions.map(topicPartitionOf)
      topicPartitions.distinct.size == topicPartitions.size
    }.getOrElse(false)

  /** The Kafka connector's `KafkaBatchInputPartition.offsetRange.topicPartition`. */
  private def topicPartitionOf(p: InputPartition): AnyRef = {
    val range = p.getClass.getMethod("offsetRange").invoke(p)
    range.getClass.getMethod("topicPartition").invoke(range)
  }
}
