package org.apache.spark.sql.kstate.state.store

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
 * (as [[MergedScan]] does) and the committed ones, which the working copy handed out as copies
 * (see [[HeapState.entriesWithPrefix]]).
 */
private[kstate] final class UnorderedScan(
    changedKeys: Array[Array[Byte]],
    changedValues: Array[Array[Byte]],
    committedKeys: Array[Array[Byte]],
    committedValues: Array[Array[Byte]]) extends Iterator[(Array[Byte], Array[Byte])] with AutoCloseable {

  private var i = 0
  private val total = changedKeys.length + committedKeys.length

  override def hasNext: Boolean = i < total

  override def next(): (Array[Byte], Array[Byte]) = {
    if (i >= total) throw new NoSuchElementException("end of state store scan")
    val out =
      if (i < changedKeys.length) (changedKeys(i), changedValues(i))
      else {
        val j = i - changedKeys.length
        (committedKeys(j), committedValues(j))
      }
    i += 1
    out
  }

  override def close(): Unit = i = total
}
