package org.apache.spark.sql.kstate.operatorstate

import java.nio.ByteBuffer

/**
 * The directory a versioned store's latest entry keeps of its key's history: the validFrom
 * timestamps of the key's newest history versions, newest first, at most [[HistoryDirectory.Max]],
 * and `truncated`: the key may have older history versions than the oldest listed, not listed.
 *
 * Versions are contiguous, so the directory also gives each listed version's validTo: the next
 * newer listed validFrom, or the latest version's for the newest. A question about a time the
 * directory [[covers]] is answered from it alone (and a point read of the one history entry it
 * names); a time older than every listed version of a truncated directory needs the history.
 *
 * Encoded in the latest entry as `dir:1` (bit 7 truncated, bits 0-6 the count) and then
 * `from:8` per listed version. Immutable.
 */
private[kstate] final class HistoryDirectory private (private val froms: Array[Long], val truncated: Boolean) {
  def size: Int = froms.length

  /** The i-th newest listed validFrom. */
  def from(i: Int): Long = froms(i)

  /** The directory alone knows the history versions from `ts` on (and the floor version of `ts`). */
  def covers(ts: Long): Boolean = !truncated || (froms.nonEmpty && ts >= froms(froms.length - 1))

  /** The index of the newest listed version with validFrom <= `ts`, or -1. */
  def floorIndex(ts: Long): Int = {
    var i = 0
    while (i < froms.length && froms(i) > ts) i += 1
    if (i == froms.length) -1 else i
  }

  /** The validTo of the i-th listed version: the next newer one's validFrom, or the latest's. */
  def validTo(i: Int, latestFrom: Long): Long = if (i == 0) latestFrom else froms(i - 1)

  /** The smallest listed validFrom > `ts`, else `latestFrom` (meaningful when it [[covers]] `ts`). */
  def nextFrom(ts: Long, latestFrom: Long): Long = {
    val i = floorIndex(ts)
    validTo(if (i < 0) froms.length else i, latestFrom)
  }

  /**
   * With a version at `ts` added to the history (none listed at `ts`): listed in order when it is
   * among the newest [[HistoryDirectory.Max]], the oldest listed dropped past the end (setting
   * `truncated`); this directory when `ts` is older than the oldest listed of a truncated one.
   */
  def inserted(ts: Long): HistoryDirectory =
    if (!covers(ts)) this
    else {
      val i = floorIndex(ts)
      val at = if (i < 0) froms.length else i
      val all = new Array[Long](froms.length + 1)
      System.arraycopy(froms, 0, all, 0, at)
      all(at) = ts
      System.arraycopy(froms, at, all, at + 1, froms.length - at)
      HistoryDirectory.newestOf(all, truncated)
    }

  /**
   * The listed versions ending before `bound` (validTo < bound, the oldest ones), and the
   * directory without them.
   */
  def expiredBefore(bound: Long, latestFrom: Long): (Array[Long], HistoryDirectory) = {
    var keep = froms.length
    while (keep > 0 && validTo(keep - 1, latestFrom) < bound) keep -= 1
    (
      java.util.Arrays.copyOfRange(froms, keep, froms.length),
      if (keep == froms.length) this else new HistoryDirectory(java.util.Arrays.copyOf(froms, keep), truncated)
    )
  }

  /** Bytes [[writeTo]] writes. */
  def encodedSize: Int = 1 + 8 * froms.length

  def writeTo(b: ByteBuffer): ByteBuffer = {
    b.put(((if (truncated) 0x80 else 0) | froms.length).toByte)
    froms.foreach(b.putLong)
    b
  }

  override def equals(o: Any): Boolean = o match {
    case d: HistoryDirectory => d.truncated == truncated && java.util.Arrays.equals(d.froms, froms)
    case _ => false
  }
  override def hashCode: Int = java.util.Arrays.hashCode(froms) * 31 + truncated.hashCode
  override def toString: String = froms.mkString("[", ", ", if (truncated) ", ...]" else "]")
}

private[kstate] object HistoryDirectory {

  /** Listed versions at most (`DirectoryMax`). */
  val Max = 16

  val Empty = new HistoryDirectory(Array.emptyLongArray, false)

  /** The newest [[Max]] of `newestFirst`, truncated when more were given or `more`. */
  def newestOf(newestFirst: Array[Long], more: Boolean): HistoryDirectory =
    if (newestFirst.length <= Max) new HistoryDirectory(newestFirst, more)
    else new HistoryDirectory(java.util.Arrays.copyOf(newestFirst, Max), true)

  /** The count byte's directory size, for skipping it. */
  def sizeOf(countByte: Byte): Int = countByte & 0x7f
  def truncatedIn(countByte: Byte): Boolean = (countByte & 0x80) != 0

  /** The directory encoded at `offset` of `b`. */
  def readFrom(b: Array[Byte], offset: Int): HistoryDirectory = {
    val n = sizeOf(b(offset))
    if (n == 0 && !truncatedIn(b(offset))) Empty
    else {
      val bb = ByteBuffer.wrap(b)
      new HistoryDirectory(Array.tabulate(n)(i => bb.getLong(offset + 1 + 8 * i)), truncatedIn(b(offset)))
    }
  }
}
