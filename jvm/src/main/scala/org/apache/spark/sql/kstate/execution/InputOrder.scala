package org.apache.spark.sql.kstate.execution

import scala.collection.mutable

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow

/**
 * Puts the rows one state partition receives in one micro-batch into the order the operator
 * processes them ([[io.kstate.ProcessingOrder]] resolved for this plan), in bounded memory:
 * every order is a sort of the rows by a key, ties broken by input position (input partition,
 * then offset), done by Spark's external sorter ([[InputSorter]]).
 *
 *  - [[InputOrder.Listed]]: input partition, then offset (a static DataFrame's own order).
 *  - [[InputOrder.EventTime]]: event time (null = `Long.MinValue`, first), then position.
 *  - [[InputOrder.KafkaTask]]: a Kafka task's order: partitions' records in offset order,
 *    merged by smallest head timestamp, ties by lower partition. That merge equals a sort by
 *    each record's running maximum of event time within its input partition (up to and
 *    including it), then position: a record can only be taken once every record before it in
 *    its partition was, and a partition's head is taken when its timestamp is the smallest
 *    head, so the merge emits records in order of the largest timestamp their partition has
 *    reached. The running maximum needs each partition's rows in offset order; the shuffle
 *    delivers them that way (one map task per input partition writes its rows in order). If
 *    not, the rows are first sorted by position, then by running maximum.
 */
private[kstate] object InputOrder {
  sealed abstract class Resolved(val name: String) {
    override def toString: String = name
  }
  case object Listed extends Resolved("listed")
  case object EventTime extends Resolved("event_time")
  case object KafkaTask extends Resolved("task")

  /**
   * A cursor over rows in processing order with each row's event time. `row` is valid until
   * the next [[advance]]; a task that keeps it longer copies it.
   */
  abstract class Cursor {
    def hasNext: Boolean

    /** Moves to the next row; then `row` and `ts` describe it. */
    def advance(): Unit
    def row: UnsafeRow
    def ts: Long

    /** Bytes the ordering spilled to disk. */
    def spilledBytes: Long

    /** Frees memory and spill files; called by the cursor itself once it is exhausted. */
    def close(): Unit
  }

  /**
   * @param rows        UnsafeRows with `numFields` fields, incl. the two position fields
   * @param timestampOf event time of a row in ms, `Long.MinValue` when null
   * @param spillBytes  most bytes of rows held in memory before sorted runs go to disk
   */
  def apply(
      rows: Iterator[InternalRow],
      numFields: Int,
      partitionOrdinal: Int,
      offsetOrdinal: Int,
      timestampOf: InternalRow => Long,
      order: Resolved,
      spillBytes: Long
  ): Cursor = {
    if (!rows.hasNext) return Empty
    def newSorter() = new InputSorter(numFields, partitionOrdinal, offsetOrdinal, spillBytes)
    val sorter = newSorter()
    order match {
      case Listed =>
        rows.foreach { r => sorter.insert(r.asInstanceOf[UnsafeRow], r.getInt(partitionOrdinal).toLong) }
        new Sorted(sorter, timestampOf, 0L)
      case EventTime =>
        rows.foreach { r => sorter.insert(r.asInstanceOf[UnsafeRow], timestampOf(r)) }
        new Sorted(sorter, timestampOf, 0L) {
          override def ts: Long = sorted.key
        }
      case KafkaTask =>
        val runningMax = new RunningMax(partitionOrdinal, offsetOrdinal)
        rows.foreach { r => sorter.insert(r.asInstanceOf[UnsafeRow], runningMax(r, timestampOf(r))) }
        if (runningMax.inOffsetOrder) new Sorted(sorter, timestampOf, 0L)
        else {
          // re-sort: by position, then by running maximum over the rows in position order
          val byPosition = newSorter()
          drain(sorter) { r => byPosition.insert(r, r.getInt(partitionOrdinal).toLong) }
          val spilled = sorter.spilledBytes
          sorter.close()
          val fixed = newSorter()
          val max = new RunningMax(partitionOrdinal, offsetOrdinal)
          drain(byPosition) { r => fixed.insert(r, max(r, timestampOf(r))) }
          val spilled2 = spilled + byPosition.spilledBytes
          byPosition.close()
          new Sorted(fixed, timestampOf, spilled2)
        }
    }
  }

  private def drain(sorter: InputSorter)(f: UnsafeRow => Unit): Unit = {
    val it = sorter.sorted()
    while (it.hasNext) f(it.next())
  }

  /** Running maximum of event time per input partition, fed in arrival order. */
  private final class RunningMax(partitionOrdinal: Int, offsetOrdinal: Int) {
    private final class State(var lastOffset: Long, var max: Long)
    private val states = new mutable.HashMap[Int, State]
    private var last: State = _
    private var lastPartition = -1
    var inOffsetOrder = true

    def apply(r: InternalRow, ts: Long): Long = {
      val p = r.getInt(partitionOrdinal)
      val offset = r.getLong(offsetOrdinal)
      if (p != lastPartition || last == null) {
        last = states.getOrElseUpdate(p, new State(Long.MinValue, Long.MinValue))
        lastPartition = p
      }
      if (offset <= last.lastOffset) inOffsetOrder = false
      last.lastOffset = offset
      if (ts > last.max) last.max = ts
      last.max
    }
  }

  private object Empty extends Cursor {
    override def hasNext: Boolean = false
    override def advance(): Unit = throw new NoSuchElementException
    override def row: UnsafeRow = throw new NoSuchElementException
    override def ts: Long = throw new NoSuchElementException
    override def spilledBytes: Long = 0L
    override def close(): Unit = ()
  }

  private class Sorted(sorter: InputSorter, timestampOf: InternalRow => Long, spilledBefore: Long)
      extends Cursor {
    protected val sorted: InputSorter.Sorted = sorter.sorted()
    private var current: UnsafeRow = _
    private var closed = false
    override def hasNext: Boolean = {
      val more = !closed && sorted.hasNext
      if (!more) close()
      more
    }
    override def advance(): Unit = current = sorted.next()
    override def row: UnsafeRow = current
    override def ts: Long = timestampOf(current)
    override def spilledBytes: Long = spilledBefore + sorter.spilledBytes
    override def close(): Unit = if (!closed) {
      closed = true
      sorter.close()
    }
  }
}
