package org.apache.spark.sql.kstate.execution

import java.util.PriorityQueue

import scala.collection.mutable

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow

/**
 * The order in which a kstate operator processes the rows one state partition receives.
 *
 * Streaming ([[TaskOrder.apply]] with `mergeByTimestamp`): the order of a Kafka task — each
 * input partition's records in offset order, merged across input partitions by taking, at each
 * step, the partition whose next record has the smallest timestamp (ties: lower partition
 * index; null timestamps count as smallest). Applied within each micro-batch.
 *
 * Batch DataFrames (`mergeByTimestamp = false`): DataFrame order — input partition index, then
 * offset — so a static DataFrame is processed exactly in the order its rows are listed.
 *
 * Rows are copied and held in memory for the partition's batch.
 */
object TaskOrder {
  private final class Queue(val partition: Int) {
    val offsets = new mutable.ArrayBuffer[Long]
    val timestamps = new mutable.ArrayBuffer[Long]
    val rows = new mutable.ArrayBuffer[UnsafeRow]
    var head = 0
    def headTs: Long = timestamps(head)

    def sortIfNeeded(): Unit = {
      val n = offsets.length
      var sorted = true
      var i = 1
      while (sorted && i < n) { sorted = offsets(i - 1) <= offsets(i); i += 1 }
      if (!sorted) {
        val idx = (0 until n).sortBy(offsets(_))
        val (o, t, r) = (idx.map(offsets), idx.map(timestamps), idx.map(rows))
        offsets.clear(); offsets ++= o
        timestamps.clear(); timestamps ++= t
        rows.clear(); rows ++= r
      }
    }
  }

  /** A cursor over rows in task order with each row's event time, computed once. */
  abstract class Cursor {
    def hasNext: Boolean
    /** Moves to the next row; then `row` and `ts` describe it. */
    def advance(): Unit
    def row: UnsafeRow
    def ts: Long
  }

  /**
   * @param timestampOf event time of a row in ms, `Long.MinValue` when null
   * @return a cursor over the rows (copies) in task order
   */
  def apply(
      rows: Iterator[InternalRow],
      partitionOrdinal: Int,
      offsetOrdinal: Int,
      timestampOf: InternalRow => Long,
      mergeByTimestamp: Boolean): Cursor = {
    val queues = mutable.LinkedHashMap.empty[Int, Queue]
    rows.foreach { r =>
      val p = r.getInt(partitionOrdinal)
      val q = queues.getOrElseUpdate(p, new Queue(p))
      q.offsets += r.getLong(offsetOrdinal)
      q.timestamps += timestampOf(r)
      q.rows += r.asInstanceOf[UnsafeRow].copy()
    }
    queues.valuesIterator.foreach(_.sortIfNeeded())
    if (!mergeByTimestamp || queues.size == 1) new Concatenated(queues.values.toSeq.sortBy(_.partition))
    else new Merged(queues.values.toSeq)
  }

  /** Queue after queue (DataFrame order). */
  private final class Concatenated(queues: Seq[Queue]) extends Cursor {
    private var i = 0
    private var current: Queue = _
    private var at = -1
    private def skipEmpty(): Unit = while (i < queues.length && queues(i).head >= queues(i).rows.length) i += 1
    skipEmpty()
    override def hasNext: Boolean = i < queues.length
    override def advance(): Unit = {
      current = queues(i)
      at = current.head
      current.head += 1
      skipEmpty()
    }
    override def row: UnsafeRow = current.rows(at)
    override def ts: Long = current.timestamps(at)
  }

  /** Smallest head timestamp first (a Kafka task's choice among its input partitions). */
  private final class Merged(queues: Seq[Queue]) extends Cursor {
    private val heap = new PriorityQueue[Queue]((a: Queue, b: Queue) => {
      val c = java.lang.Long.compare(a.headTs, b.headTs)
      if (c != 0) c else Integer.compare(a.partition, b.partition)
    })
    queues.foreach(heap.add)
    private var current: Queue = _
    private var at = -1
    override def hasNext: Boolean = !heap.isEmpty
    override def advance(): Unit = {
      current = heap.poll()
      at = current.head
      current.head += 1
      if (current.head < current.rows.length) heap.add(current)
    }
    override def row: UnsafeRow = current.rows(at)
    override def ts: Long = current.timestamps(at)
  }
}
