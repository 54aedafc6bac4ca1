package org.apache.spark.sql.kstate.processor.join

/**
 * A subscription message from a left-table update to the stage partitioned by foreign key
 * (Kafka's `SubscriptionWrapper` with its record key and timestamp).
 *
 * `foreignKey` is null only with [[ForeignKeyInstruction.PropagateNullIfNoMatch]] in a left
 * join (a deleted left row, or one whose foreign key is null: it still needs its response).
 * `leftValue` is the left row's new value (null when it was deleted): kstate carries the value
 * where Kafka carries its 128-bit hash (see [[ForeignKeySubscriptionProcessor]], difference D1).
 * `version` orders the left updates of one key (strictly increasing per key over the run, e.g.
 * micro-batch id × 2^32 + position in the batch); `timestamp` is the left update's.
 */
final case class ForeignKeySubscription[K, KO, V](
    foreignKey: KO,
    key: K,
    instruction: ForeignKeyInstruction,
    leftValue: V,
    version: Long,
    timestamp: Long
)
