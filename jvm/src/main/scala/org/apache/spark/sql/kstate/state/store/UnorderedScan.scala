package org.apache.spark.sql.kstate.state.store

import java.util.HashMap

/**
 * Iteration over a store version in no particular order: the committed entries of the database
 * scan that this version did not change, then this version's writes. Cheaper than
 * [[MergedScan]] because the changes need no sorting; used where the StateStore contract
 * promises no order (whole-family iteration with plain keys). `changes` is a copy taken when
 * the scan starts, so writes during iteration do not affect it.
 */
private[kstate] final class UnorderedScan(
    changes: HashMap[WriteSet.Key, Array[Byte]],
    db: DbScan) extends Iterator[(Array[Byte], Array[Byte])] with AutoCloseable {

  private val written = changes.entrySet().iterator()
  private var nextItem: (Array[Byte], Array[Byte]) = _
  advance()

  private def advance(): Unit = {
    nextItem = null
    while (nextItem == null && db.valid) {
      val k = db.key
      if (!changes.containsKey(new WriteSet.Key(k))) nextItem = (k, db.value)
      db.next()
    }
    if (nextItem == null) {
      db.close()
      while (nextItem == null && written.hasNext) {
        val e = written.next()
        if (!(e.getValue eq WriteSet.Deleted)) nextItem = (e.getKey.bytes, e.getValue)
      }
    }
  }

  override def hasNext: Boolean = nextItem != null

  override def next(): (Array[Byte], Array[Byte]) = {
    if (nextItem == null) throw new NoSuchElementException("end of state store scan")
    val out = nextItem
    advance()
    out
  }

  override def close(): Unit = db.close()
}
