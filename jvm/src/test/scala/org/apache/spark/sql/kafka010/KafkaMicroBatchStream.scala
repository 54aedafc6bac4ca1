package org.apache.spark.sql.kafka010

import org.apache.spark.sql.connector.read.{InputPartition, PartitionReaderFactory}
import org.apache.spark.sql.connector.read.streaming.{MicroBatchStream, Offset}

/**
 * A stand-in for the Kafka connector's micro-batch stream, under its class name, for
 * `OrderedLogSuite` (the connector is not on the test classpath). It only plans the partitions
 * it is given: each names its topic-partition as the connector's `offsetRange.topicPartition`.
 */
class KafkaMicroBatchStream(partitions: Seq[FakeKafkaPartition]) extends PlannedStream(partitions)

/** A micro-batch stream that plans the given partitions and does nothing else. */
class PlannedStream(partitions: Seq[InputPartition]) extends MicroBatchStream {
  override def latestOffset(): Offset = null
  override def planInputPartitions(start: Offset, end: Offset): Array[InputPartition] = partitions.toArray
  override def createReaderFactory(): PartitionReaderFactory = throw new UnsupportedOperationException
  override def initialOffset(): Offset = null
  override def deserializeOffset(json: String): Offset = null
  override def commit(end: Offset): Unit = ()
  override def stop(): Unit = ()
}

final case class FakeOffsetRange(topicPartition: (String, Int), from: Long, until: Long)
final case class FakeKafkaPartition(offsetRange: FakeOffsetRange) extends InputPartition
