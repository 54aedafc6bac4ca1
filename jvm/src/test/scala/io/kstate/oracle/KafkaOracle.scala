package io.kstate.oracle

import java.time.{Duration, Instant}

import scala.collection.mutable.ArrayBuffer

import org.apache.kafka.common.serialization.{LongSerializer, Serdes, StringSerializer}
import org.apache.kafka.streams.{StreamsBuilder, TopologyTestDriver}
import org.apache.kafka.streams.kstream.{
  Consumed,
  ForeachAction,
  KTable,
  Suppressed => KSuppressed,
  SessionWindows => KSessionWindows,
  SlidingWindows => KSlidingWindows,
  TimeWindows => KTimeWindows,
  Windowed
}
import org.apache.kafka.streams.kstream.Suppressed.BufferConfig

import OracleCase._

/**
 * Kafka Streams 4.3 itself on an [[OracleCase]]: builds the equivalent topology (a
 * `groupByKey().windowedBy(...).count()`, or a source table with `suppress(untilTimeLimit)`),
 * runs it in a `TopologyTestDriver` with caches off (`statestore.cache.max.bytes=0`: every update
 * is forwarded) and pipes the micro-batches' records in order, collecting what reaches the end
 * of the topology per micro-batch. A batch whose record makes a `shutDownWhenFull` buffer
 * overflow ends the run (`Emitted.failedAt`).
 */
object KafkaOracle {
  private val In = "in"

  def run(c: OracleCase, batches: Seq[Seq[Ev]]): Emitted = {
    val out = ArrayBuffer.empty[Out]
    val builder = new StreamsBuilder()
    val consumed = Consumed.`with`(Serdes.String(), Serdes.Long())
    def collectWindowed(t: KTable[Windowed[String], java.lang.Long]): Unit =
      t.toStream().foreach(new ForeachAction[Windowed[String], java.lang.Long] {
        override def apply(k: Windowed[String], v: java.lang.Long): Unit =
          out += Out(k.key(), k.window().start(), k.window().end(), Option(v).map(_.longValue))
      })
    c match {
      case TimeCount(size, advance, grace, suppressed) =>
        val t = builder.stream(In, consumed).groupByKey()
          .windowedBy(KTimeWindows.ofSizeAndGrace(Duration.ofMillis(size), Duration.ofMillis(grace))
            .advanceBy(Duration.ofMillis(advance))).count()
        collectWindowed(if (suppressed) t.suppress(KSuppressed.untilWindowCloses(BufferConfig.unbounded())) else t)
      case SessionCount(gap, grace, suppressed) =>
        val t = builder.stream(In, consumed).groupByKey()
          .windowedBy(KSessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(gap), Duration.ofMillis(grace))).count()
        collectWindowed(if (suppressed) t.suppress(KSuppressed.untilWindowCloses(BufferConfig.unbounded())) else t)
      case SlidingCount(diff, grace, suppressed) =>
        val t = builder.stream(In, consumed).groupByKey()
          .windowedBy(KSlidingWindows.ofTimeDifferenceAndGrace(
            Duration.ofMillis(diff),
            Duration.ofMillis(grace)
          )).count()
        collectWindowed(if (suppressed) t.suppress(KSuppressed.untilWindowCloses(BufferConfig.unbounded())) else t)
      case TimeLimit(limit, buffer) =>
        val config = buffer match {
          case Unbounded => BufferConfig.unbounded()
          case MaxRecordsEmitEarly(n) => BufferConfig.maxRecords(n).emitEarlyWhenFull()
          case MaxRecordsShutDown(n) => BufferConfig.maxRecords(n).shutDownWhenFull()
        }
        builder.table(In, consumed).suppress(KSuppressed.untilTimeLimit(Duration.ofMillis(limit), config))
          .toStream().process(() =>
            new org.apache.kafka.streams.processor.api.Processor[String, java.lang.Long, Void, Void] {
              override def process(r: org.apache.kafka.streams.processor.api.Record[String, java.lang.Long]): Unit =
                out += Out(r.key(), r.timestamp(), r.timestamp(), Option(r.value()).map(_.longValue))
            }
          )
    }
    val driver = new TopologyTestDriver(builder.build(), OracleDriver.props())
    try {
      val input = driver.createInputTopic(In, new StringSerializer, new LongSerializer)
      val emitted = ArrayBuffer.empty[Seq[Out]]
      var failedAt: Option[Int] = None
      val it = batches.iterator.zipWithIndex
      while (failedAt.isEmpty && it.hasNext) {
        val (batch, i) = it.next()
        out.clear()
        try {
          batch.foreach(e =>
            input.pipeInput(e.key, e.value.map(java.lang.Long.valueOf).orNull, Instant.ofEpochMilli(e.ts))
          )
          emitted += out.toList
        } catch {
          case e: org.apache.kafka.streams.errors.StreamsException if isBufferFull(e) => failedAt = Some(i)
        }
      }
      Emitted(emitted.toList, failedAt)
    } finally driver.close()
  }

  private def isBufferFull(e: Throwable): Boolean =
    Iterator.iterate(e)(_.getCause).takeWhile(_ != null).exists(t =>
      String.valueOf(t.getMessage).contains("buffer exceeded")
    )
}
