package org.apache.spark.sql.kstate.connect

import java.io.ByteArrayOutputStream
import java.nio.charset.StandardCharsets.UTF_8

import io.kstate.KStateException
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.kstate.connect.KStateCall._

/** kstate's Spark Connect message as the server reads it, and how arguments meet parameters. */
class KStateCallSuite extends AnyFunSuite {
  // protobuf's wire format, written independently of python/kstate/_connect.py
  private def varint(n: Long): Array[Byte] = {
    val out = new ByteArrayOutputStream()
    var v = n
    while ((v & ~0x7fL) != 0) { out.write(((v & 0x7f) | 0x80).toInt); v >>>= 7 }
    out.write(v.toInt)
    out.toByteArray
  }
  private def bytesField(n: Int, payload: Array[Byte]): Array[Byte] =
    varint(n.toLong << 3 | 2) ++ varint(payload.length.toLong) ++ payload
  private def text(n: Int, s: String): Array[Byte] = bytesField(n, s.getBytes(UTF_8))
  private def number(n: Int, v: Long): Array[Byte] = varint(n.toLong << 3) ++ varint(v)
  private def any(typeUrl: String, value: Array[Byte]): Array[Byte] = text(1, typeUrl) ++ bytesField(2, value)

  test("a request: a static call with each kind of argument, and an instance call on its result") {
    val static = text(2, "io.kstate.windows.TimeWindows.ofSize") ++
      bytesField(3, text(2, "a")) ++ bytesField(3, number(3, -1L)) ++ bytesField(3, number(4, 1)) ++
      bytesField(3, bytesField(7, bytesField(1, text(2, "x")) ++ bytesField(1, number(3, 300)))) ++
      bytesField(3, number(8, 1)) ++ bytesField(3, Array.emptyByteArray)
    val call = bytesField(1, bytesField(5, static)) ++ text(2, "grace") ++ bytesField(3, number(3, 5))
    val request = KStateCall.fromAny(any(KStateCall.TypeUrl, bytesField(1, call) ++ text(2, "0.1.0"))).get
    assert(request.clientVersion == "0.1.0")
    assert(request.call.method == "grace" && request.call.args == Seq(Number(5)))
    val Some(Result(inner)) = request.call.target
    assert(inner.target.isEmpty && inner.method == "io.kstate.windows.TimeWindows.ofSize")
    assert(inner.args == Seq(Text("a"), Number(-1L), Null, Items(Seq(Text("x"), Number(300))), Session, Text("")))
  }

  private def malformed(request: Array[Byte]): KStateException = {
    val e = intercept[KStateException](KStateCall.fromAny(any(KStateCall.TypeUrl, request)))
    assert(e.errorClass == "KSTATE_CONNECT_MALFORMED_MESSAGE", e.getMessage)
    assert(!e.getMessage.contains("same kstate version"))
    e
  }

  test("another extension's Any is not kstate's; a malformed message is KSTATE_CONNECT_MALFORMED_MESSAGE") {
    assert(KStateCall.fromAny(any("type.googleapis.com/other.Message", Array[Byte](1, 2))).isEmpty)
    malformed(bytesField(1, text(2, "m")).dropRight(1))
    malformed(bytesField(1, text(2, "m") ++ bytesField(3, text(2, "a") ++ number(3, 1))))
    malformed(varint(3L << 3 | 5) ++ Array[Byte](0, 0, 0, 0)) // a 32-bit field: not a wire type the message uses
    malformed(varint(0L << 3 | 2) ++ varint(0)) // field number 0
    malformed(Array.fill[Byte](11)(0x80.toByte) ++ Array[Byte](1)) // a varint of 12 bytes
  }

  test("a length past the message's end is refused before anything is allocated, whatever its size") {
    // 13 bytes claiming 2^31 - 3 bytes: pos + length overflowed an Int and the reader allocated 2 GB
    val huge = varint(1L << 3 | 2) ++ varint((1L << 31) - 3) ++ Array.fill[Byte](7)(1)
    assert(huge.length == 13)
    assert(malformed(huge).getMessage.contains(s"claims ${(1L << 31) - 3} bytes"))
    malformed(any(KStateCall.TypeUrl, huge)) // the same length one level down, inside the Any
    // lengths that wrap around when cut to an Int (2^32 + 1 -> 1, 2^63 -> negative)
    malformed(varint(1L << 3 | 2) ++ varint((1L << 32) + 1) ++ Array[Byte](1))
    malformed(varint(1L << 3 | 2) ++ varint(Long.MinValue) ++ Array[Byte](1))
    val e = intercept[KStateException](KStateCall.fromAny(text(1, KStateCall.TypeUrl) ++ varint(2L << 3 | 2) ++
      varint(Int.MaxValue.toLong) ++ Array[Byte](1, 2, 3)))
    assert(e.errorClass == "KSTATE_CONNECT_MALFORMED_MESSAGE")
  }

  test("values nested deeper than the plugin reads are refused by name, not by a stack overflow") {
    def nested(depth: Int): Array[Byte] = {
      // a call whose target is the result of a call whose target is ..., depth calls in all
      var call = text(2, "io.kstate.windows.TimeWindows.ofSize") ++ bytesField(3, text(2, "1 second"))
      (1 until depth).foreach(_ => call = bytesField(1, bytesField(5, call)) ++ text(2, "grace"))
      bytesField(1, call) ++ text(2, "0.1.0")
    }
    def nestedLists(depth: Int): Array[Byte] = {
      var v = text(2, "x")
      (1 until depth).foreach(_ => v = bytesField(7, bytesField(1, v)))
      bytesField(1, text(2, "io.kstate.X.m") ++ bytesField(3, v)) ++ text(2, "0.1.0")
    }
    // kstate's own chains fit well inside the bound
    val ok = KStateCall.fromAny(any(KStateCall.TypeUrl, nested(KStateCall.MaxDepth / 2))).get
    assert(ok.call.method == "grace")
    for (depth <- Seq(KStateCall.MaxDepth + 1, 1000, 5000)) {
      assert(malformed(nested(depth)).getMessage.contains(s"deeper than ${KStateCall.MaxDepth}"))
      assert(malformed(nestedLists(depth)).getMessage.contains(s"deeper than ${KStateCall.MaxDepth}"))
    }
  }

  test("arguments meet parameters as py4j's do") {
    import CallInvoker.convert
    assert(convert(5L, java.lang.Long.TYPE).contains(java.lang.Long.valueOf(5)))
    assert(convert(5L, Integer.TYPE).contains(Integer.valueOf(5)))
    assert(convert(Long.MaxValue, Integer.TYPE).isEmpty)
    assert(convert(5L, classOf[Option[_]]).contains(Some(5L)))
    assert(convert(null, classOf[Option[_]]).contains(None))
    assert(convert(null, classOf[String]).contains(null))
    assert(convert(null, java.lang.Long.TYPE).isEmpty)
    assert(convert("a", classOf[String]).contains("a"))
    assert(convert("a", classOf[java.time.Duration]).isEmpty)
    assert(convert(List("a"), classOf[Seq[_]]).contains(List("a")))
  }

  test("only kstate's API may be called") {
    assert(CallInvoker.isStaticAllowed("io.kstate.KStateDataFrame.apply"))
    assert(CallInvoker.isStaticAllowed("java.time.Duration.ofMillis"))
    assert(!CallInvoker.isStaticAllowed("java.lang.Runtime.getRuntime"))
    assert(!CallInvoker.isStaticAllowed("io.kstatex.Evil.run"))
  }
}
