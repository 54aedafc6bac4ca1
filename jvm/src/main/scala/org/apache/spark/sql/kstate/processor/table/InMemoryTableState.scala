package org.apache.spark.sql.kstate.processor.table

import scala.collection.mutable

import org.apache.spark.sql.kstate.processor.StreamTime
import org.apache.spark.sql.kstate.processor.table.TableState.{Latest, NotPut, Versioned}

/**
 * Heap [[TableState]]s, for unit and property tests of the table processors and batch DataFrames
 * (keys need equality and hash code: not arrays). The versioned one keeps every version it
 * stored (none is dropped past the history retention, which the contract allows), so its
 * `numVersions` only grows. Not thread-safe.
 */
object InMemoryTableState {

  /** An unversioned table: the last value put per key, by processing order. */
  def unversioned[K, V](): TableState[K, V] = new Unversioned[K, V]

  /** A versioned table with its history retention and grace (grace <= retention). */
  def versioned[K, V](historyRetentionMs: Long, graceMs: Long): TableState[K, V] =
    new VersionedHeap[K, V](historyRetentionMs, graceMs)

  private final class Unversioned[K, V] extends TableState[K, V] {
    private val latest = mutable.HashMap.empty[K, Versioned[V]]
    private var time = StreamTime.Unknown
    override def versioned: Boolean = false
    override def streamTime: Long = time
    override def put(key: K, value: V, ts: Long): Long = {
      if (ts > time) time = ts
      if (value == null) latest.remove(key) else latest.update(key, Versioned(value, ts))
      Latest
    }
    override def get(key: K): Versioned[V] = latest.getOrElse(key, null)
    override def getAsOf(key: K, asOf: Long): Versioned[V] = get(key)
    override def numVersions: Long = 0L
  }

  private final class VersionedHeap[K, V](retentionMs: Long, graceMs: Long) extends TableState[K, V] {
    require(
      retentionMs >= 0 && graceMs >= 0 && graceMs <= retentionMs,
      s"need 0 <= grace ($graceMs) <= history retention ($retentionMs)"
    )
    // per key: timestamp -> value (null = tombstone), every version ever accepted
    private val versions = mutable.HashMap.empty[K, mutable.TreeMap[Long, Option[V]]]
    private var time = StreamTime.Unknown
    private var count = 0L
    override def versioned: Boolean = true
    override def streamTime: Long = time
    override def numVersions: Long = count

    override def put(key: K, value: V, ts: Long): Long = {
      if (time != StreamTime.Unknown && ts < StreamTime.minus(time, graceMs)) return NotPut
      if (ts > time) time = ts
      val h = versions.getOrElseUpdate(key, mutable.TreeMap.empty[Long, Option[V]])
      if (!h.contains(ts)) count += 1
      h.update(ts, Option(value))
      // the version after this one, if any, ends it
      val later = h.keysIteratorFrom(ts).drop(1)
      if (later.hasNext) later.next() else Latest
    }

    override def get(key: K): Versioned[V] = versions.get(key).flatMap(_.lastOption) match {
      case Some((ts, Some(v))) => Versioned(v, ts)
      case _ => null
    }

    override def getAsOf(key: K, asOf: Long): Versioned[V] = {
      if (time != StreamTime.Unknown && asOf < StreamTime.minus(time, retentionMs)) {
        val latest = get(key) // past retention only the latest version answers
        return if (latest != null && latest.timestamp <= asOf) latest else null
      }
      versions.get(key).flatMap(_.rangeTo(asOf).lastOption) match {
        case Some((ts, Some(v))) => Versioned(v, ts)
        case _ => null
      }
    }
  }
}
