package org.apache.spark.sql.kstate.engine

/**
 * An iteration over a store version's entries in a column family in no particular order: the
 * version's written entries, then the working copy's committed entries that the version did not
 * change or delete. Both sides are captured when it is opened (see
 * `KStateStoreProvider.unorderedScan`), so writes made while iterating (Spark's operators remove
 * each expired key as they reach it) do not show through, and no key is handed out twice.
 *
 * It serves Spark's `iterator()` on plain-key families, whose order Spark's contract leaves
 * open (the HDFS provider iterates a hash map): a heap working copy then needs no sorted index.
 * Yields (key, value) arrays the caller may keep but must not change: the write set's own
 * (as [[MergedScan]] does) and the committed ones, which the working copy hands out as copies,
 * one at a time (see [[HeapState.entriesWithPrefix]]).
 */
private[kstate] final class UnorderedScan(
    changedKeys: Array[Array[Byte]],
    changedValues: Array[Array[Byte]],
    committed: Iterator[(Array[Byte], Array[Byte])]
) extends Iterator[(Array[Byte], Array[Byte])] with AutoCloseable {

  private var i = 0
  private var closed = false

  override def hasNext: Boolean = !closed && (i < changedKeys.length || committed.hasNext)

  override def next(): (Array[Byte], Array[Byte]) = {
    if (!hasNext) throw new NoSuchElementException("end of state store scan")
    if (i < changedKeys.length) {
      i += 1
      (changedKeys(i - 1), changedValues(i - 1))
    } else committed.next()
  }

  override def close(): Unit = closed = true
}
