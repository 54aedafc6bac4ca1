package org.apache.spark.sql.kstate.provider

/**
 * Where a provider keeps its working copy: on the heap while it fits, else in RocksDB.
 *
 *  - `heapStateLimit` (`spark.sql.streaming.stateStore.kstate.heapStateBytes`): the executor's
 *    budget for all heap working copies; 0 = always RocksDB.
 *  - A store whose structure bounds its heap (the time-ordered buffer with spill-to-disk) sets
 *    a bound ([[bound]]): its committed copy may stay on the heap while it takes at most half
 *    of it; once it outgrew that, the provider keeps it in RocksDB for good ([[leaveHeap]]),
 *    restores included.
 *
 * Threading: changed under the provider's lock; `boundBytes` is volatile because the task
 * thread reads it on every write (the write set's spill check) without the lock.
 */
private[kstate] final class TieringPolicy(val heapStateLimit: Long) {
  @volatile private var boundBytes: Long = Long.MaxValue
  private var heapAllowed = true

  /** Whether a restore starts its working copy on the heap. */
  def startsOnHeap: Boolean = heapStateLimit > 0 && heapAllowed

  def bound(maxBytes: Long): Unit = boundBytes = math.min(boundBytes, maxBytes)

  def bounded: Boolean = boundBytes != Long.MaxValue

  /** Whether a heap copy of `heapBytes` is within the store's own bound (always when unbounded). */
  def admits(heapBytes: Long): Boolean = heapBytes <= boundBytes / 2

  /** Whether `copy` is on the heap but outgrew the bound; if so, later restores go to RocksDB. */
  def leaveHeap(copy: WorkingCopy): Boolean =
    if (bounded && copy.onHeap && !admits(copy.heapBytes)) { heapAllowed = false; true }
    else false
}
