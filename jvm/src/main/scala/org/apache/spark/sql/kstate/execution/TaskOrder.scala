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

  /**
   * @param timestampOf event time of a row in ms, `Long.MinValue` when null
   * @return the rows (copies) in task order
   */
  def apply(
      rows: Iterator[InternalRow],
      partitionOrdinal: Int,
      offsetOrdinal: Int,
      timestampOf: InternalRow => Long,
      mergeByTimestamp: Boolean): Iterator[UnsafeRow] = {
    val queues = mutable.LinkedHashMap.empty[Int, Queue]
    rows.foreach { r =>
      val p = r.getInt(partitionOrdinal)
      val q = queues.getOrElseUpdate(p, new Queue(p))
      q.offsets += r.getLong(offsetOrdinal)
      q.timestamps += timestampOf(r)
      q.rows += r.asInstanceOf[UnsafeRow].copy()
    }
    if (!mergeByTimestamp || queues.size == 1) {
      val ordered = queues.values.toSeq.sortBy(_.partition)
      ordered.foreach(_.sortIfNeeded())
      return ordered.iterator.flatMap(_.rows)
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
