package org.apache.spark.sql.kstate.connect

import java.nio.charset.StandardCharsets.UTF_8

import scala.collection.mutable.ArrayBuffer

import io.kstate.KStateErrors

/**
 * kstate's Spark Connect message: a call on kstate's public JVM API that the Python client
 * recorded instead of making it through py4j (docs/connect.md, "The message").
 *
 * The Connect relation carries it in `Relation.extension`, a `google.protobuf.Any` whose
 * `type_url` is [[KStateCall.TypeUrl]] and whose `value` is a `Request` in protobuf's wire format:
 * {{{
 *   message Request { Call call = 1; string client_version = 2; }
 *   message Call    { Value target = 1; string method = 2; repeated Value args = 3; }
 *   message Value   { oneof kind {
 *     bytes column = 1;    // a spark.connect.Expression
 *     string text = 2;
 *     int64 number = 3;
 *     bool null = 4;
 *     Call call = 5;       // the result of another call
 *     bytes relation = 6;  // a spark.connect.Relation (a DataFrame)
 *     Values list = 7;     // a Scala Seq
 *     bool session = 8;    // the server's SparkSession
 *   } }
 *   message Values  { repeated Value items = 1; }
 * }}}
 * A `Call` without a target is a static method (`io.kstate.KStateDataFrame.apply`) or a
 * constructor (`io.kstate.suppress.UntilWindowCloses`); with one, a method of the target's value.
 * The message is small and fixed, so both ends read and write the wire format directly
 * (python/kstate/_connect.py, [[WireReader]]): no generated code, no protobuf runtime of a
 * particular (shaded) version.
 */
private[kstate] object KStateCall {
  val TypeUrl = "type.googleapis.com/kstate.connect.Request"

  sealed trait Value
  final case class ColumnExpr(expression: Array[Byte]) extends Value
  final case class Text(value: String) extends Value
  final case class Number(value: Long) extends Value
  case object Null extends Value
  final case class Result(call: Call) extends Value
  final case class Relation(relation: Array[Byte]) extends Value
  final case class Items(values: Seq[Value]) extends Value
  case object Session extends Value

  final case class Call(target: Option[Value], method: String, args: Seq[Value])
  final case class Request(call: Call, clientVersion: String)

  /**
   * How deep values may nest (a call's target or argument is a value, which may be a call or a
   * list of values; a call and its value are a level each). kstate's own API chains a handful of
   * calls, a long table pipeline a few dozen; 200 levels (100 chained calls) keep a crafted
   * message from exhausting the server's stack while it is read here or made by [[CallInvoker]].
   */
  val MaxDepth = 200

  /** The request in an extension's `Any` bytes, or None when the `Any` is not kstate's. */
  def fromAny(any: Array[Byte]): Option[Request] = {
    var typeUrl = ""
    var value = Array.emptyByteArray
    WireReader.fields(any).foreach {
      case (1, bytes: Array[Byte]) => typeUrl = new String(bytes, UTF_8)
      case (2, bytes: Array[Byte]) => value = bytes
      case _ =>
    }
    if (typeUrl != TypeUrl) None else Some(request(value))
  }

  private def request(bytes: Array[Byte]): Request = {
    var call: Option[Call] = None
    var version = ""
    WireReader.fields(bytes).foreach {
      case (1, b: Array[Byte]) => call = Some(this.call(b, 1))
      case (2, b: Array[Byte]) => version = new String(b, UTF_8)
      case other => throw malformed(s"unexpected field ${other._1} in Request")
    }
    Request(call.getOrElse(throw malformed("Request without a call")), version)
  }

  private def call(bytes: Array[Byte], depth: Int): Call = {
    if (depth > MaxDepth) throw malformed(s"calls and values nest deeper than $MaxDepth levels")
    var target: Option[Value] = None
    var method = ""
    val args = ArrayBuffer.empty[Value]
    WireReader.fields(bytes).foreach {
      case (1, b: Array[Byte]) => target = Some(value(b, depth + 1))
      case (2, b: Array[Byte]) => method = new String(b, UTF_8)
      case (3, b: Array[Byte]) => args += value(b, depth + 1)
      case other => throw malformed(s"unexpected field ${other._1} in Call")
    }
    Call(target, method, args.toSeq)
  }

  private def value(bytes: Array[Byte], depth: Int): Value = {
    if (depth > MaxDepth) throw malformed(s"calls and values nest deeper than $MaxDepth levels")
    valueAt(bytes, depth)
  }

  private def valueAt(bytes: Array[Byte], depth: Int): Value = WireReader.fields(bytes) match {
    case Seq((1, b: Array[Byte])) => ColumnExpr(b)
    case Seq((2, b: Array[Byte])) => Text(new String(b, UTF_8))
    case Seq((3, n: java.lang.Long)) => Number(n)
    case Seq((4, _: java.lang.Long)) => Null
    case Seq((5, b: Array[Byte])) => Result(call(b, depth + 1))
    case Seq((6, b: Array[Byte])) => Relation(b)
    case Seq((7, b: Array[Byte])) =>
      Items(WireReader.fields(b).map {
        case (1, item: Array[Byte]) => value(item, depth + 1)
        case other => throw malformed(s"unexpected field ${other._1} in Values")
      })
    case Seq((8, _: java.lang.Long)) => Session
    case Seq() => Text("") // proto3 leaves an empty string out
    case other => throw malformed(s"a Value holds fields ${other.map(_._1).mkString(", ")}")
  }

  private def malformed(why: String) = KStateErrors.connectMalformedMessage(why)
}
