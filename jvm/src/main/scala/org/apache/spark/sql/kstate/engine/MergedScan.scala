package org.apache.spark.sql.kstate.engine

/**
 * Key-ordered iteration over a store version: the committed entries of the working copy's scan
 * merged with the version's uncommitted changes. A change replaces the committed entry with the
 * same key; a delete hides it. Yields (key bytes, value bytes); closes the database scan when
 * exhausted or on `close()`.
 */
private[kstate] final class MergedScan(
    changes: Array[(Array[Byte], Array[Byte])],
    db: StateScan
) extends Iterator[(Array[Byte], Array[Byte])] with AutoCloseable {

  private var ci = 0
  private var nextItem: (Array[Byte], Array[Byte]) = _

  /** The committed scan's current key, read once per position (null: exhausted). */
  private var dbKey: Array[Byte] = _
  moveDb(first = true)
  advance()

  private def moveDb(first: Boolean): Unit = {
    if (!first) db.next()
    dbKey = if (db.valid) db.key else null
  }

  private def advance(): Unit = {
    nextItem = null
    while (nextItem == null && (ci < changes.length || dbKey != null)) {
      val cmp =
        if (ci >= changes.length) 1
        else if (dbKey == null) -1
        else Bytes.Order.compare(changes(ci)._1, dbKey)
      if (cmp <= 0) {
        val (k, v) = changes(ci)
        ci += 1
        if (cmp == 0) moveDb(first = false)
        if (!(v eq WriteSet.Deleted)) nextItem = (k, v)
      } else {
        nextItem = (dbKey, db.value)
        moveDb(first = false)
      }
    }
    if (nextItem == null) db.close()
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
