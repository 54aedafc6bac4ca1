package org.apache.spark.sql.kstate.operatorstate

import java.nio.ByteBuffer

/**
 * The newest history versions of one key of a [[VersionedKeyValueStore]], kept inside the key's
 * latest entry with their values: at most [[RecentHistory.Max]], newest first, and `truncated`:
 * the key may have older history versions, each in an entry of its own in the history family.
 * Every version held here is newer than every version there.
 *
 * Versions are contiguous, so each version's validTo is its newer neighbour's validFrom (the
 * latest version's for the newest). Example: versions at 10, 20, 30 and the latest at 40 hold
 * [30, 20, 10] here, not truncated: the version at 20 is valid to 30, and a question about any
 * time from 10 on is answered from the latest entry alone.
 *
 * Encoding, after the latest entry's header (layout 3 of the store):
 * {{{
 *   dir:1  (bit 7 truncated, bit 6 set, bits 0-5 the count n)
 *   n times, newest first:  delta:varint  vlen:varint  value
 * }}}
 * `delta` is the newer neighbour's validFrom minus this version's (always positive, so a few
 * bytes); `vlen` is the value's length plus one, 0 for a tombstone. A version moving from the
 * latest entry to the front of this list leaves the others' bytes unchanged, so the common put
 * copies them without decoding them ([[VersionedKeyValueStore]]).
 *
 * Layout 2 (bit 6 clear) listed only the validFrom of up to 16 history versions (`from:8` each),
 * every version stored in the history family. [[readFrom]] reads such an entry as holding no
 * versions, truncated when the key has history: every question about it goes to the history
 * family, which holds all of its versions, and the entry is written in layout 3 when it next
 * changes.
 *
 * Immutable; values are shared, never copied or changed.
 */
private[kstate] final class RecentHistory private (
    private val froms: Array[Long],
    private val values: Array[Array[Byte]],
    val truncated: Boolean
) {
  def size: Int = froms.length

  /** The i-th newest version's validFrom. */
  def from(i: Int): Long = froms(i)

  /** The i-th newest version's value, null for a tombstone. */
  def value(i: Int): Array[Byte] = values(i)

  /** The held versions answer every question about a time from `ts` on (and its floor version). */
  def covers(ts: Long): Boolean = !truncated || (froms.nonEmpty && ts >= froms(froms.length - 1))

  /** The index of the newest version with validFrom <= `ts`, or -1. */
  def floorIndex(ts: Long): Int = {
    var i = 0
    while (i < froms.length && froms(i) > ts) i += 1
    if (i == froms.length) -1 else i
  }

  /** The validTo of the i-th version: the next newer one's validFrom, or the latest's. */
  def validTo(i: Int, latestFrom: Long): Long = if (i == 0) latestFrom else froms(i - 1)

  /** The smallest held validFrom > `ts`, else `latestFrom`. */
  def nextFrom(ts: Long, latestFrom: Long): Long = {
    val i = floorIndex(ts)
    validTo(if (i < 0) froms.length else i, latestFrom)
  }

  /** The oldest held validFrom, else `latestFrom`. */
  def oldestFrom(latestFrom: Long): Long = if (froms.isEmpty) latestFrom else froms(froms.length - 1)

  /** With the value of the version at index `i` replaced. */
  def replaced(i: Int, value: Array[Byte]): RecentHistory =
    new RecentHistory(froms, values.updated(i, value), truncated)

  /**
   * With a version at `ts` (none held at `ts`, and [[covers]] `ts`) inserted in order; it may hold
   * one more than [[RecentHistory.Max]] until the caller moves the oldest out ([[withoutOldest]]).
   */
  def inserted(ts: Long, value: Array[Byte]): RecentHistory = {
    val i = floorIndex(ts)
    val at = if (i < 0) froms.length else i
    val f = new Array[Long](froms.length + 1)
    val v = new Array[Array[Byte]](froms.length + 1)
    System.arraycopy(froms, 0, f, 0, at); System.arraycopy(values, 0, v, 0, at)
    f(at) = ts; v(at) = value
    System.arraycopy(froms, at, f, at + 1, froms.length - at)
    System.arraycopy(values, at, v, at + 1, froms.length - at)
    new RecentHistory(f, v, truncated)
  }

  /** Whether the key has no history version at all. */
  def isEmpty: Boolean = froms.isEmpty && !truncated

  /** How many of the oldest versions end before `bound` (validTo < bound). */
  def expiredBefore(bound: Long, latestFrom: Long): Int = {
    var keep = froms.length
    while (keep > 0 && validTo(keep - 1, latestFrom) < bound) keep -= 1
    froms.length - keep
  }

  /** Without the `n` oldest versions, and not truncated when `stillTruncated` is false. */
  def withoutOldest(n: Int, stillTruncated: Boolean): RecentHistory =
    if (n == 0 && stillTruncated == truncated) this
    else
      new RecentHistory(
        java.util.Arrays.copyOf(froms, froms.length - n),
        java.util.Arrays.copyOf(values, froms.length - n),
        stillTruncated
      )

  /** With every value (not tombstones) rewritten by `f`. */
  def mapValues(f: Array[Byte] => Array[Byte]): RecentHistory =
    new RecentHistory(froms, values.map(v => if (v == null) null else f(v)), truncated)

  /** Bytes [[writeTo]] writes after a latest version at `latestFrom`. */
  def encodedSize(latestFrom: Long): Int = {
    var n = 1
    var newer = latestFrom
    var i = 0
    while (i < froms.length) {
      n += RecentHistory.varLongSize(newer - froms(i)) + RecentHistory.varLongSize(vlen(i)) +
        (if (values(i) == null) 0 else values(i).length)
      newer = froms(i)
      i += 1
    }
    n
  }

  def writeTo(b: ByteBuffer, latestFrom: Long): ByteBuffer = {
    b.put(RecentHistory.dirByte(froms.length, truncated))
    var newer = latestFrom
    var i = 0
    while (i < froms.length) {
      RecentHistory.putVarLong(b, newer - froms(i))
      RecentHistory.putVarLong(b, vlen(i))
      if (values(i) != null) b.put(values(i))
      newer = froms(i)
      i += 1
    }
    b
  }

  private def vlen(i: Int): Long = if (values(i) == null) 0L else values(i).length + 1L

  override def equals(o: Any): Boolean = o match {
    case h: RecentHistory =>
      h.truncated == truncated && java.util.Arrays.equals(h.froms, froms) &&
      froms.indices.forall(i => java.util.Arrays.equals(h.values(i), values(i)))
    case _ => false
  }
  override def hashCode: Int = java.util.Arrays.hashCode(froms) * 31 + truncated.hashCode
  override def toString: String = froms.mkString("[", ", ", if (truncated) ", ...]" else "]")
}

private[kstate] object RecentHistory {

  /** Versions held at most. */
  val Max = 16

  val Empty = new RecentHistory(Array.emptyLongArray, new Array[Array[Byte]](0), false)

  /** No version held, older ones in the history family. */
  private val TruncatedEmpty = new RecentHistory(Array.emptyLongArray, new Array[Array[Byte]](0), true)

  /** Held versions from validFroms (newest first) and values (null: tombstone). */
  def of(newestFirst: Array[Long], values: Array[Array[Byte]], truncated: Boolean): RecentHistory = {
    require(newestFirst.length == values.length && newestFirst.length <= Max)
    new RecentHistory(newestFirst, values, truncated)
  }

  private val Layout3Bit = 0x40
  private val TruncatedBit = 0x80

  /** The count byte of `n` versions held (layout 3). */
  def dirByte(n: Int, truncated: Boolean): Byte =
    ((if (truncated) TruncatedBit else 0) | Layout3Bit | n).toByte

  /** Whether the latest entry's directory byte `dir` is layout 2's (validFroms only). */
  def isLayout2(dir: Byte): Boolean = (dir & Layout3Bit) == 0

  /** The count byte's number of versions held (layout 3) or listed (layout 2). */
  def sizeOf(dir: Byte): Int = dir & 0x3f

  def truncatedIn(dir: Byte): Boolean = (dir & TruncatedBit) != 0

  /** The offset in `b` just after the history encoded at `offset` (the latest value's start). */
  def endOf(b: Array[Byte], offset: Int): Int = {
    val n = sizeOf(b(offset))
    if (isLayout2(b(offset))) offset + 1 + 8 * n
    else {
      var p = offset + 1
      var i = 0
      while (i < n) {
        p = skipVarLong(b, p)
        val len = getVarLong(b, p)
        p = skipVarLong(b, p) + (if (len == 0) 0 else (len - 1).toInt)
        i += 1
      }
      p
    }
  }

  /**
   * The offset in `b` of the oldest held version's bytes of the layout 3 history at `offset`
   * (`sizeOf` > 0), and that version's validFrom and value (`latestFrom`: the latest entry's).
   */
  final class Oldest(val offset: Int, val from: Long, val validTo: Long, val value: Array[Byte])

  def oldestIn(b: Array[Byte], offset: Int, latestFrom: Long): Oldest = {
    val n = sizeOf(b(offset))
    var p = offset + 1
    var newer = latestFrom
    var validTo = latestFrom
    var i = 0
    var start = p
    var value: Array[Byte] = null
    while (i < n) {
      start = p
      val from = newer - getVarLong(b, p)
      p = skipVarLong(b, p)
      val len = getVarLong(b, p)
      p = skipVarLong(b, p)
      value = if (len == 0) null else java.util.Arrays.copyOfRange(b, p, p + (len - 1).toInt)
      p += (if (len == 0) 0 else (len - 1).toInt)
      validTo = newer
      newer = from
      i += 1
    }
    new Oldest(start, newer, validTo, value)
  }

  /**
   * The history encoded at `offset` of `b`, after a latest version at `latestFrom`; a layout 2
   * directory reads as no versions held, truncated when it listed any or was truncated.
   */
  def readFrom(b: Array[Byte], offset: Int, latestFrom: Long): RecentHistory = {
    val dir = b(offset)
    val n = sizeOf(dir)
    if (isLayout2(dir)) { if (n == 0 && !truncatedIn(dir)) Empty else TruncatedEmpty }
    else if (n == 0) { if (truncatedIn(dir)) TruncatedEmpty else Empty }
    else {
      val froms = new Array[Long](n)
      val values = new Array[Array[Byte]](n)
      var p = offset + 1
      var newer = latestFrom
      var i = 0
      while (i < n) {
        froms(i) = newer - getVarLong(b, p)
        p = skipVarLong(b, p)
        val len = getVarLong(b, p)
        p = skipVarLong(b, p)
        if (len != 0) {
          values(i) = java.util.Arrays.copyOfRange(b, p, p + (len - 1).toInt)
          p += (len - 1).toInt
        }
        newer = froms(i)
        i += 1
      }
      new RecentHistory(froms, values, truncatedIn(dir))
    }
  }

  // ---- unsigned LEB128 varints ---------------------------------------------------------------

  def varLongSize(v: Long): Int = {
    var n = 1
    var x = v >>> 7
    while (x != 0) { n += 1; x >>>= 7 }
    n
  }

  def putVarLong(b: ByteBuffer, v: Long): Unit = {
    var x = v
    while ((x & ~0x7fL) != 0) { b.put(((x & 0x7f) | 0x80).toByte); x >>>= 7 }
    b.put(x.toByte)
  }

  def getVarLong(b: Array[Byte], offset: Int): Long = {
    var result = 0L
    var shift = 0
    var p = offset
    var more = true
    while (more) {
      val byte = b(p)
      result |= (byte & 0x7fL) << shift
      shift += 7
      p += 1
      more = (byte & 0x80) != 0
    }
    result
  }

  def skipVarLong(b: Array[Byte], offset: Int): Int = {
    var p = offset
    while ((b(p) & 0x80) != 0) p += 1
    p + 1
  }
}
