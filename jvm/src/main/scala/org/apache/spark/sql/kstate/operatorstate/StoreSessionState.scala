package org.apache.spark.sql.kstate.operatorstate

import org.apache.spark.sql.kstate.processor.StreamTime
import org.apache.spark.sql.kstate.processor.distinct.SessionState

import org.apache.spark.sql.catalyst.expressions.{UnsafeArrayData, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.types.{ArrayType, LongType, StructField, StructType}

/**
 * [[SessionState]] on a Spark [[StateStore]]: default CF = key -> (sessions: array<bigint>);
 * an [[ExpiryIndex]] on each key's latest session end; [[StateMeta]] for stream time and the
 * session count.
 */
final class StoreSessionState(store: StateStore, keySchema: StructType)
    extends SessionState[UnsafeRow] {

  private val meta = new StateMeta(store)
  private val index = new ExpiryIndex(store, keySchema)
  private val toValue = UnsafeProjection.create(StoreSessionState.ValueSchema)
  private var sessionsCount: Long = meta.get(StateMeta.Entries, 0L)
  private var streamTimeVar: Long = meta.get(StateMeta.StreamTime, StreamTime.Unknown)

  override def streamTime: Long = streamTimeVar
  override def streamTime_=(t: Long): Unit = {
    streamTimeVar = t
    meta.put(StateMeta.StreamTime, t)
    meta.put(StateMeta.Entries, sessionsCount)
  }

  override def get(key: UnsafeRow): Array[Long] = {
    val v = store.get(key)
    if (v == null) Array.emptyLongArray else v.getArray(0).toLongArray()
  }

  override def put(key: UnsafeRow, sessions: Array[Long]): Unit = {
    val old = get(key)
    if (old.nonEmpty) index.remove(SessionState.maxEnd(old), key)
    sessionsCount += (sessions.length - old.length) / 2
    if (sessions.isEmpty) {
      store.remove(key)
    } else {
      val row = new GenericInternalRow(Array[Any](UnsafeArrayData.fromPrimitiveArray(sessions)))
      store.put(key, toValue(row))
      index.add(SessionState.maxEnd(sessions), key)
    }
  }

  override def purgeOlderThan(bound: Long): Long = {
    // A key's index time is its latest session end: every session of a drained key is older
    // than that, so all of them go.
    var removed = 0L
    index.drainBefore(bound) { (_, key) =>
      val n = get(key).length / 2
      if (n > 0) {
        store.remove(key)
        removed += n
      }
    }
    sessionsCount -= removed
    removed
  }

  override def numSessions: Long = sessionsCount
}

object StoreSessionState {
  val ValueSchema: StructType =
    StructType(Seq(StructField("sessions", ArrayType(LongType, containsNull = false), nullable = false)))
}
