package org.apache.spark.sql.kstate.state.replica

/**
 * The messages between an executor's [[ReplicaFollower]] and the driver's
 * [[ReplicaCoordinator]], sent through Spark's plugin channel (`PluginContext.ask`, Java
 * serialization). Executors ask; the driver only answers: it holds no reference to executors.
 */
object ReplicaProtocol {
  /**
   * An executor's follower asks what to follow, and says what it holds.
   *
   * @param holdings the committed version each standby copy on the executor holds
   */
  final case class Poll(executorId: String, host: String, holdings: Map[ReplicaStore, Long])

  /** What an executor should hold: a standby copy of each store, at its committed version. */
  final case class Assignments(standbys: Seq[Standby])

  /**
   * Keep a standby copy of `store` at `committedVersion`, the version the query's latest planned
   * micro-batch started from (so committed), or the next one once that batch's commit log entry
   * exists ([[CommitLogView]]). A changelog beyond the committed version may still be rewritten
   * by a re-run, so it is never applied.
   */
  final case class Standby(store: ReplicaStore, committedVersion: Long)
}
