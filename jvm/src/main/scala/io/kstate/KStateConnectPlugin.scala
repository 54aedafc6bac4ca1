package io.kstate

/**
 * The public name of kstate's Spark Connect relation plugin, for the Connect server's
 * `spark.connect.extensions.relation.classes` (docs/connect.md). The implementation lives in
 * [[org.apache.spark.sql.kstate.connect.KStateRelationPlugin]].
 */
class KStateConnectPlugin extends org.apache.spark.sql.kstate.connect.KStateRelationPlugin
