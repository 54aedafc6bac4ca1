package org.apache.spark.sql.kstate.processor.window

import scala.collection.mutable

import org.apache.spark.sql.kstate.processor.StreamTime

/**
 * Heap-only [[TimeWindowState]]: batch DataFrames (one batch, state discarded) and unit tests.
 * `copyKey` makes a caller-owned key safe to keep; `bytesOf(key, agg)` is a window's bytes.
 */
final class InMemoryTimeWindowState[K, A](copyKey: K => K, bytesOf: (K, A) => Long)
    extends TimeWindowState[K, A] {
  private final class Entry(val agg: A, val maxTs: Long, val bytes: Long)
  private val values = mutable.HashMap.empty[WindowRef[K], Entry]
  private val byEnd = mutable.TreeMap.empty[Long, mutable.LinkedHashSet[WindowRef[K]]]
  private val probe = new WindowRef[K](null.asInstanceOf[K], 0L)
  private var size = 0L
  private var time = StreamTime.Unknown

  override def streamTime: Long = time

  override def get(key: K, start: Long, into: WindowValue[A]): Boolean = values.get(probe.set(key, start)) match {
    case Some(e) =>
      into.agg = e.agg; into.maxTs = e.maxTs; into.storedSize = 0
      true
    case None => false
  }

  override def put(key: K, start: Long, w: WindowValue[A]): Unit = {
    val b = bytesOf(key, w.agg)
    values.get(probe.set(key, start)) match {
      case Some(old) =>
        values.update(new WindowRef(copyKey(key), start), new Entry(w.agg, w.maxTs, b))
        size += b - old.bytes
      case None =>
        val ref = new WindowRef(copyKey(key), start)
        values.update(ref, new Entry(w.agg, w.maxTs, b))
        byEnd.getOrElseUpdate(w.end, mutable.LinkedHashSet.empty) += ref
        size += b
    }
    w.storedSize = 0
  }

  override def closeBefore(bound: Long, f: ClosedWindow[K, A]): Long = {
    var n = 0L
    while (byEnd.nonEmpty && byEnd.head._1 < bound) {
      val (end, refs) = byEnd.head
      byEnd.remove(end)
      refs.foreach { r =>
        values.remove(r).foreach { e => f.closed(r.key, r.start, e.agg, e.maxTs); size -= e.bytes; n += 1 }
      }
    }
    n
  }

  override def records: Long = values.size.toLong
  override def bytes: Long = size
  override def finish(streamTime: Long): Unit = time = streamTime
}
