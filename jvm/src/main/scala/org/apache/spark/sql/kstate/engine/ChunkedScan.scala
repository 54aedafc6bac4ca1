package org.apache.spark.sql.kstate.engine

/**
 * Key-ordered iteration over [from, until) of a store version, like [[MergedScan]], for callers
 * that usually read only the first few entries of a large range (the time-ordered buffer reading
 * its oldest records after every put). A [[MergedScan]] copies every uncommitted change in its
 * range when it opens; this one copies them in chunks (16, doubling up to 4096) and opens a
 * merged scan per chunk, bounded at the chunk's last change, so reading k entries costs O(k) plus
 * a seek, whatever the number of changes in the range.
 *
 * Not frozen: changes written between two chunks show through in the later one. Its callers read
 * a chunk's worth before they write.
 */
private[kstate] final class ChunkedScan(
    from: Array[Byte],
    until: Option[Array[Byte]],
    changesFrom: (Array[Byte], Int) => Array[(Array[Byte], Array[Byte])],
    dbScan: (Array[Byte], Option[Array[Byte]]) => StateScan
) extends Iterator[(Array[Byte], Array[Byte])] with AutoCloseable {
  import ChunkedScan._

  private var chunk = FirstChunk
  private var nextFrom = from
  private var lastChunk = false
  private var current: MergedScan = _
  openChunk()

  private def openChunk(): Unit = {
    val changes = changesFrom(nextFrom, chunk)
    // A full chunk may have stopped short of `until`: this scan ends at its last change.
    val bound = if (changes.length < chunk) { lastChunk = true; until }
    else Some(Bytes.successor(changes.last._1))
    current = new MergedScan(changes, dbScan(nextFrom, bound))
    nextFrom = bound.orNull
    chunk = math.min(chunk * 2, MaxChunk)
  }

  override def hasNext: Boolean = {
    while (!current.hasNext && !lastChunk) {
      current.close()
      openChunk()
    }
    current.hasNext
  }

  override def next(): (Array[Byte], Array[Byte]) = {
    if (!hasNext) throw new NoSuchElementException("end of state store scan")
    current.next()
  }

  override def close(): Unit = current.close()
}

private[kstate] object ChunkedScan {
  private val FirstChunk = 16
  private val MaxChunk = 4096
}
