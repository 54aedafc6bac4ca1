package org.apache.spark.sql.kstate.processor.window

import scala.collection.mutable

import org.apache.spark.sql.kstate.processor.StreamTime

/**
 * [[SessionStore]] on the heap: batch queries (one batch, then discarded) and unit tests.
 * `copyKey` / `copyAgg` copy what a caller may reuse; `sizeOf(key, spans)` is what the spans of
 * a key count towards `bytes`. Stream time starts unknown and is kept from one `finish` to the
 * next processor over the same store (as a state store persists it).
 */
final class InMemorySessionStore[K, A](
    copyKey: K => K,
    copyAgg: A => A,
    sizeOf: (K, Seq[StoredSession[A]]) => Long = (_: K, _: Seq[StoredSession[A]]) => 0L
) extends SessionStore[K, A] {
  private val spans = mutable.HashMap.empty[K, Array[StoredSession[A]]]
  private val byEnd = mutable.TreeMap.empty[Long, mutable.LinkedHashSet[K]]
  private var count = 0L
  private var size = 0L
  private var time = StreamTime.Unknown

  override def streamTime: Long = time
  override def get(key: K): Array[StoredSession[A]] = spans.getOrElse(key, Array.empty[StoredSession[A]])

  override def put(key: K, ss: Seq[StoredSession[A]], old: Seq[StoredSession[A]]): Unit = {
    val k = copyKey(key)
    count += ss.length - old.length
    size += (if (ss.isEmpty) 0L else sizeOf(k, ss)) - (if (old.isEmpty) 0L else sizeOf(k, old))
    if (ss.isEmpty) spans.remove(k)
    else {
      ss.foreach(s => if (!old.exists(_.end == s.end)) byEnd.getOrElseUpdate(s.end, mutable.LinkedHashSet.empty) += k)
      spans.put(k, ss.map(s => s.copy(agg = copyAgg(s.agg))).toArray)
    }
  }

  override def closeBefore(bound: Long)(f: (K, StoredSession[A]) => Unit): Long = {
    var n = 0L
    while (byEnd.nonEmpty && byEnd.head._1 < bound) {
      val (end, keys) = byEnd.head
      byEnd.remove(end)
      keys.foreach { k =>
        val stored = get(k)
        val (closed, open) = stored.partition(_.end < bound)
        if (closed.nonEmpty) {
          closed.foreach { s => f(k, s); n += 1 }
          put(k, open.toSeq, stored.toSeq)
        }
      }
    }
    n
  }

  override def records: Long = count
  override def bytes: Long = size
  override def finish(streamTime: Long): Unit = time = streamTime
}
