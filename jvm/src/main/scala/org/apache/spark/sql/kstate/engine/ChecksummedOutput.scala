package org.apache.spark.sql.kstate.engine

import java.io.{ByteArrayOutputStream, DataOutputStream, OutputStream}
import java.util.zip.CRC32C

/**
 * A buffered big-endian writer (the `DataOutput` encodings) that keeps a CRC32C of every byte
 * written, updated a buffer at a time: fields are encoded straight into its own buffer instead
 * of one stream call per byte. The counterpart of [[ChecksummedInput]].
 *
 * `flush()` pushes buffered bytes to `out` (it does not flush or close `out`). Not thread-safe.
 */
private[kstate] final class ChecksummedOutput(out: OutputStream, bufferSize: Int = 1 << 16) {
  private val buf = new Array[Byte](bufferSize)
  private var pos = 0
  private var written = 0L
  private val crc = new CRC32C

  private def room(n: Int): Unit = if (buf.length - pos < n) flush()

  def writeByte(b: Int): Unit = { room(1); buf(pos) = b.toByte; pos += 1 }

  def writeShort(v: Int): Unit = {
    room(2)
    buf(pos) = (v >>> 8).toByte; buf(pos + 1) = v.toByte
    pos += 2
  }

  def writeInt(v: Int): Unit = {
    room(4)
    buf(pos) = (v >>> 24).toByte; buf(pos + 1) = (v >>> 16).toByte
    buf(pos + 2) = (v >>> 8).toByte; buf(pos + 3) = v.toByte
    pos += 4
  }

  def writeLong(v: Long): Unit = { writeInt((v >>> 32).toInt); writeInt(v.toInt) }

  def write(bytes: Array[Byte]): Unit =
    if (bytes.length <= buf.length - pos) {
      System.arraycopy(bytes, 0, buf, pos, bytes.length)
      pos += bytes.length
    } else {
      flush()
      crc.update(bytes, 0, bytes.length)
      out.write(bytes)
      written += bytes.length
    }

  /** Writes the next `n` bytes of `in`; the `EOFException` of a stream that ends first. */
  def writeFrom(in: java.io.InputStream, n: Long): Unit = {
    var left = n
    while (left > 0) {
      if (pos == buf.length) flush()
      val r = in.read(buf, pos, math.min(left, (buf.length - pos).toLong).toInt)
      if (r < 0) throw new java.io.EOFException
      pos += r
      left -= r
    }
  }

  /** A string in `DataOutput.writeUTF`'s encoding. */
  def writeUTF(s: String): Unit = {
    val encoded = new ByteArrayOutputStream()
    new DataOutputStream(encoded).writeUTF(s)
    write(encoded.toByteArray)
  }

  def flush(): Unit = if (pos > 0) {
    crc.update(buf, 0, pos)
    out.write(buf, 0, pos)
    written += pos
    pos = 0
  }

  /** The CRC32C of every byte written so far. */
  def checksum: Int = crc.getValue.toInt

  /** Bytes written so far, buffered ones included. */
  def size: Long = written + pos
}
