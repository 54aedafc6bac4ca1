package org.apache.spark.sql.kstate.execution

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.kstate.shim.SorterShim
import org.apache.spark.util.collection.unsafe.sort.{PrefixComparators, RecordComparator, UnsafeExternalSorter}

/**
 * Sorts the rows of one task by a long key, ties broken by input position, with Spark's
 * external sorter: rows are copied into pages of the task's execution memory (not the heap),
 * and sorted runs spill to local disk when the task memory manager denies more memory or the
 * rows held exceed `spillBytes`; reading merges the runs lazily.
 *
 * Life cycle: [[insert]] any number of times, then [[sorted]] once, read it to its end; then
 * [[close]] (also registered on task completion, so a failed task frees its memory and files).
 * Must be used inside a Spark task, by one thread.
 *
 * @param numFields         fields of the rows inserted
 * @param partitionOrdinal  INT field: input partition index (first tie-breaker)
 * @param offsetOrdinal     LONG field: position in the input partition (second tie-breaker)
 */
private[kstate] final class InputSorter(
    numFields: Int,
    partitionOrdinal: Int,
    offsetOrdinal: Int,
    spillBytes: Long
) {

  private val sorter: UnsafeExternalSorter = SorterShim.newSorter(
    () => new PositionComparator,
    PrefixComparators.LONG,
    spillBytes
  )

  /** Copies `row` into the sorter under `key` (signed order). */
  def insert(row: UnsafeRow, key: Long): Unit = {
    sorter.insertRecord(row.getBaseObject, row.getBaseOffset, row.getSizeInBytes, key, false)
  }

  /** Bytes written to disk by spills so far. */
  def spilledBytes: Long = sorter.getSpillSize

  /**
   * The rows in (key, partition, offset) order. The row handed out is reused: it is valid until
   * the next [[InputSorter.Sorted.next]].
   */
  def sorted(): InputSorter.Sorted = new InputSorter.Sorted {
    private val it = sorter.getSortedIterator
    private val row = new UnsafeRow(numFields)
    private var k = 0L
    override def hasNext: Boolean = it.hasNext
    override def next(): UnsafeRow = {
      it.loadNext()
      row.pointTo(it.getBaseObject, it.getBaseOffset, it.getRecordLength)
      k = it.getKeyPrefix
      row
    }
    override def key: Long = k
  }

  /** Frees the sorter's memory and deletes its spill files. Idempotent. */
  def close(): Unit = sorter.cleanupResources()

  /** Compares two records of equal key by input partition, then offset. */
  private final class PositionComparator extends RecordComparator {
    private val l = new UnsafeRow(numFields)
    private val r = new UnsafeRow(numFields)
    override def compare(lb: AnyRef, lo: Long, ll: Int, rb: AnyRef, ro: Long, rl: Int): Int = {
      l.pointTo(lb, lo, ll)
      r.pointTo(rb, ro, rl)
      val c = Integer.compare(l.getInt(partitionOrdinal), r.getInt(partitionOrdinal))
      if (c != 0) c else java.lang.Long.compare(l.getLong(offsetOrdinal), r.getLong(offsetOrdinal))
    }
  }
}

private[kstate] object InputSorter {

  /** Sorted rows; `key` is the sort key of the row `next` returned last. */
  abstract class Sorted extends Iterator[UnsafeRow] {
    def key: Long
  }
}
