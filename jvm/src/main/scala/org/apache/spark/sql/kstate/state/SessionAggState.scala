package org.apache.spark.sql.kstate.state

import scala.collection.mutable

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.types._

/** One session of a key: `[start, end]` (both inclusive, Kafka's), its aggregate buffer and
 * largest record timestamp. */
final case class StoredSession(start: Long, end: Long, maxTs: Long, buffer: UnsafeRow)

/**
 * The state of a session-window aggregation on one partition: each key's open sessions (one
 * entry per key, the sessions ordered by start), a time index by session end for closing them,
 * stream time, and session and byte counts (for suppression limits).
 *
 * `put` with no sessions removes the key; it takes the key's stored sessions from the caller, who
 * read them (no second read). `closeBefore(bound)` removes every session with
 * end < bound and calls `f(key, session)` for each; keys are found through the time index, so it
 * reads only keys with a session that ends before the bound. Rows handed in are copied when
 * kept; rows handed out are the caller's to keep.
 */
trait SessionAggState {
  def streamTime: Long
  def get(key: UnsafeRow): Array[StoredSession]
  /** Replaces `key`'s sessions; `old` are its sessions as `get` returned them (for the counts). */
  def put(key: UnsafeRow, sessions: Seq[StoredSession], old: Seq[StoredSession]): Unit
  def closeBefore(bound: Long)(f: (UnsafeRow, StoredSession) => Unit): Long
  def records: Long
  def bytes: Long
  /** Persists stream time and counters (at the end of each micro-batch). */
  def finish(streamTime: Long): Unit
}

object SessionAggState {
  val NoStreamTime: Long = Long.MinValue

  /** The state key schema: the key alone. */
  def keySchema(keyType: DataType): StructType = StructType(Seq(StructField("key", keyType, nullable = true)))

  /** The state value schema: the key's sessions. */
  def valueSchema(bufferSchema: StructType): StructType = StructType(Seq(StructField("sessions",
    ArrayType(StructType(Seq(
      StructField("start", LongType, nullable = false),
      StructField("end", LongType, nullable = false),
      StructField("max_ts", LongType, nullable = false),
      StructField("buffer", bufferSchema, nullable = false))), containsNull = false), nullable = false)))

  private[state] def bytesOf(key: UnsafeRow, sessions: Seq[StoredSession]): Long =
    key.getSizeInBytes.toLong + sessions.iterator.map(s => 24L + s.buffer.getSizeInBytes).sum
}

/** [[SessionAggState]] in a kstate operator's state store (streaming). */
final class StoreSessionAggState(store: StateStore, keySchema: StructType, bufferSchema: StructType)
  extends SessionAggState {
  import SessionAggState._
  private val meta = new StateMeta(store)
  private val index = new ExpiryIndex(store, keySchema)
  private val nBuffer = bufferSchema.length
  private val toValue = UnsafeProjection.create(valueSchema(bufferSchema))
  private var time = meta.get(StateMeta.StreamTime, NoStreamTime)
  private var count = meta.get(StateMeta.Entries, 0L)
  private var size = meta.get(StateMeta.Bytes, 0L)

  override def streamTime: Long = time

  override def get(key: UnsafeRow): Array[StoredSession] = decode(store.get(key))

  private def decode(v: UnsafeRow): Array[StoredSession] =
    if (v == null) Array.empty
    else {
      val a = v.getArray(0)
      Array.tabulate(a.numElements()) { i =>
        val s = a.getStruct(i, 4)
        StoredSession(s.getLong(0), s.getLong(1), s.getLong(2), s.getStruct(3, nBuffer).asInstanceOf[UnsafeRow].copy())
      }
    }

  override def put(key: UnsafeRow, sessions: Seq[StoredSession], old: Seq[StoredSession]): Unit = {
    count += sessions.length - old.length
    size += (if (sessions.isEmpty) 0L else bytesOf(key, sessions)) - (if (old.isEmpty) 0L else bytesOf(key, old))
    if (sessions.isEmpty) store.remove(key)
    else {
      // an index entry per new end; entries whose session changed or left are skipped when drained
      sessions.foreach(s => if (!old.exists(o => o.end == s.end)) index.add(s.end, key))
      store.put(key, toValue(InternalRow(new GenericArrayData(
        sessions.map(s => InternalRow(s.start, s.end, s.maxTs, s.buffer)).toArray[Any]))))
    }
  }

  override def closeBefore(bound: Long)(f: (UnsafeRow, StoredSession) => Unit): Long = {
    var n = 0L
    index.drainBefore(bound) { (_, key) =>
      val sessions = get(key)
      val (closed, open) = sessions.partition(_.end < bound)
      if (closed.nonEmpty) {
        val k = key.copy()
        closed.foreach { s => f(k, s); n += 1 }
        put(k, open.toSeq, sessions.toSeq)
      }
    }
    n
  }

  override def records: Long = count
  override def bytes: Long = size

  override def finish(streamTime: Long): Unit = {
    time = streamTime
    meta.putCounts(time, count, size)
  }
}

/** [[SessionAggState]] on the task's heap (batch queries: one batch, then discarded). */
final class HeapSessionAggState extends SessionAggState {
  import SessionAggState._
  private val sessions = mutable.HashMap.empty[UnsafeRow, Array[StoredSession]]
  private val byEnd = mutable.TreeMap.empty[Long, mutable.LinkedHashSet[UnsafeRow]]
  private var count = 0L
  private var size = 0L

  override def streamTime: Long = NoStreamTime
  override def get(key: UnsafeRow): Array[StoredSession] = sessions.getOrElse(key, Array.empty)

  override def put(key: UnsafeRow, ss: Seq[StoredSession], old: Seq[StoredSession]): Unit = {
    val k = key.copy()
    count += ss.length - old.length
    size += (if (ss.isEmpty) 0L else bytesOf(k, ss)) - (if (old.isEmpty) 0L else bytesOf(k, old))
    if (ss.isEmpty) sessions.remove(k)
    else {
      ss.foreach(s => if (!old.exists(_.end == s.end)) byEnd.getOrElseUpdate(s.end, mutable.LinkedHashSet.empty) += k)
      sessions.put(k, ss.map(s => s.copy(buffer = s.buffer.copy())).toArray)
    }
  }

  override def closeBefore(bound: Long)(f: (UnsafeRow, StoredSession) => Unit): Long = {
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
  override def finish(streamTime: Long): Unit = ()
}
