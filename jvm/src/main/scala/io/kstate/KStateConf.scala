package io.kstate

import org.apache.spark.sql.internal.SQLConf

/**
 * The config hub: every `spark.kstate.*` setting, its default and its meaning. Read through
 * [[KStateConf.Entry.get]] so the default lives in one place.
 */
object KStateConf {
  final case class Entry[T](key: String, default: T, doc: String)(parse: String => T) {
    def get(conf: SQLConf): T = Option(conf.getConfString(key, null)).map(parse).getOrElse(default)
  }

  val StateStoreProvider: Entry[String] = Entry(
    "spark.kstate.stateStore.providerClass",
    "io.kstate.KStateStoreProvider",
    "State store provider behind every kstate operator, independent of Spark's own " +
      "spark.sql.streaming.stateStore.providerClass (which keeps serving Spark's operators). " +
      "Default: kstate's own provider; Spark's RocksDBStateStoreProvider also works.")(
    identity)

  val StreamTimeFollowsWatermark: Entry[Boolean] = Entry(
    "spark.kstate.streamTime.followWatermark",
    false,
    "When true, each kstate operator raises its per-partition stream time to the query's " +
      "event-time watermark at the start of each micro-batch, so idle partitions make progress. " +
      "Default false: stream time is the largest event timestamp the partition has seen, as " +
      "in Kafka Streams.")(_.trim.toBoolean)
}
