package org.apache.spark.sql.kstate.shim

import org.apache.spark.connect.proto
import org.apache.spark.sql.{Column, DataFrame}
import org.apache.spark.sql.classic.{SparkSession => ClassicSession}
import org.apache.spark.sql.connect.planner.SparkConnectPlanner

/**
 * The Spark Connect server calls kstate's relation plugin makes
 * (`io.kstate.connect`): a Connect `Relation` or `Expression`, sent as bytes
 * inside kstate's message, planned by the server's `SparkConnectPlanner` as Spark plans its own
 * messages. The planner's methods and the plugin's signature (`RelationPlugin.transform(bytes,
 * planner)` since Spark 4.0) are Spark Connect's server API, which changes between minors.
 */
object ConnectPlannerShim {

  /** The server session the planner plans for. */
  def session(planner: SparkConnectPlanner): ClassicSession = planner.session

  /** The DataFrame of a serialized `spark.connect.Relation`. */
  def dataFrame(planner: SparkConnectPlanner, relation: Array[Byte]): DataFrame =
    SparkShim.ofRows(planner.session, planner.transformRelation(proto.Relation.parseFrom(relation)))

  /** The Column of a serialized `spark.connect.Expression`. */
  def column(planner: SparkConnectPlanner, expression: Array[Byte]): Column =
    SparkShim.column(planner.transformExpression(proto.Expression.parseFrom(expression)))
}
