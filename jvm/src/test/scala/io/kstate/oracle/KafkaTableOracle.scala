package io.kstate.oracle

import java.time.{Duration, Instant}

import scala.collection.mutable.ArrayBuffer

import org.apache.kafka.common.serialization.{LongSerializer, Serdes, StringSerializer}
import org.apache.kafka.streams.StreamsBuilder
import org.apache.kafka.streams.kstream.{
  Consumed,
  KTable,
  Materialized,
  Predicate,
  ValueMapperWithKey,
  ValueTransformerWithKey,
  ValueTransformerWithKeySupplier
}
import org.apache.kafka.streams.kstream.internals.KTableImpl
import org.apache.kafka.streams.processor.ProcessorContext
import org.apache.kafka.streams.processor.api.{Processor, Record}
import org.apache.kafka.streams.state.Stores

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

  /** One forwarded change with its old value (Kafka's `Change<V>` without `isLatest`). */
  final case class OutWithOld(key: String, value: Option[Long], old: Option[Long], ts: Long) {
    override def toString: String = s"$key:${value.fold("null")(_.toString)}/${old.fold("null")(_.toString)}@$ts"
  }

  def run(p: Pipeline, recs: Seq[Rec]): Seq[Out] =
    build(p, recs)(t => toStream(t)(r => Out(r.key(), Option(r.value()).map(_.longValue), r.timestamp())))

  /**
   * The same topology, exposing the old values the pipeline's last table forwards (`toStream()`
   * drops them): Kafka's own `transformValues`, with old values forced on
   * (`KTableImpl.enableSendingOldValues(true)`, what a downstream aggregation or join does),
   * calls its transformer on a change's new value and then on its old value before it forwards
   * the change; the first call returns a probe the second fills in. Forcing old values
   * materializes the source, so this is for materialized sources only.
   */
  def runWithOldValues(p: Pipeline, recs: Seq[Rec]): Seq[OutWithOld] = {
    require(p.source != Unmaterialized, "forcing old values materializes the source")
    build(p, recs) { t =>
      val probed = t.transformValues[Probe](new ValueTransformerWithKeySupplier[String, V, Probe] {
        override def get(): ValueTransformerWithKey[String, V, Probe] = new ValueTransformerWithKey[String, V, Probe] {
          private var pending: Probe = _
          override def init(context: ProcessorContext): Unit = ()
          override def transform(k: String, v: V): Probe =
            if (pending == null) { pending = new Probe(Option(v).map(_.longValue)); pending }
            else { pending.old = Option(v).map(_.longValue); pending = null; null }
          override def close(): Unit = ()
        }
      })
      probed.asInstanceOf[KTableImpl[String, _, Probe]].enableSendingOldValues(true)
      toStream(probed)(r => OutWithOld(r.key(), r.value().value, r.value().old, r.timestamp()))
    }
  }

  private final class Probe(val value: Option[Long]) { var old: Option[Long] = None }

  private def toStream[W, O](t: KTable[String, W])(f: Record[String, W] => O): ArrayBuffer[O] = {
    val out = ArrayBuffer.empty[O]
    t.toStream().process(() =>
      new Processor[String, W, Void, Void] {
        override def process(r: Record[String, W]): Unit = out += f(r)
      }
    )
    out
  }

  private def build[O](p: Pipeline, recs: Seq[Rec])(end: KTable[String, V] => ArrayBuffer[O]): Seq[O] = {
    val builder = new StreamsBuilder()
    val consumed = Consumed.`with`(Serdes.String(), Serdes.Long())
    val source: KTable[String, V] = p.source match {
      case Unmaterialized => builder.table(In, consumed)
      case Unversioned =>
        builder.table(
          In,
          consumed,
          Materialized.as[String, V](Stores.inMemoryKeyValueStore("src"))
            .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long())
        )
      case Versioned(retention, grace) =>
        require(grace == retention, s"Kafka's grace is its history retention: $grace != $retention")
        builder.table(
          In,
          consumed,
          Materialized.as[String, V](
            Stores.persistentVersionedKeyValueStore("src", Duration.ofMillis(retention))
          )
            .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long())
        )
    }
    val pred = new Predicate[String, V] { override def test(k: String, v: V): Boolean = TablePipeline.predicate(k, v) }
    val map =
      new ValueMapperWithKey[String, V, V] { override def apply(k: String, v: V): V = TablePipeline.mapper(k, v) }
    val table = p.steps.foldLeft(source) {
      case (t, Filter) => t.filter(pred)
      case (t, FilterNot) => t.filterNot(pred)
      case (t, MapValues) => t.mapValues[V](map)
    }
    val out = end(table)
    OracleDriver.using(builder.build()) { driver =>
      val input = driver.createInputTopic(In, new StringSerializer, new LongSerializer)
      recs.foreach { r =>
        input.pipeInput(r.key.orNull, r.value.map(java.lang.Long.valueOf).orNull, Instant.ofEpochMilli(r.ts.get))
      }
    }
    out.toList
  }
}
