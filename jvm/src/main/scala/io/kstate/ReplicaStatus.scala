package io.kstate

import org.apache.spark.sql.kstate.errors.KStateErrors

import org.apache.spark.sql.kstate.replica.ReplicaCoordinator

/**
 * The driver's table of standby replicas for one query (Python: `kstate.replica_status`):
 * per state store, its active executor, the newest committed version and each standby with
 * the version it holds. Empty when the query has no standbys (`spark.kstate.standbyReplicas`
 * 0) or has not planned a micro-batch with them yet.
 */
object ReplicaStatus {

  /** The table as JSON (see `ReplicaCoordinator.statusJson`); needs kstate's plugin. */
  def json(queryId: String): String =
    ReplicaCoordinator.current.map(_.statusJson(queryId))
      .getOrElse(throw KStateErrors.standbyReplicasNeedPlugin("kstate.replica_status was called"))
}
