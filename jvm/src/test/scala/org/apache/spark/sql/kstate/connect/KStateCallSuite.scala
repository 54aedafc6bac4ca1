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

  test("another extension's Any is not kstate's; a malformed message is KSTATE_CONNECT_INVALID_CALL") {
    assert(KStateCall.fromAny(any("type.googleapis.com/other.Message", Array[Byte](1, 2))).isEmpty)
    val truncated = bytesField(1, text(2, "m")).dropRight(1)
    val e = intercept[KStateException](KStateCall.fromAny(any(KStateCall.TypeUrl, truncated)))
    assert(e.errorClass == "KSTATE_CONNECT_INVALID_CALL")
    val twoKinds = bytesField(1, text(2, "m") ++ bytesField(3, text(2, "a") ++ number(3, 1)))
    assert(intercept[KStateException](KStateCall.fromAny(any(KStateCall.TypeUrl, twoKinds)))
      .errorClass == "KSTATE_CONNECT_INVALID_CALL")
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
