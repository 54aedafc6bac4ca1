package org.apache.spark.sql.kstate.operatorstate

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, JoinedRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.processor.StreamTime
import org.apache.spark.sql.kstate.processor.window.{ClosedWindow, TimeWindowState, WindowValue}
import org.apache.spark.sql.types.{DataType, LongType, StructType}

/**
 * [[TimeWindowState]] in a kstate operator's state store (streaming). Keys are one-column rows
 * (the grouping key), aggregates the aggregation's buffer rows (`bufferTypes`). Layout: the
 * default column family maps (key, window start) -> (buffer ..., max_timestamp), `keySchema`
 * being that state key's schema; an [[ExpiryIndex]] orders windows by end; [[StateMeta]] keeps
 * stream time, the window count and their bytes (state key + value). A window's `storedSize` is
 * its stored value's size.
 */
final class StoreWindowAggState(store: StateStore, keySchema: StructType, bufferTypes: Seq[DataType])
    extends TimeWindowState[UnsafeRow, UnsafeRow] {
  private val meta = new StateMeta(store)
  private val index = new ExpiryIndex(store, keySchema)
  private var time = meta.get(StateMeta.StreamTime, StreamTime.Unknown)
  private var count = meta.get(StateMeta.Entries, 0L)
  private var size = meta.get(StateMeta.Bytes, 0L)

  private val nBuffer = bufferTypes.length
  private val keyType = keySchema.head.dataType
  private val joined = new JoinedRow()
  private val longWriter = new UnsafeRowWriter(1)
  private val toStateKey = UnsafeProjection.create(Seq(
    BoundReference(0, keyType, nullable = true),
    BoundReference(1, LongType, nullable = false)
  ))
  private val keyOfStateKey = UnsafeProjection.create(Seq(BoundReference(0, keyType, nullable = true)))
  private val bufferRefs = bufferTypes.zipWithIndex.map { case (t, i) => BoundReference(i, t, nullable = true) }
  private val bufferOfValue = UnsafeProjection.create(bufferRefs)
  private val toValue = UnsafeProjection.create(bufferRefs :+ BoundReference(nBuffer, LongType, nullable = false))

  private def longRow(v: Long): UnsafeRow = {
    longWriter.reset(); longWriter.zeroOutNullBytes(); longWriter.write(0, v); longWriter.getRow
  }
  private def stateKey(key: UnsafeRow, start: Long): UnsafeRow = toStateKey(joined(key, longRow(start)))

  override def streamTime: Long = time

  override def get(key: UnsafeRow, start: Long, into: WindowValue[UnsafeRow]): Boolean = {
    val v = store.get(stateKey(key, start))
    if (v == null) false
    else {
      into.agg = bufferOfValue(v).copy()
      into.maxTs = v.getLong(nBuffer)
      into.storedSize = v.getSizeInBytes
      true
    }
  }

  override def put(key: UnsafeRow, start: Long, w: WindowValue[UnsafeRow]): Unit = {
    val sk = stateKey(key, start)
    val value = toValue(joined(w.agg, longRow(w.maxTs)))
    if (!w.isStored) {
      index.add(w.end, sk)
      count += 1
      size += sk.getSizeInBytes.toLong + value.getSizeInBytes
    } else size += value.getSizeInBytes - w.storedSize
    store.put(sk, value)
    w.storedSize = value.getSizeInBytes
  }

  override def closeBefore(bound: Long, f: ClosedWindow[UnsafeRow, UnsafeRow]): Long = {
    var n = 0L
    index.drainBefore(bound) { (_, sk) =>
      val v = store.get(sk)
      if (v != null) {
        f.closed(keyOfStateKey(sk), sk.getLong(1), bufferOfValue(v), v.getLong(nBuffer))
        store.remove(sk)
        count -= 1
        size -= sk.getSizeInBytes.toLong + v.getSizeInBytes
        n += 1
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

object StoreWindowAggState {

  /**
   * A window's bytes as this state counts them (state key + value), for the heap state of batch
   * queries: the same limits then hold in both. `key` is the one-column key row, `agg` the
   * buffer row; the state key adds the start, the value the max timestamp.
   */
  def bytesOf(key: UnsafeRow, agg: UnsafeRow): Long = {
    val bitsetGrowth = UnsafeRow.calculateBitSetWidthInBytes(agg.numFields + 1) -
      UnsafeRow.calculateBitSetWidthInBytes(agg.numFields)
    key.getSizeInBytes.toLong + 8 + agg.getSizeInBytes + 8 + bitsetGrowth
  }
}
