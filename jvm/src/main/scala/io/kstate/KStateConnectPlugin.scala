package io.kstate

/**
 * The public name of kstate's Spark Connect relation plugin, for the Connect server's
 * `spark.connect.extensions.relation.classes` (docs/connect.md). The implementation lives in
 * [[io.kstate.connect.KStateRelationPlugin]].
 */
class KStateConnectPlugin extends io.kstate.connect.KStateRelationPlugin
