package org.apache.spark.sql.kstate.engine

import java.util.Arrays

import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.hash.Murmur3_x86_32

/**
 * The bytes of the heap working copy's entries ([[HeapState]]), packed into large pages instead
 * of two small arrays per entry. A state of millions of entries is then a few hundred page
 * arrays to the garbage collector: pages of [[EntryArena.PageBytes]] are allocated straight into
 * G1's old generation (humongous objects) and never copied, so young collections no longer copy
 * and promote every committed entry, which made them the main cost of a large heap state.
 *
 * An entry is one record, addressed by a `long` (page number in the high 32 bits, offset in the
 * low 32):
 * {{{
 *   key length:4 | value length:4 | key bytes | value bytes      (lengths in native order)
 * }}}
 *
 * Rules:
 *  - Records are only appended, never changed: a replaced or deleted entry's record stays where
 *    it was (garbage) until the owner compacts, copying the live records into a new arena
 *    ([[copyOf]]) and dropping this one. So a reader that captured the page table ([[pages]])
 *    reads the records it knew, whatever is appended or compacted later (frozen scans, like a
 *    RocksDB snapshot).
 *  - The page table is replaced, never modified in place, when a page is added.
 *  - Pages grow geometrically from [[EntryArena.MinPageBytes]] (or the expected size given) to
 *    [[EntryArena.PageBytes]], so a small state holds a few kilobytes, not a megabyte. A record
 *    larger than the page size gets a page of its own, of its size.
 *  - Readers are static methods on a captured page table, so a frozen scan and the live state
 *    read the same way. Reads hand out copies.
 *  - Not thread-safe.
 */
private[kstate] final class EntryArena(expectedBytes: Long = 0L) {
  import EntryArena._

  private var table: Array[Array[Byte]] = new Array[Array[Byte]](0)
  private var page: Array[Byte] = _
  private var pageNo = -1
  private var pos = 0
  private var allocated = 0L
  private var used = 0L

  /** The current page table, for readers (see the class rules). */
  def pages: Array[Array[Byte]] = table

  /** Heap bytes of the pages (their full lengths, unused tails included). */
  def allocatedBytes: Long = allocated

  /** Bytes of all records appended (live or garbage). */
  def usedBytes: Long = used

  /** Appends a record of `key` and `value`; returns its address. */
  def append(key: Array[Byte], value: Array[Byte]): Long =
    append(key, 0, key.length, value, 0, value.length)

  /** Appends a copy of the record at `addr` of another arena's `from` pages; returns its address. */
  def copyOf(from: Array[Array[Byte]], addr: Long): Long = {
    val p = from(pageOf(addr))
    val o = offsetOf(addr)
    val kLen = keyLengthAt(p, o)
    append(p, o + HeaderBytes, kLen, p, o + HeaderBytes + kLen, valueLengthAt(p, o))
  }

  private def append(k: Array[Byte], kOff: Int, kLen: Int, v: Array[Byte], vOff: Int, vLen: Int): Long = {
    val size = HeaderBytes + kLen + vLen
    if (page == null || page.length - pos < size) newPage(size)
    Platform.putInt(page, Platform.BYTE_ARRAY_OFFSET + pos, kLen)
    Platform.putInt(page, Platform.BYTE_ARRAY_OFFSET + pos + 4, vLen)
    System.arraycopy(k, kOff, page, pos + HeaderBytes, kLen)
    System.arraycopy(v, vOff, page, pos + HeaderBytes + kLen, vLen)
    val addr = (pageNo.toLong << 32) | pos
    pos += size
    used += size
    addr
  }

  private def newPage(size: Int): Unit = {
    val grown = if (page == null) math.max(expectedBytes, allocated) else allocated
    page = new Array[Byte](math.max(size, math.min(PageBytes.toLong, math.max(MinPageBytes.toLong, grown)).toInt))
    pageNo = table.length
    pos = 0
    table = Arrays.copyOf(table, table.length + 1)
    table(pageNo) = page
    allocated += arrayBytes(page.length)
  }
}

private[kstate] object EntryArena {

  /** Page size: at least half a G1 region of a heap up to 32 GB, so pages are humongous. */
  final val PageBytes: Int = 1 << 20

  /** The first page's size when nothing is expected. */
  final val MinPageBytes: Int = 4096
  final val HeaderBytes = 8

  def pageOf(addr: Long): Int = (addr >>> 32).toInt
  def offsetOf(addr: Long): Int = addr.toInt

  /** Heap bytes a record of these lengths takes in a page. */
  def recordBytes(keyLength: Int, valueLength: Int): Long = HeaderBytes.toLong + keyLength + valueLength

  private def arrayBytes(length: Int): Long = 16L + ((length + 7L) & ~7L)

  private def keyLengthAt(p: Array[Byte], o: Int): Int = Platform.getInt(p, Platform.BYTE_ARRAY_OFFSET + o)
  private def valueLengthAt(p: Array[Byte], o: Int): Int = Platform.getInt(p, Platform.BYTE_ARRAY_OFFSET + o + 4)

  def keyLength(pages: Array[Array[Byte]], addr: Long): Int = keyLengthAt(pages(pageOf(addr)), offsetOf(addr))

  def valueLength(pages: Array[Array[Byte]], addr: Long): Int = valueLengthAt(pages(pageOf(addr)), offsetOf(addr))

  def recordBytes(pages: Array[Array[Byte]], addr: Long): Long = {
    val p = pages(pageOf(addr)); val o = offsetOf(addr)
    recordBytes(keyLengthAt(p, o), valueLengthAt(p, o))
  }

  /** A copy of the record's key. */
  def key(pages: Array[Array[Byte]], addr: Long): Array[Byte] = {
    val p = pages(pageOf(addr)); val o = offsetOf(addr) + HeaderBytes
    Arrays.copyOfRange(p, o, o + keyLengthAt(p, o - HeaderBytes))
  }

  /** A copy of the record's value. */
  def value(pages: Array[Array[Byte]], addr: Long): Array[Byte] = {
    val p = pages(pageOf(addr)); val o = offsetOf(addr)
    val from = o + HeaderBytes + keyLengthAt(p, o)
    Arrays.copyOfRange(p, from, from + valueLengthAt(p, o))
  }

  def keyEquals(pages: Array[Array[Byte]], addr: Long, key: Array[Byte]): Boolean = {
    val p = pages(pageOf(addr)); val o = offsetOf(addr)
    keyLengthAt(
      p,
      o
    ) == key.length && Arrays.equals(p, o + HeaderBytes, o + HeaderBytes + key.length, key, 0, key.length)
  }

  /** The record's key compared with `key`, as unsigned bytes ([[Bytes.Order]]). */
  def compareKey(pages: Array[Array[Byte]], addr: Long, key: Array[Byte]): Int = {
    val p = pages(pageOf(addr)); val o = offsetOf(addr)
    Arrays.compareUnsigned(p, o + HeaderBytes, o + HeaderBytes + keyLengthAt(p, o), key, 0, key.length)
  }

  def startsWith(pages: Array[Array[Byte]], addr: Long, prefix: Array[Byte]): Boolean = {
    val p = pages(pageOf(addr)); val o = offsetOf(addr)
    keyLengthAt(p, o) >= prefix.length &&
    Arrays.equals(p, o + HeaderBytes, o + HeaderBytes + prefix.length, prefix, 0, prefix.length)
  }

  /** The record key's hash, equal to [[HashedKey.hashOf]] of the key's bytes. */
  def keyHash(pages: Array[Array[Byte]], addr: Long): Int = {
    val p = pages(pageOf(addr)); val o = offsetOf(addr)
    Murmur3_x86_32.hashUnsafeBytes2(p, Platform.BYTE_ARRAY_OFFSET + o + HeaderBytes, keyLengthAt(p, o), 42)
  }
}
