package io.kstate.oracle

import java.time.{Duration, Instant}

import scala.collection.mutable.ArrayBuffer
import scala.util.Try

import org.apache.kafka.common.serialization.{Serdes, StringSerializer}
import org.apache.kafka.streams.StreamsBuilder
import org.apache.kafka.streams.kstream.{Consumed, Joined, KTable, Materialized, ValueJoiner}
import org.apache.kafka.streams.processor.api.{Processor, Record}
import org.apache.kafka.streams.state.Stores

/**
 * Kafka Streams 4.3 itself as the oracle of the stream–table join: a table from topic `table`
 * (materialized with a persistent versioned store of the given history retention, whose grace
 * period Kafka ties to it, or an unversioned one), a stream from topic `stream`, and
 * `stream.join` / `stream.leftJoin(table, joiner, Joined.withGracePeriod(...))`, run in a
 * `TopologyTestDriver` (caches off). The records are piped one by one in the given order, both
 * topics interleaved: the driver processes each before the next, as a task processes its
 * co-partitioned inputs. Collects every join result (key, stream value, table value, timestamp)
 * in emission order, or the exception a record made the topology throw.
 */
object KafkaStreamTableJoinOracle {
  sealed trait In { def key: String; def ts: Long }

  /** A stream record (values are never null). */
  final case class StreamIn(key: String, value: String, ts: Long) extends In

  /** A table update; a null value is a tombstone. */
  final case class TableIn(key: String, value: String, ts: Long) extends In

  final case class Result(key: String, stream: String, table: String, ts: Long)

  /** `historyRetentionMs` None: an unversioned table; `graceMs` None: no grace period. */
  final case class Join(left: Boolean, historyRetentionMs: Option[Long], graceMs: Option[Long])

  def run(join: Join, input: Seq[In]): Either[Throwable, Seq[Result]] = {
    val out = ArrayBuffer.empty[Result]
    val builder = new StreamsBuilder()
    val strings = Consumed.`with`(Serdes.String(), Serdes.String())
    val table: KTable[String, String] = join.historyRetentionMs match {
      case Some(r) =>
        builder.table(
          "table",
          strings,
          Materialized.as[String, String](
            Stores.persistentVersionedKeyValueStore("table-store", Duration.ofMillis(r))
          )
            .withKeySerde(Serdes.String()).withValueSerde(Serdes.String())
        )
      case None =>
        builder.table(
          "table",
          strings,
          Materialized.as[String, String](Stores.inMemoryKeyValueStore("table-store"))
            .withKeySerde(Serdes.String()).withValueSerde(Serdes.String())
        )
    }
    val stream = builder.stream("stream", strings)
    val joiner: ValueJoiner[String, String, (String, String)] = (s: String, t: String) => (s, t)
    val joined = {
      val j = Joined.`with`(Serdes.String(), Serdes.String(), Serdes.String())
      join.graceMs.fold(j)(g => j.withGracePeriod(Duration.ofMillis(g)))
    }
    val results = if (join.left) stream.leftJoin(table, joiner, joined) else stream.join(table, joiner, joined)
    results.process(() =>
      new Processor[String, (String, String), Void, Void] {
        override def process(r: Record[String, (String, String)]): Unit =
          out += Result(r.key(), r.value()._1, r.value()._2, r.timestamp())
      }
    )
    OracleDriver.using(builder.build()) { driver =>
      val streamTopic = driver.createInputTopic("stream", new StringSerializer, new StringSerializer)
      val tableTopic = driver.createInputTopic("table", new StringSerializer, new StringSerializer)
      Try(input.foreach {
        case StreamIn(k, v, ts) => streamTopic.pipeInput(k, v, Instant.ofEpochMilli(ts))
        case TableIn(k, v, ts) => tableTopic.pipeInput(k, v, Instant.ofEpochMilli(ts))
      }).toEither.map(_ => out.toList)
    }
  }
}
