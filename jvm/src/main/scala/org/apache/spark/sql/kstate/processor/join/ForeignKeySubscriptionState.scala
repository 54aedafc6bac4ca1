package org.apache.spark.sql.kstate.processor.join

/**
 * The subscriptions the foreign-key join's first stage keeps for one state partition (Kafka's
 * subscription store, keyed by (foreign key, left key)): per pair, the subscribed left value,
 * its version and the subscription's timestamp.
 *
 * Contract:
 *  - `put` replaces any subscription of the pair; `remove` of an absent pair is a no-op;
 *  - `subscribers(fk)` iterates the pairs of `fk` in the state's left-key order (the heap state:
 *    the Ordering it is given; a store of bytes: the keys' byte order, as Kafka's prefix scan),
 *    and must not be used across a `put` / `remove`;
 *  - keys and values passed in are kept: the caller does not reuse them; `size` counts pairs.
 */
trait ForeignKeySubscriptionState[KO, K, V] {
  def put(foreignKey: KO, key: K, subscribed: ForeignKeySubscriptionState.Subscribed[V]): Unit
  def remove(foreignKey: KO, key: K): Unit
  def subscribers(foreignKey: KO): Iterator[(K, ForeignKeySubscriptionState.Subscribed[V])]
  def size: Long
}

object ForeignKeySubscriptionState {

  /** A subscribed left value (null only for a deleted row, never stored) with its version and time. */
  final case class Subscribed[V](leftValue: V, version: Long, timestamp: Long)
}
