package org.apache.spark.sql.kstate.engine

import java.nio.ByteBuffer

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{
  KeyStateEncoderSpec,
  NoPrefixKeyStateEncoderSpec,
  RocksDBKeyStateEncoder,
  UnsafeRowDataEncoder
}
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.array.ByteArrayMethods

/**
 * How one column family's rows become RocksDB bytes and back.
 *
 *  - Keys are `id (2 bytes, big-endian) ++ encoded key`. Plain keys (NoPrefixKeyStateEncoderSpec)
 *    are the key's UnsafeRow bytes. Prefix-scan, range-scan and timestamp key specs use Spark's
 *    own key encoders (through the shim below), whose byte order makes prefix and range scans
 *    contiguous.
 *  - Values are the value's UnsafeRow bytes. With several values per key, the value is the
 *    concatenation of `length (4 bytes) ++ UnsafeRow bytes` per value, in insertion order.
 *
 * Every row handed out is freshly allocated (callers may keep it); every row taken in is copied
 * (callers may reuse theirs).
 */
private[kstate] final class FamilyCodec(
    val id: Short,
    val name: String,
    val keySchema: StructType,
    val valueSchema: StructType,
    val keySpec: KeyStateEncoderSpec,
    val multipleValues: Boolean
) {

  val prefix: Array[Byte] = FamilyCodec.prefixOf(id)
  private val keyFields = keySchema.length
  private val valueFields = valueSchema.length

  private val sparkKeyEncoder: Option[RocksDBKeyStateEncoder] = keySpec match {
    case _: NoPrefixKeyStateEncoderSpec => None
    case spec => Some(spec.toEncoder(new UnsafeRowDataEncoder(spec, valueSchema), false))
  }

  def supportsRangeScan: Boolean = sparkKeyEncoder.exists(_.supportsRangeScan)

  /** Plain keys (NoPrefixKeyStateEncoderSpec): no scan relies on their order. */
  def plainKeys: Boolean = sparkKeyEncoder.isEmpty

  def encodeKey(key: UnsafeRow): Array[Byte] = sparkKeyEncoder match {
    case None => withPrefix(key)
    case Some(enc) => Bytes.concat(prefix, enc.encodeKey(key))
  }

  /**
   * Whether `encoded` is [[encodeKey]]`(key)`, compared without encoding `key`: plain keys only
   * (this family's prefix and the key row's bytes); for other key specs always false.
   */
  def isEncodingOf(encoded: Array[Byte], key: UnsafeRow): Boolean = {
    val size = key.getSizeInBytes
    plainKeys && encoded.length == size + 2 && encoded(0) == prefix(0) && encoded(1) == prefix(1) &&
    ByteArrayMethods.arrayEquals(key.getBaseObject, key.getBaseOffset, encoded, Platform.BYTE_ARRAY_OFFSET + 2, size)
  }

  /** The byte prefix shared by all keys whose leading columns equal `prefixKey`. */
  def encodePrefix(prefixKey: UnsafeRow): Array[Byte] = sparkKeyEncoder match {
    case Some(enc) if enc.supportPrefixKeyScan => Bytes.concat(prefix, enc.encodePrefixKey(prefixKey))
    case _ => throw new UnsupportedOperationException(
        s"column family '$name' was not registered with a prefix-scan key encoder spec"
      )
  }

  def decodeKey(bytes: Array[Byte]): UnsafeRow = sparkKeyEncoder match {
    case None =>
      val row = new UnsafeRow(keyFields)
      row.pointTo(bytes, Platform.BYTE_ARRAY_OFFSET + 2, bytes.length - 2)
      row
    case Some(enc) =>
      enc.decodeKey(java.util.Arrays.copyOfRange(bytes, 2, bytes.length)).copy()
  }

  def encodeValue(value: UnsafeRow): Array[Byte] =
    if (multipleValues) encodeValues(Array(value)) else FamilyCodec.rowBytes(value, 0)

  def encodeValues(values: Array[UnsafeRow]): Array[Byte] = {
    var size = 0
    values.foreach(v => size += 4 + v.getSizeInBytes)
    val out = ByteBuffer.allocate(size)
    values.foreach { v =>
      out.putInt(v.getSizeInBytes)
      Platform.copyMemory(
        v.getBaseObject,
        v.getBaseOffset,
        out.array(),
        Platform.BYTE_ARRAY_OFFSET + out.position(),
        v.getSizeInBytes
      )
      out.position(out.position() + v.getSizeInBytes)
    }
    out.array()
  }

  /** `existing` (may be null) with `more` appended: the multi-value merge. */
  def appendValues(existing: Array[Byte], more: Array[UnsafeRow]): Array[Byte] = {
    require(multipleValues, s"merge needs column family '$name' to allow multiple values per key")
    val tail = encodeValues(more)
    if (existing == null) tail else Bytes.concat(existing, tail)
  }

  /** The single value, or for multi-value families the first one; null for null. */
  def decodeValue(bytes: Array[Byte]): UnsafeRow =
    if (bytes == null) null
    else if (!multipleValues) {
      val row = new UnsafeRow(valueFields)
      row.pointTo(bytes, bytes.length)
      row
    } else {
      val it = decodeValues(bytes)
      if (it.hasNext) it.next() else null
    }

  def decodeValues(bytes: Array[Byte]): Iterator[UnsafeRow] =
    if (bytes == null) Iterator.empty
    else if (!multipleValues) Iterator.single(decodeValue(bytes))
    else new Iterator[UnsafeRow] {
      private var pos = 0
      override def hasNext: Boolean = pos < bytes.length
      override def next(): UnsafeRow = {
        val len = ByteBuffer.wrap(bytes, pos, 4).getInt
        val row = new UnsafeRow(valueFields)
        row.pointTo(bytes, Platform.BYTE_ARRAY_OFFSET + pos + 4, len)
        pos += 4 + len
        row
      }
    }

  private def withPrefix(row: UnsafeRow): Array[Byte] = {
    val out = FamilyCodec.rowBytes(row, 2)
    out(0) = prefix(0); out(1) = prefix(1)
    out
  }
}

private[kstate] object FamilyCodec {
  def prefixOf(id: Short): Array[Byte] = Array((id >> 8).toByte, id.toByte)

  /**
   * The exclusive end of family `prefix`'s keys for a RocksDB range delete (which needs a
   * bound): past every 2-byte prefix when the prefix is all 0xFF.
   */
  def rangeEnd(prefix: Array[Byte]): Array[Byte] =
    Bytes.prefixEnd(prefix).getOrElse(Array[Byte](-1, -1, -1))

  /** A copy of `row`'s bytes, placed after `headroom` leading bytes. */
  def rowBytes(row: UnsafeRow, headroom: Int): Array[Byte] = {
    val size = row.getSizeInBytes
    val out = new Array[Byte](headroom + size)
    Platform.copyMemory(
      row.getBaseObject,
      row.getBaseOffset,
      out,
      Platform.BYTE_ARRAY_OFFSET + headroom,
      size
    )
    out
  }
}
