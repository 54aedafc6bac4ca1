package org.apache.spark.sql.kstate.execution

import java.util.PriorityQueue

import scala.collection.mutable

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow

/**
 * Restores the order in which a Kafka task processes records: each input partition's records
 * in offset order, merged across input partitions by taking, at each step, the partition whose
 * next record has the smallest timestamp (ties: lower partition index). Null timestamps sort
 * first at their partition's head. Within one micro-batch; rows are copied and held in memory.
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

  /**
   * @param timestampOf event time of a row in ms, `Long.MinValue` when null
   * @return the rows (copies) in task order
   */
  def apply(
      rows: Iterator[InternalRow],
      partitionOrdinal: Int,
      offsetOrdinal: Int,
      timestampOf: InternalRow => Long): Iterator[UnsafeRow] = {
    val queues = mutable.LinkedHashMap.empty[Int, Queue]
    rows.foreach { r =>
      val p = r.getInt(partitionOrdinal)
      val q = queues.getOrElseUpdate(p, new Queue(p))
      q.offsets += r.getLong(offsetOrdinal)
      q.timestamps += timestampOf(r)
      q.rows += r.asInstanceOf[UnsafeRow].copy()
    }
    if (queues.size == 1) {
      val q = queues.head._2
      q.sortIfNeeded()
      return q.rows.iterator
    }
    val heap = new PriorityQueue[Queue]((a: Queue, b: Queue) => {
      val c = java.lang.Long.compare(a.headTs, b.headTs)
      if (c != 0) c else Integer.compare(a.partition, b.partition)
    })
    queues.valuesIterator.foreach { q => q.sortIfNeeded(); heap.add(q) }
    new Iterator[UnsafeRow] {
      override def hasNext: Boolean = !heap.isEmpty
      override def next(): UnsafeRow = {
        val q = heap.poll()
        val row = q.rows(q.head)
        q.rows(q.head) = null
        q.head += 1
        if (q.head < q.rows.length) heap.add(q)
        row
      }
    }
  }
}
