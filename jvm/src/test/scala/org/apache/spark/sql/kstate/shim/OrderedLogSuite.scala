package org.apache.spark.sql.kstate.shim

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.catalyst.expressions.{AttributeReference, IsNotNull}
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.connector.read.Scan
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream
import org.apache.spark.sql.execution.{FilterExec, ProjectExec, SparkPlan, UnionExec}
import org.apache.spark.sql.execution.datasources.v2.MicroBatchScanExec
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec
import org.apache.spark.sql.kafka010.{FakeKafkaPartition, FakeOffsetRange, KafkaMicroBatchStream, PlannedStream}
import org.apache.spark.sql.types.{LongType, StructType}

/** When `auto` processing order treats a streaming input as an ordered log (Kafka task order). */
class OrderedLogSuite extends AnyFunSuite {
  private val ts = AttributeReference("ts", LongType)()
  private val scan: Scan = new Scan { override def readSchema(): StructType = new StructType() }

  private def scanOf(stream: MicroBatchStream): SparkPlan =
    MicroBatchScanExec(Seq(ts), scan, stream, null, null, None, None)

  private def kafka(topicPartitions: (String, Int)*): SparkPlan =
    scanOf(new KafkaMicroBatchStream(topicPartitions.zipWithIndex.map { case (tp, i) =>
      FakeKafkaPartition(FakeOffsetRange(tp, i * 100L, i * 100L + 100))
    }))

  test("a Kafka scan with one Spark partition per topic-partition is an ordered log") {
    assert(OrderedLog(kafka("t" -> 0, "t" -> 1, "u" -> 0)))
  }

  test("a topic-partition split across Spark partitions (minPartitions) is not") {
    assert(!OrderedLog(kafka("t" -> 0, "t" -> 0, "t" -> 1)))
  }

  test("projections, filters and unions of ordered logs keep it; a shuffle does not") {
    val k = kafka("t" -> 0)
    assert(OrderedLog(ProjectExec(Seq(ts), FilterExec(IsNotNull(ts), k))))
    assert(OrderedLog(UnionExec(Seq(k, kafka("u" -> 0)))))
    assert(!OrderedLog(ShuffleExchangeExec(HashPartitioning(Seq(ts), 2), k)))
  }

  test("another source, or a union with one, is not an ordered log") {
    val other = scanOf(new PlannedStream(Nil))
    assert(!OrderedLog(other))
    assert(!OrderedLog(UnionExec(Seq(kafka("t" -> 0), other))))
    assert(!OrderedLog(ProjectExec(Seq(ts), org.apache.spark.sql.execution.LocalTableScanExec(Seq(ts), Nil, None))))
  }
}
