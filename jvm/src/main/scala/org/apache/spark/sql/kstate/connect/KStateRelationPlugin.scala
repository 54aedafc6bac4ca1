package org.apache.spark.sql.kstate.connect

import java.util.Optional

import io.kstate.{BuildInfo, KStateErrors}

import org.apache.spark.sql.Dataset
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.AttributeReference
import org.apache.spark.sql.catalyst.plans.logical.{LocalRelation, LogicalPlan}
import org.apache.spark.sql.connect.planner.SparkConnectPlanner
import org.apache.spark.sql.connect.plugin.RelationPlugin
import org.apache.spark.sql.kstate.shim.SparkShim
import org.apache.spark.sql.types.StringType
import org.apache.spark.unsafe.types.UTF8String

/**
 * kstate's Spark Connect relation plugin (public name: `io.kstate.KStateConnectPlugin`, set in
 * `spark.connect.extensions.relation.classes`; docs/connect.md).
 *
 * It plans the [[KStateCall]] the Python client sends for `df.kstate.*`, `kstate.read_state`,
 * `kstate.read_table` and `kstate.replica_status`: the call is made with [[CallInvoker]] on the
 * same `io.kstate` methods a classic session's py4j calls reach, so it checks its arguments
 * there and a bad one fails with its `KSTATE_*` error when the client analyzes the DataFrame.
 *
 * A call giving a DataFrame becomes that DataFrame's plan. A call giving another value (a
 * `KTable`, a windowed stream, a flag, a name, a list of names) becomes a one-column
 * (`value STRING`) local relation: one row per element of a `Seq`, else one row holding the
 * value's text. The client analyzes it to have the call's checks run, and collects it for a
 * value it needs (`KTable.is_versioned`).
 */
class KStateRelationPlugin extends RelationPlugin {
  override def transform(any: Array[Byte], planner: SparkConnectPlanner): Optional[LogicalPlan] =
    KStateCall.fromAny(any) match {
      case None => Optional.empty()
      case Some(request) =>
        if (request.clientVersion != BuildInfo.version) {
          throw KStateErrors.connectVersionMismatch(request.clientVersion, BuildInfo.version)
        }
        Optional.of(KStateRelationPlugin.planOf(new CallInvoker(planner).invoke(request.call)))
    }
}

private[connect] object KStateRelationPlugin {
  def planOf(result: Any): LogicalPlan = result match {
    case ds: Dataset[_] => SparkShim.logicalPlan(ds.toDF())
    case other =>
      val texts = other match {
        case s: Seq[_] => s.map(String.valueOf)
        case v => Seq(String.valueOf(v))
      }
      LocalRelation(Seq(AttributeReference("value", StringType, nullable = true)()),
        texts.map(t => InternalRow(UTF8String.fromString(t))))
  }
}
