package io.kstate.connect

import io.kstate.KStateException
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.kstate.connect.proto._
import org.sparkproject.connect.protobuf.ByteString

/** kstate's Connect message as the server reads it: the schema, Connect's recursion limit, refusals by name. */
class KStateConnectProtocolSuite extends AnyFunSuite {
  private def malformed(bytes: Array[Byte], limit: Int = 1024): KStateException = {
    val e = intercept[KStateException](KStateRelationPlugin.parse(bytes, limit))
    assert(e.errorClass == "KSTATE_CONNECT_MALFORMED_MESSAGE", e.getMessage)
    e
  }

  private def varint(n: Long): Array[Byte] = {
    val out = new java.io.ByteArrayOutputStream()
    var v = n
    while ((v & ~0x7fL) != 0) { out.write(((v & 0x7f) | 0x80).toInt); v >>>= 7 }
    out.write(v.toInt)
    out.toByteArray
  }
  private def field(n: Int, payload: Array[Byte]): Array[Byte] =
    varint(n.toLong << 3 | 2) ++ varint(payload.length) ++ payload

  test("a message of the schema reads back as written, each operation its own typed message") {
    val m = KStateRelation.newBuilder().setClientVersion("0.1.0").setStream(Stream.newBuilder()
      .setDeduplicateByKey(DeduplicateByKey.newBuilder().setIntervalMs(10000).setName("d")
        .setInput(Input.newBuilder().setRelation(ByteString.copyFromUtf8("r")).setOrder("event_time"))
        .setKey(Column.newBuilder().setExpression(ByteString.copyFromUtf8("k"))))).build()
    val r = KStateRelationPlugin.parse(m.toByteArray, 1024)
    assert(r == m && r.getStream.getOpCase == Stream.OpCase.DEDUPLICATE_BY_KEY)
    assert(r.getStream.getDeduplicateByKey.getInput.getOrder == "event_time")
  }

  test("a length past the message's end, whatever its size, is refused before anything is allocated") {
    malformed(varint(1L << 3 | 2) ++ varint((1L << 31) - 3) ++ Array.fill[Byte](7)(1)) // 13 bytes claiming 2 GB
    malformed(Array.tabulate[Byte](1024)(_.toByte)) // not a protobuf message
  }

  test("nesting deeper than Spark Connect's recursion limit is refused by name, not by a stack overflow") {
    def nested(depth: Int): Array[Byte] = {
      var table = field(1, Array.emptyByteArray)
      (1 to depth).foreach(_ => table = field(2, field(1, table) ++ field(2, Array.emptyByteArray)))
      field(3, table)
    }
    assert(KStateRelationPlugin.parse(nested(100), 1024).getTable.getOpCase == Table.OpCase.FILTER)
    for (depth <- Seq(600, 1000, 20000)) assert(malformed(nested(depth)).getMessage.contains("recursion"), depth)
    malformed(nested(60), limit = 100)
  }

  test("Connect's configured recursion limit is the one used") {
    val conf = new org.apache.spark.SparkConf(false)
    assert(KStateRelationPlugin.recursionLimit(conf) == 1024)
    assert(KStateRelationPlugin.recursionLimit(conf.set("spark.connect.grpc.marshallerRecursionLimit", "64")) == 64)
  }

  test("a field this server does not know is kept as unknown (a newer client); the type URL names the message") {
    val newer =
      KStateRelation.newBuilder().setClientVersion("9.9.9").build().toByteArray ++ field(50, Array.emptyByteArray)
    val r = KStateRelationPlugin.parse(newer, 1024)
    assert(r.getCallCase == KStateRelation.CallCase.CALL_NOT_SET && r.getUnknownFields.hasField(50))
    assert(KStateRelationPlugin.TypeUrl == "type.googleapis.com/" + KStateRelation.getDescriptor.getFullName)
  }
}
