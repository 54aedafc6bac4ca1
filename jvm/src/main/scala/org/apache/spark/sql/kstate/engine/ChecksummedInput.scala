package org.apache.spark.sql.kstate.engine

import java.io.{ByteArrayInputStream, DataInputStream, EOFException, InputStream}
import java.util.zip.CRC32C

/**
 * A buffered big-endian reader (the `DataInput` encodings) that keeps a CRC32C of exactly the
 * bytes consumed so far, updated a buffer at a time rather than a byte at a time. State files
 * are read through it: their trailer's checksum covers every byte before it.
 *
 * Throws `EOFException` when the stream ends inside a value. Not thread-safe.
 */
private[kstate] final class ChecksummedInput(in: InputStream, bufferSize: Int = 1 << 16) {
  private val buf = new Array[Byte](bufferSize)
  private var pos = 0
  private var limit = 0

  /** Bytes of `buf` before this index are already in the checksum. */
  private var summed = 0
  private val crc = new CRC32C

  /** Makes at least `n` (<= buffer size) bytes available at `pos`. */
  private def require(n: Int): Unit = if (limit - pos < n) {
    crc.update(buf, summed, pos - summed)
    System.arraycopy(buf, pos, buf, 0, limit - pos)
    limit -= pos
    pos = 0
    summed = 0
    while (limit < n) {
      val r = in.read(buf, limit, buf.length - limit)
      if (r < 0) throw new EOFException
      limit += r
    }
  }

  def readByte(): Byte = { require(1); val b = buf(pos); pos += 1; b }

  def readShort(): Short = {
    require(2)
    val v = ((buf(pos) & 0xff) << 8) | (buf(pos + 1) & 0xff)
    pos += 2
    v.toShort
  }

  def readInt(): Int = {
    require(4)
    val v = ((buf(pos) & 0xff) << 24) | ((buf(pos + 1) & 0xff) << 16) |
      ((buf(pos + 2) & 0xff) << 8) | (buf(pos + 3) & 0xff)
    pos += 4
    v
  }

  def readLong(): Long = (readInt().toLong << 32) | (readInt().toLong & 0xffffffffL)

  def readFully(dst: Array[Byte]): Unit = {
    val buffered = math.min(dst.length, limit - pos)
    System.arraycopy(buf, pos, dst, 0, buffered)
    pos += buffered
    var off = buffered
    if (off < dst.length) {
      // Larger than what is buffered: the rest straight into dst, checksummed there.
      crc.update(buf, summed, pos - summed)
      pos = 0; limit = 0; summed = 0
      while (off < dst.length) {
        val r = in.read(dst, off, dst.length - off)
        if (r < 0) throw new EOFException
        crc.update(dst, off, r)
        off += r
      }
    }
  }

  /**
   * Passes the next `n` bytes to `out` (null: drops them), checksummed as they go; the
   * `EOFException` of a stream that ends first.
   */
  def copyTo(out: java.io.OutputStream, n: Long): Unit = {
    var left = n
    while (left > 0) {
      if (pos == limit) require(1)
      val k = math.min(left, (limit - pos).toLong).toInt
      if (out != null) out.write(buf, pos, k)
      pos += k
      left -= k
    }
  }

  /** A string in `DataOutput.writeUTF`'s encoding. */
  def readUTF(): String = {
    val len = readShort() & 0xffff
    val body = new Array[Byte](len)
    readFully(body)
    val framed = new Array[Byte](len + 2)
    framed(0) = (len >> 8).toByte; framed(1) = len.toByte
    System.arraycopy(body, 0, framed, 2, len)
    new DataInputStream(new ByteArrayInputStream(framed)).readUTF()
  }

  /** The CRC32C of every byte consumed so far. */
  def checksum: Int = {
    crc.update(buf, summed, pos - summed)
    summed = pos
    crc.getValue.toInt
  }

  /** Whether the stream has no more bytes. */
  def atEnd: Boolean = pos >= limit && {
    val r = in.read(buf, 0, buf.length)
    if (r > 0) { pos = 0; limit = r; summed = 0 }
    r < 0
  }
}
