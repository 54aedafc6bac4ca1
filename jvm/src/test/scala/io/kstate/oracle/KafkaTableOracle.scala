package io.kstate.oracle

import java.time.{Duration, Instant}

import scala.collection.mutable.ArrayBuffer

import org.apache.kafka.common.serialization.{LongSerializer, Serdes, StringSerializer}
import org.apache.kafka.common.utils.Bytes
import org.apache.kafka.streams.StreamsBuilder
import org.apache.kafka.streams.kstream.{Consumed, KTable, Materialized, Predicate, ValueMapperWithKey}
import org.apache.kafka.streams.processor.api.{Processor, Record}
import org.apache.kafka.streams.state.{KeyValueStore, Stores}

import org.apache.spark.sql.kstate.processor.table.TablePipeline
import org.apache.spark.sql.kstate.processor.table.TablePipeline._

/**
 * Kafka Streams 4.3 itself on a [[TablePipeline.Pipeline]]:
 * `builder.table(in, <no store | Materialized unversioned | Materialized versioned>)`, then the
 * filter / filterNot / mapValues steps (unmaterialized), then `toStream()`; run in a
 * `TopologyTestDriver` with caches off, collecting every record reaching the end as (key, value,
 * timestamp). Kafka's versioned store has one setting for grace and history retention: the
 * pipeline's retention (its grace must equal it).
 */
object KafkaTableOracle {
  private val In = "in"

  /** One forwarded record: key, value (None = tombstone), timestamp. */
  final case class Out(key: String, value: Option[Long], ts: Long) {
    override def toString: String = s"$key:${value.fold("null")(_.toString)}@$ts"
  }

  def run(p: Pipeline, recs: Seq[Rec]): Seq[Out] = {
    val builder = new StreamsBuilder()
    val consumed = Consumed.`with`(Serdes.String(), Serdes.Long())
    val source: KTable[String, V] = p.source match {
      case Unmaterialized => builder.table(In, consumed)
      case Unversioned =>
        builder.table(In, consumed, Materialized.as[String, V](Stores.inMemoryKeyValueStore("src"))
          .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
      case Versioned(retention, grace) =>
        require(grace == retention, s"Kafka's grace is its history retention: $grace != $retention")
        builder.table(In, consumed, Materialized.as[String, V](
          Stores.persistentVersionedKeyValueStore("src", Duration.ofMillis(retention)))
          .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
    }
    val pred = new Predicate[String, V] { override def test(k: String, v: V): Boolean = TablePipeline.predicate(k, v) }
    val map = new ValueMapperWithKey[String, V, V] { override def apply(k: String, v: V): V = TablePipeline.mapper(k, v) }
    val table = p.steps.foldLeft(source) {
      case (t, Filter) => t.filter(pred)
      case (t, FilterNot) => t.filterNot(pred)
      case (t, MapValues) => t.mapValues[V](map)
    }
    val out = ArrayBuffer.empty[Out]
    table.toStream().process(() => new Processor[String, V, Void, Void] {
      override def process(r: Record[String, V]): Unit = out += Out(r.key(), Option(r.value()).map(_.longValue), r.timestamp())
    })
    OracleDriver.using(builder.build()) { driver =>
      val input = driver.createInputTopic(In, new StringSerializer, new LongSerializer)
      recs.foreach { r =>
        input.pipeInput(r.key.orNull, r.value.map(java.lang.Long.valueOf).orNull, Instant.ofEpochMilli(r.ts.get))
      }
    }
    out.toList
  }
}
