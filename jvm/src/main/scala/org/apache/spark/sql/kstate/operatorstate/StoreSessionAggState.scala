package org.apache.spark.sql.kstate.operatorstate

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.types._
import org.apache.spark.sql.kstate.processor.window.{InMemorySessionStore, SessionStore, StoredSession}

/**
 * The state-store layout of session and sliding aggregations ([[SessionStore]] over Spark rows):
 * one entry per state key holding its spans, ordered by start, and a time index by span end.
 */
object SessionAggState {
  val NoStreamTime: Long = Long.MinValue

  /** The state key schema: the key alone. */
  def keySchema(keyType: DataType): StructType = StructType(Seq(StructField("key", keyType, nullable = true)))

  /** The state value schema: the key's sessions. */
  def valueSchema(bufferSchema: StructType): StructType = StructType(Seq(StructField(
    "sessions",
    ArrayType(
      StructType(Seq(
        StructField("start", LongType, nullable = false),
        StructField("end", LongType, nullable = false),
        StructField("max_ts", LongType, nullable = false),
        StructField("buffer", bufferSchema, nullable = false)
      )),
      containsNull = false
    ),
    nullable = false
  )))

  /** What a key's spans count towards `bytes`: the key, and per span its bounds and buffer. */
  def bytesOf(key: UnsafeRow, sessions: Seq[StoredSession[UnsafeRow]]): Long =
    key.getSizeInBytes.toLong + sessions.iterator.map(s => 24L + s.agg.getSizeInBytes).sum

  /** The heap store of a batch query (one batch, then discarded). */
  def onHeap(): SessionStore[UnsafeRow, UnsafeRow] =
    new InMemorySessionStore[UnsafeRow, UnsafeRow](_.copy(), _.copy(), bytesOf)
}

/** [[SessionStore]] in a kstate operator's state store (streaming). */
final class StoreSessionAggState(store: StateStore, keySchema: StructType, bufferSchema: StructType)
    extends SessionStore[UnsafeRow, UnsafeRow] {
  import SessionAggState._
  private val meta = new StateMeta(store)
  private val index = new ExpiryIndex(store, keySchema)
  private val nBuffer = bufferSchema.length
  private val toValue = UnsafeProjection.create(valueSchema(bufferSchema))
  private var time = meta.get(StateMeta.StreamTime, NoStreamTime)
  private var count = meta.get(StateMeta.Entries, 0L)
  private var size = meta.get(StateMeta.Bytes, 0L)

  override def streamTime: Long = time

  override def get(key: UnsafeRow): Array[StoredSession[UnsafeRow]] = decode(store.get(key))

  private def decode(v: UnsafeRow): Array[StoredSession[UnsafeRow]] =
    if (v == null) Array.empty
    else {
      val a = v.getArray(0)
      Array.tabulate(a.numElements()) { i =>
        val s = a.getStruct(i, 4)
        StoredSession(s.getLong(0), s.getLong(1), s.getLong(2), s.getStruct(3, nBuffer).asInstanceOf[UnsafeRow].copy())
      }
    }

  override def put(
      key: UnsafeRow,
      sessions: Seq[StoredSession[UnsafeRow]],
      old: Seq[StoredSession[UnsafeRow]]
  ): Unit = if (sessions.nonEmpty || old.nonEmpty) { // a key with none before and none now was never written
    count += sessions.length - old.length
    size += (if (sessions.isEmpty) 0L else bytesOf(key, sessions)) - (if (old.isEmpty) 0L else bytesOf(key, old))
    if (sessions.isEmpty) store.remove(key)
    else {
      // an index entry per new end; entries whose session changed or left are skipped when drained
      // (a set of the old ends for a key with many spans: a hot key's sliding windows)
      val isOld: Long => Boolean =
        if (old.length <= 8) e => old.exists(_.end == e) else old.iterator.map(_.end).toSet
      sessions.foreach(s => if (!isOld(s.end)) index.add(s.end, key))
      store.put(
        key,
        toValue(InternalRow(new GenericArrayData(
          sessions.map(s => InternalRow(s.start, s.end, s.maxTs, s.agg)).toArray[Any]
        )))
      )
    }
  }

  override def closeBefore(bound: Long)(f: (UnsafeRow, StoredSession[UnsafeRow]) => Unit): Long = {
    var n = 0L
    // each key once, in the order of its first index entry: a key with many spans ending before
    // the bound has as many entries, and would otherwise be read once per entry
    val keys = new java.util.LinkedHashSet[UnsafeRow]()
    index.drainBefore(bound)((_, key) => if (!keys.contains(key)) keys.add(key.copy()))
    keys.forEach { k =>
      val sessions = get(k)
      val (closed, open) = sessions.partition(_.end < bound)
      if (closed.nonEmpty) {
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
