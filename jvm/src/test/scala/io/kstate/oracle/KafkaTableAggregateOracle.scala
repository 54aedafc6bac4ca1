package io.kstate.oracle

import java.time.{Duration, Instant}

import scala.collection.mutable.ArrayBuffer

import org.apache.kafka.common.serialization.{LongSerializer, Serdes, StringSerializer}
import org.apache.kafka.streams.{KeyValue, StreamsBuilder}
import org.apache.kafka.streams.kstream.{
  Aggregator,
  Consumed,
  Grouped,
  Initializer,
  KTable,
  KeyValueMapper,
  Materialized,
  Reducer
}
import org.apache.kafka.streams.processor.api.{Processor, Record}
import org.apache.kafka.common.utils.Bytes
import org.apache.kafka.streams.state.{KeyValueStore, Stores}

/**
 * Kafka Streams 4.3 on a table aggregation: `builder.table(in)` (versioned with a history
 * retention, Kafka's grace, or not) `.groupBy((k, v) -> KeyValue(group(v), groupValue(v)))`
 * then `count()`, `reduce` or `aggregate` ([[TableAggCase]]), `.toStream()`; caches off, the
 * micro-batches' records piped in order; what reaches the end of the topology is collected per
 * micro-batch (key, value or tombstone, timestamp).
 */
object KafkaTableAggregateOracle {
  private val In = "table-in"

  /** One emitted record of the aggregate's changelog stream; None is a tombstone. */
  final case class AggOut(key: String, value: Option[Long], ts: Long) {
    override def toString: String = s"$key=${value.fold("null")(_.toString)}@$ts"
  }

  /** `historyRetentionMs` None: an unversioned source table. */
  def run(c: TableAggCase, historyRetentionMs: Option[Long], batches: Seq[Seq[Ev]]): Seq[Seq[AggOut]] = {
    val out = ArrayBuffer.empty[AggOut]
    val builder = new StreamsBuilder()
    val consumed = Consumed.`with`(Serdes.String(), Serdes.Long())
    val table: KTable[String, java.lang.Long] = historyRetentionMs match {
      case Some(r) => builder.table(
          In,
          consumed,
          Materialized.as[String, java.lang.Long](Stores.persistentVersionedKeyValueStore(
            "source",
            Duration.ofMillis(r)
          ))
        )
      case None => builder.table(In, consumed)
    }
    val mapper: KeyValueMapper[String, java.lang.Long, KeyValue[String, java.lang.Long]] =
      (_: String, v: java.lang.Long) => KeyValue.pair(TableAggCase.group(v), TableAggCase.groupValue(v))
    val grouped = table.groupBy(mapper, Grouped.`with`(Serdes.String(), Serdes.Long()))
    val result: KTable[String, java.lang.Long] = c match {
      case TableAggCase.Count => grouped.count()
      case TableAggCase.Sum | TableAggCase.DeletingReduce =>
        val adder: Reducer[java.lang.Long] = (a: java.lang.Long, v: java.lang.Long) => c.reduceAdd(a, v)
        val subtractor: Reducer[java.lang.Long] = (a: java.lang.Long, v: java.lang.Long) => c.reduceSubtract(a, v)
        grouped.reduce(adder, subtractor)
      case TableAggCase.Chain =>
        val init: Initializer[java.lang.Long] = () => TableAggCase.chainInit
        val adder: Aggregator[String, java.lang.Long, java.lang.Long] =
          (g: String, v: java.lang.Long, a: java.lang.Long) => TableAggCase.chainAdd(g, v, a)
        val subtractor: Aggregator[String, java.lang.Long, java.lang.Long] =
          (g: String, v: java.lang.Long, a: java.lang.Long) => TableAggCase.chainSubtract(g, v, a)
        grouped.aggregate(
          init,
          adder,
          subtractor,
          Materialized.`with`[String, java.lang.Long, KeyValueStore[Bytes, Array[Byte]]](Serdes.String(), Serdes.Long())
        )
    }
    result.toStream().process(() =>
      new Processor[String, java.lang.Long, Void, Void] {
        override def process(r: Record[String, java.lang.Long]): Unit =
          out += AggOut(r.key(), Option(r.value()).map(_.longValue), r.timestamp())
      }
    )
    OracleDriver.using(builder.build()) { driver =>
      val input = driver.createInputTopic(In, new StringSerializer, new LongSerializer)
      batches.map { batch =>
        out.clear()
        batch.foreach(e =>
          input.pipeInput(e.key, e.value.map(java.lang.Long.valueOf).orNull, Instant.ofEpochMilli(e.ts))
        )
        out.toList
      }
    }
  }
}

/** The aggregations compared with Kafka, and the grouping both engines use. */
sealed trait TableAggCase {
  def reduceAdd(a: java.lang.Long, v: java.lang.Long): java.lang.Long = a + v
  def reduceSubtract(a: java.lang.Long, v: java.lang.Long): java.lang.Long = a - v
}

object TableAggCase {

  /** `count()`: a group's count reaches 0 and stays (never deleted). */
  case object Count extends TableAggCase

  /** Kafka: `reduce(+, −)`; kstate: its `sum` (an aggregate from 0): the same values. */
  case object Sum extends TableAggCase

  /** `reduce(+, (a, v) -> a − v == 0 ? null : a − v)`: a subtract can delete the group. */
  case object DeletingReduce extends TableAggCase {
    override def reduceSubtract(a: java.lang.Long, v: java.lang.Long): java.lang.Long = {
      val r = a - v
      if (r == 0L) null else r
    }
  }

  /** `aggregate(1, a*3 + v, (a − v) % 4 == 0 ? null : a − v)`: order-sensitive, can delete. */
  case object Chain extends TableAggCase

  val all: Seq[TableAggCase] = Seq(Count, Sum, DeletingReduce, Chain)

  /** The group of a table value: null (no group) for v % 5 == 4, else "g" + v % 3. */
  def group(v: java.lang.Long): String = if (v % 5 == 4) null else "g" + (v % 3)

  /** The value a table value contributes: null (nothing) for 8, else the value. */
  def groupValue(v: java.lang.Long): java.lang.Long = if (v == 8L) null else v

  val chainInit: java.lang.Long = 1L
  def chainAdd(g: String, v: java.lang.Long, a: java.lang.Long): java.lang.Long = a * 3 + v + g.length
  def chainSubtract(g: String, v: java.lang.Long, a: java.lang.Long): java.lang.Long = {
    val r = a - v
    if (r % 4 == 0) null else r
  }
}
