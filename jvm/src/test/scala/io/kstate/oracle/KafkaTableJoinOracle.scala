package io.kstate.oracle

import java.time.{Duration, Instant}

import scala.collection.mutable.ArrayBuffer

import org.apache.kafka.common.serialization.{LongSerializer, Serdes, StringSerializer}
import org.apache.kafka.common.utils.Bytes
import org.apache.kafka.streams.StreamsBuilder
import org.apache.kafka.streams.kstream.{Consumed, KTable, Materialized, ValueJoiner}
import org.apache.kafka.streams.processor.api.{Processor, Record}
import org.apache.kafka.streams.state.{KeyValueStore, Stores}

/**
 * Kafka Streams 4.3 itself on table–table joins: two source tables (String keys, Long values),
 * each materialized versioned (`persistentVersionedKeyValueStore` with the given history
 * retention, which is also Kafka's grace) or not (an in-memory key-value store), joined on the
 * primary key (`join` / `leftJoin` / `outerJoin`) or on a foreign key extracted from the left
 * value (`join` / `leftJoin` with a foreign-key extractor), and the join's `toStream()`
 * collected per micro-batch: key, new value (None = tombstone), timestamp. Kafka's `toStream()`
 * does not expose old values, so they are not part of the comparison.
 *
 * Records are piped in order into the `left` and `right` topics of one `TopologyTestDriver`
 * (caches off), which processes each record depth-first, repartition topics included.
 */
object KafkaTableJoinOracle {

  /** One table update: `left` side or right, `value` None = tombstone, `key` null = null key. */
  final case class TEv(left: Boolean, key: String, ts: Long, value: Option[Long]) {
    override def toString: String =
      s"${if (left) "L" else "R"}:${Option(key).getOrElse("null")}=${value.fold("null")(_.toString)}@$ts"
  }

  /** One emitted join result. */
  final case class JOut(key: String, value: Option[String], ts: Long)

  sealed trait Join

  /** Primary-key join: "inner", "left" or "outer". */
  final case class PkJoin(how: String) extends Join

  /** Foreign-key join ("inner" or "left") with the left value's foreign key `fk(value)`. */
  final case class FkJoin(how: String, fk: Long => String) extends Join

  def show(v: Any): String = if (v == null) "null" else v.toString

  /** The joiner both engines use. */
  def joined(l: java.lang.Long, r: java.lang.Long): String = s"${show(l)}+${show(r)}"

  def run(
      join: Join,
      leftVersioned: Boolean,
      rightVersioned: Boolean,
      retentionMs: Long,
      batches: Seq[Seq[TEv]]
  ): Seq[Seq[JOut]] = {
    val builder = new StreamsBuilder()
    val consumed = Consumed.`with`(Serdes.String(), Serdes.Long())
    def table(topic: String, versioned: Boolean): KTable[String, java.lang.Long] = {
      val m: Materialized[String, java.lang.Long, KeyValueStore[Bytes, Array[Byte]]] =
        if (versioned)
          Materialized.as(Stores.persistentVersionedKeyValueStore(s"$topic-store", Duration.ofMillis(retentionMs)))
        else Materialized.as(Stores.inMemoryKeyValueStore(s"$topic-store"))
      builder.table(topic, consumed, m.withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
    }
    val l = table("left", leftVersioned)
    val r = table("right", rightVersioned)
    val joiner = new ValueJoiner[java.lang.Long, java.lang.Long, String] {
      override def apply(a: java.lang.Long, b: java.lang.Long): String = joined(a, b)
    }
    val result: KTable[String, String] = join match {
      case PkJoin("inner") => l.join(r, joiner)
      case PkJoin("left") => l.leftJoin(r, joiner)
      case PkJoin("outer") => l.outerJoin(r, joiner)
      case FkJoin(how, fk) =>
        val extractor = new java.util.function.Function[java.lang.Long, String] {
          override def apply(v: java.lang.Long): String = fk(v.longValue)
        }
        if (how == "inner") l.join(r, extractor, joiner) else l.leftJoin(r, extractor, joiner)
      case other => throw new IllegalArgumentException(s"unknown join $other")
    }
    val out = ArrayBuffer.empty[JOut]
    result.toStream().process(() =>
      new Processor[String, String, Void, Void] {
        override def process(rec: Record[String, String]): Unit =
          out += JOut(rec.key(), Option(rec.value()), rec.timestamp())
      }
    )
    OracleDriver.using(builder.build()) { driver =>
      val inL = driver.createInputTopic("left", new StringSerializer, new LongSerializer)
      val inR = driver.createInputTopic("right", new StringSerializer, new LongSerializer)
      batches.map { batch =>
        out.clear()
        batch.foreach { e =>
          val v = e.value.map(java.lang.Long.valueOf).orNull
          (if (e.left) inL else inR).pipeInput(e.key, v, Instant.ofEpochMilli(e.ts))
        }
        out.toList
      }
    }
  }
}
