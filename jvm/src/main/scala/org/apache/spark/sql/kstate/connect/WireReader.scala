package org.apache.spark.sql.kstate.connect

import scala.collection.mutable.ArrayBuffer

import io.kstate.KStateErrors

/**
 * Reads protobuf's wire format into (field number, value) pairs, in order: a varint field as a
 * `java.lang.Long`, a length-delimited field as its bytes. The two wire types
 * [[KStateCall]]'s messages use; any other is a malformed message.
 *
 * The bytes come from a client, so every length is checked against what is left of the message
 * before anything is allocated (a length is read as a 64-bit number: a 10-byte varint cannot
 * wrap around into a small or negative `Int`), and a field number must be one protobuf allows.
 * Nesting is bounded by the caller ([[KStateCall]]), which decides what a nested message is.
 */
private[connect] object WireReader {
  /** The largest field number protobuf allows (2^29 - 1). */
  private val MaxFieldNumber = (1 << 29) - 1

  def fields(bytes: Array[Byte]): Seq[(Int, AnyRef)] = {
    val out = ArrayBuffer.empty[(Int, AnyRef)]
    var pos = 0
    def varint(): Long = {
      var result = 0L
      var shift = 0
      var more = true
      while (more) {
        if (pos >= bytes.length) throw malformed("a varint runs past the end of the message")
        if (shift > 63) throw malformed("a varint is longer than 10 bytes")
        val b = bytes(pos)
        pos += 1
        result |= (b & 0x7fL) << shift
        shift += 7
        more = (b & 0x80) != 0
      }
      result
    }
    while (pos < bytes.length) {
      val key = varint()
      val field = key >>> 3
      if (field < 1 || field > MaxFieldNumber) throw malformed(s"field number $field")
      (key & 7).toInt match {
        case 0 => out += field.toInt -> java.lang.Long.valueOf(varint())
        case 2 =>
          val length = varint()
          val left = bytes.length - pos
          if (length < 0 || length > left) {
            throw malformed(s"field ${field} claims $length bytes but the message has $left left")
          }
          out += field.toInt -> java.util.Arrays.copyOfRange(bytes, pos, pos + length.toInt)
          pos += length.toInt
        case t => throw malformed(s"unexpected wire type $t in field $field")
      }
    }
    out.toSeq
  }

  private def malformed(why: String) = KStateErrors.connectMalformedMessage(why)
}
