package org.apache.spark.sql.kstate.processor.join

import scala.collection.mutable

import org.apache.spark.sql.kstate.processor.join.ForeignKeySubscriptionState.Subscribed

/** Heap [[ForeignKeySubscriptionState]] for tests: subscribers of a foreign key in `keyOrder`. */
final class InMemoryForeignKeySubscriptionState[KO, K, V](implicit keyOrder: Ordering[K])
    extends ForeignKeySubscriptionState[KO, K, V] {
  private val byForeignKey = mutable.HashMap.empty[KO, mutable.TreeMap[K, Subscribed[V]]]
  private var pairs = 0L

  override def put(foreignKey: KO, key: K, subscribed: Subscribed[V]): Unit = {
    val m = byForeignKey.getOrElseUpdate(foreignKey, mutable.TreeMap.empty[K, Subscribed[V]])
    if (m.put(key, subscribed).isEmpty) pairs += 1
  }

  override def remove(foreignKey: KO, key: K): Unit = byForeignKey.get(foreignKey).foreach { m =>
    if (m.remove(key).isDefined) pairs -= 1
    if (m.isEmpty) byForeignKey.remove(foreignKey)
  }

  override def subscribers(foreignKey: KO): Iterator[(K, Subscribed[V])] =
    byForeignKey.get(foreignKey).fold(Iterator.empty[(K, Subscribed[V])])(_.iterator)

  override def size: Long = pairs
}
