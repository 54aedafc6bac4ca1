package io.kstate.connect

import java.util.Optional

import org.apache.spark.sql.kstate.errors.KStateErrors

import org.apache.spark.sql.Dataset
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.AttributeReference
import org.apache.spark.sql.catalyst.plans.logical.{LocalRelation, LogicalPlan}
import org.apache.spark.sql.connect.planner.SparkConnectPlanner
import org.apache.spark.sql.connect.plugin.RelationPlugin
import org.apache.spark.sql.kstate.connect.proto.KStateRelation
import org.apache.spark.sql.kstate.shim.{ConnectPlannerShim, SparkShim}
import org.apache.spark.sql.types.StringType
import org.apache.spark.unsafe.types.UTF8String
import org.sparkproject.connect.protobuf.{Any => ProtoAny, CodedInputStream, InvalidProtocolBufferException}

/**
 * kstate's Spark Connect relation plugin (public name: `io.kstate.KStateConnectPlugin`, set in
 * `spark.connect.extensions.relation.classes`; docs/connect.md).
 *
 * It plans the [[KStateRelation]] the Python client sends for `df.kstate.*`, `kstate.read_state`,
 * `kstate.read_table` and `kstate.replica_status`: kstate's Connect protocol, one typed message per
 * kstate operation (jvm/src/main/protobuf/kstate/proto/connect.proto), parsed with Spark
 * Connect's recursion limit and made by [[KStateConnectPlanner]] on the same `io.kstate` methods a
 * classic session's calls reach, so it checks its arguments there and a bad one fails with its
 * `KSTATE_*` error when the client analyzes the DataFrame. Bytes that are not such a message are
 * `KSTATE_CONNECT_MALFORMED_MESSAGE`; an operation this server does not know (a newer client's)
 * is `KSTATE_CONNECT_UNKNOWN_OPERATION`; either is refused before anything is called.
 *
 * A call giving a DataFrame becomes that DataFrame's plan. A call giving another value (a
 * table, a grouped table or a windowed stream, checked; a table's property; the replica table)
 * becomes a one-column (`value STRING`) local relation: one row per element of a `Seq`, else one
 * row holding the value's text.
 */
class KStateRelationPlugin extends RelationPlugin {
  override def transform(any: Array[Byte], planner: SparkConnectPlanner): Optional[LogicalPlan] = {
    val wrapper =
      try ProtoAny.parseFrom(any)
      catch {
        case e: InvalidProtocolBufferException => throw KStateErrors.connectMalformedMessage(e.getMessage)
      }
    if (wrapper.getTypeUrl != KStateRelationPlugin.TypeUrl) Optional.empty()
    else {
      val relation = KStateRelationPlugin.parse(
        wrapper.getValue.toByteArray,
        KStateRelationPlugin.recursionLimit(ConnectPlannerShim.session(planner).sparkContext.getConf)
      )
      Optional.of(KStateRelationPlugin.planOf(new KStateConnectPlanner(planner).plan(relation)))
    }
  }
}

private[kstate] object KStateRelationPlugin {
  val TypeUrl = "type.googleapis.com/kstate.connect.KStateRelation"

  /** Spark Connect's own limit on message nesting (`spark.connect.grpc.marshallerRecursionLimit`). */
  def recursionLimit(conf: org.apache.spark.SparkConf): Int =
    conf.getInt("spark.connect.grpc.marshallerRecursionLimit", 1024)

  /** A client's bytes as kstate's message, nesting bounded by `limit`. */
  def parse(bytes: Array[Byte], limit: Int): KStateRelation = {
    val in = CodedInputStream.newInstance(bytes)
    in.setRecursionLimit(limit)
    try {
      val r = KStateRelation.parseFrom(in)
      in.checkLastTagWas(0)
      r
    } catch {
      case e: InvalidProtocolBufferException => throw KStateErrors.connectMalformedMessage(e.getMessage)
    }
  }

  def planOf(result: Any): LogicalPlan = result match {
    case ds: Dataset[_] => SparkShim.logicalPlan(ds.toDF())
    case other =>
      val texts = other match {
        case s: Seq[_] => s.map(String.valueOf)
        case v => Seq(String.valueOf(v))
      }
      LocalRelation(
        Seq(AttributeReference("value", StringType, nullable = true)()),
        texts.map(t => InternalRow(UTF8String.fromString(t)))
      )
  }
}
