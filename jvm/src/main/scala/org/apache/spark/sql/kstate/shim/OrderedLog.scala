package org.apache.spark.sql.kstate.shim

import scala.util.Try

import org.apache.spark.sql.catalyst.plans.logical.{EventTimeWatermark, Filter, LogicalPlan, Project, Union}
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
import org.apache.spark.sql.execution.datasources.v2.{MicroBatchScanExec, StreamingDataSourceV2ScanRelation}
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

  /**
   * What [[apply]] will answer for the physical plan of the micro-batch's optimized logical plan
   * `plan`, told before it is planned: the same walk over the logical operators that become the
   * physical ones [[apply]] passes through, with a Kafka micro-batch relation counted as an
   * ordered log when none of its options splits a topic-partition's range (`minPartitions`,
   * `maxRecordsPerPartition`; without them the connector plans one Spark partition per
   * topic-partition). Used where a planning decision must agree with the order an operator will
   * resolve (`planning.TableJoinSources`).
   */
  def plannedFrom(plan: LogicalPlan): Boolean = plan match {
    case r: StreamingDataSourceV2ScanRelation =>
      r.stream.getClass.getName == KafkaStreamClass &&
      !SplitOptions.exists(o => r.relation.options.containsKey(o))
    case _: Project | _: Filter | _: EventTimeWatermark | _: Union =>
      plan.children.nonEmpty && plan.children.forall(plannedFrom)
    case _ => false
  }

  private val SplitOptions = Seq("minPartitions", "maxRecordsPerPartition")

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
