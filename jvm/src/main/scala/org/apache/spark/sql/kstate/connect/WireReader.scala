package org.apache.spark.sql.kstate.connect

import scala.collection.mutable.ArrayBuffer

import io.kstate.KStateErrors

/**
 * Reads protobuf's wire format into (field number, value) pairs, in order: a varint field as a
 * `java.lang.Long`, a length-delimited field as its bytes. The two wire types
 * [[KStateCall]]'s messages use; any other is a malformed message.
 */
private[connect] object WireReader {
  def fields(bytes: Array[Byte]): Seq[(Int, AnyRef)] = {
    val out = ArrayBuffer.empty[(Int, AnyRef)]
    var pos = 0
    def varint(): Long = {
      var result = 0L
      var shift = 0
      var more = true
      while (more) {
        if (pos >= bytes.length || shift > 63) throw KStateErrors.connectInvalidCall("malformed varint")
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
      val field = (key >>> 3).toInt
      (key & 7).toInt match {
        case 0 => out += field -> java.lang.Long.valueOf(varint())
        case 2 =>
          val length = varint().toInt
          if (length < 0 || pos + length > bytes.length) {
            throw KStateErrors.connectInvalidCall("malformed length")
          }
          out += field -> java.util.Arrays.copyOfRange(bytes, pos, pos + length)
          pos += length
        case t => throw KStateErrors.connectInvalidCall(s"unexpected wire type $t")
      }
    }
    out.toSeq
  }
}
