package org.apache.spark.sql.kstate.processor.distinct

import scala.collection.mutable

import org.apache.spark.sql.kstate.processor.StreamTime

/**
 * The sessions of each key for one state partition. Sessions are `[start, end]` pairs,
 * flattened into an array `(s0, e0, s1, e1, ...)`.
 *
 * Contract: `get` returns an empty array for an unknown key; `put` with an empty array removes
 * the key; `purgeOlderThan(bound)` removes every key whose sessions all end `< bound` and returns
 * how many sessions it removed (it may also trim older sessions of other keys); keys passed in
 * may be reused by the caller after the call returns.
 */
trait SessionState[K] {
  def get(key: K): Array[Long]
  def put(key: K, sessions: Array[Long]): Unit
  def purgeOlderThan(bound: Long): Long
  def numSessions: Long
  def streamTime: Long
  def streamTime_=(t: Long): Unit
}

object SessionState {
  def maxEnd(sessions: Array[Long]): Long = {
    var m = Long.MinValue
    var i = 1
    while (i < sessions.length) { if (sessions(i) > m) m = sessions(i); i += 2 }
    m
  }
}

/** Heap-only [[SessionState]]: batch DataFrames and unit tests. */
final class InMemorySessionState[K](copyKey: K => K) extends SessionState[K] {
  private val sessions = mutable.HashMap.empty[K, Array[Long]]
  override var streamTime: Long = StreamTime.Unknown

  override def get(key: K): Array[Long] = sessions.getOrElse(key, Array.emptyLongArray)

  override def put(key: K, s: Array[Long]): Unit =
    if (s.isEmpty) sessions.remove(key) else sessions.update(copyKey(key), s.clone())

  override def purgeOlderThan(bound: Long): Long = {
    var removed = 0L
    sessions.keys.toList.foreach { k =>
      val s = sessions(k)
      val kept = s.grouped(2).filter(_(1) >= bound).flatten.toArray
      removed += (s.length - kept.length) / 2
      if (kept.isEmpty) sessions.remove(k) else if (kept.length != s.length) sessions.update(k, kept)
    }
    removed
  }

  override def numSessions: Long = sessions.valuesIterator.map(_.length / 2L).sum
}
