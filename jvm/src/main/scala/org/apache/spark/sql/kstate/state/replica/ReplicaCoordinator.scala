package org.apache.spark.sql.kstate.state.replica

import java.util.concurrent.atomic.AtomicReference

import org.apache.spark.internal.Logging
import org.apache.spark.sql.kstate.state.replica.ReplicaProtocol._

/**
 * The driver's table of standby replicas (docs/replicas.md): which executors hold a standby of
 * which store, what they have applied, and where each store's next task should run. One per
 * SparkContext, created by kstate's plugin ([[io.kstate.KStatePlugin]]); [[ReplicaCoordinator.current]].
 *
 * What it learns, and from whom:
 *  - from each micro-batch's planning ([[plan]], the driver's query thread): the operator's
 *    stores, the version its batch starts from (the newest committed one), the standbys wanted
 *    and each store's active executor (Spark's `StateStoreCoordinator`);
 *  - from executors' followers ([[poll]], Spark's RPC threads): which executors can hold
 *    standbys, on which host, and the version each of their copies holds;
 *  - from Spark's listener bus: executors removed and queries terminated.
 * Its state is soft: nothing is persisted. A restarted driver starts with no standbys, and
 * followers re-report what they hold at their next poll.
 *
 * Threading: every method may be called from any thread; the state is guarded by `this`.
 * [[plan]] calls `locate` (an RPC to Spark's coordinator) before taking the lock.
 *
 * Liveness of an executor: not removed (listener bus) and, when the scheduler lists its
 * executors, listed. The scheduler's list changes as soon as Spark learns of a loss; the
 * listener bus delivers the removal later, possibly after the next micro-batch was planned.
 *
 * @param liveAfterMillis    how long after its last poll a follower counts as alive
 * @param schedulerExecutors the executors Spark's scheduler has now, when it lists them (None in
 *                           local mode)
 */
final class ReplicaCoordinator(liveAfterMillis: Long, clock: () => Long = () => System.currentTimeMillis(),
    schedulerExecutors: () => Option[Set[String]] = () => None) extends Logging {
  import ReplicaCoordinator._

  /** Operators with standbys, by (query id, state root, operator id). */
  private var operators = Map.empty[(String, String, Long), Operator]
  private var actives = Map.empty[ReplicaStore, String]
  private var standbys = Map.empty[ReplicaStore, Seq[String]]
  private var followers = Map.empty[String, Follower]
  /** Executors Spark removed: never alive again (a replacement gets a new id). */
  private var removed = Set.empty[String]

  /**
   * A micro-batch of an operator with `standbyCount` standbys per store is about to run from
   * `committed`; `locate(partition)` gives Spark's recorded location of a partition's store
   * (`executor_<host>_<id>`). Recomputes the operator's standbys.
   */
  def plan(queryId: String, stateRoot: String, operatorId: Long, storeName: String, numPartitions: Int,
      standbyCount: Int, committed: Long, locate: Int => Option[String]): Unit = {
    val stores = (0 until numPartitions).map(p => ReplicaStore(queryId, stateRoot, operatorId, p, storeName))
    val located = stores.map(s => s -> locate(s.partition).map(ReplicaCoordinator.executorOf))
    synchronized {
      val key = (queryId, stateRoot, operatorId)
      if (standbyCount <= 0) {
        forget(_._1 == key)
      } else {
        operators += key -> Operator(numPartitions, standbyCount, committed)
        located.foreach { case (s, e) => e.fold(actives -= s)(a => actives += s -> a) }
        val isAlive = aliveNow
        val live = liveFollowers(isAlive)
        val slots = stores.map { s =>
          StandbyPlacement.Slot(s, actives.get(s).filter(isAlive), standbys.getOrElse(s, Nil))
        }
        standbys ++= StandbyPlacement.assign(slots, live.map { case (e, f) => e -> f.host }, standbyCount)
      }
    }
  }

  /**
   * Where the next task of `store` should run: Spark's location (`spark`) while its executor is
   * alive; once it is lost, the alive standby that holds the newest version; Spark's location
   * when there is none. One location, never a list: Spark treats several as unordered.
   */
  def preferredLocation(store: ReplicaStore, spark: Option[String]): Option[String] = synchronized {
    val isAlive = aliveNow
    val sparkAlive = spark.exists(l => isAlive(ReplicaCoordinator.executorOf(l)))
    if (sparkAlive || !operators.contains((store.queryId, store.stateRoot, store.operatorId))) spark
    else {
      val live = liveFollowers(isAlive)
      val warm = standbys.getOrElse(store, Nil).flatMap(e => live.get(e).flatMap(f => f.holdings.get(store).map(v => (e, f, v))))
      if (warm.isEmpty) spark
      else {
        val (e, f, _) = warm.maxBy(_._3)
        Some(ReplicaCoordinator.location(f.host, e))
      }
    }
  }

  /** A follower's poll: records what it holds, answers what it should hold. */
  def poll(p: Poll): Assignments = synchronized {
    if (removed(p.executorId)) Assignments(Nil)
    else {
      followers += p.executorId -> Follower(p.host, clock(), p.holdings)
      val mine = standbys.collect { case (s, es) if es.contains(p.executorId) => s }
      Assignments(mine.toSeq.flatMap { s =>
        operators.get((s.queryId, s.stateRoot, s.operatorId)).map(o => Standby(s, o.committed))
      })
    }
  }

  /** Spark removed `executorId` (lost, killed or decommissioned). */
  def executorRemoved(executorId: String): Unit = synchronized {
    removed += executorId
    followers -= executorId
  }

  /** `queryId` stopped: its stores get no standbys until it runs again. */
  def queryTerminated(queryId: String): Unit = synchronized(forget(_._1._1 == queryId))

  /** The table of a query's stores (for `kstate.replica_status` and tests). */
  def status(queryId: String): Seq[ReplicaCoordinator.StoreStatus] = synchronized {
    val live = liveFollowers()
    operators.toSeq.filter(_._1._1 == queryId).flatMap { case ((_, root, op), o) =>
      standbys.keys.filter(s => s.queryId == queryId && s.stateRoot == root && s.operatorId == op).toSeq
        .sortBy(_.partition).map { s =>
          ReplicaCoordinator.StoreStatus(s, actives.get(s), o.committed,
            standbys.getOrElse(s, Nil).map(e => e -> live.get(e).flatMap(_.holdings.get(s))))
        }
    }
  }

  /**
   * One operator's standbys in numbers: how many sit on live executors, and how many versions
   * the least current store's warmest standby lags behind the committed version (a store with
   * no warm standby lags by all of it).
   */
  def summary(queryId: String, stateRoot: String, operatorId: Long): ReplicaCoordinator.Summary = synchronized {
    val live = liveFollowers()
    operators.get((queryId, stateRoot, operatorId)).fold(ReplicaCoordinator.Summary(0, 0L)) { o =>
      val stores = standbys.filter { case (s, _) => s.queryId == queryId && s.stateRoot == stateRoot && s.operatorId == operatorId }
      val alive = stores.values.map(_.count(live.contains)).sum
      val lags = stores.map { case (s, es) =>
        val best = es.flatMap(e => live.get(e).flatMap(_.holdings.get(s))).maxOption
        best.fold(o.committed)(v => math.max(0L, o.committed - v))
      }
      ReplicaCoordinator.Summary(alive, if (lags.isEmpty) 0L else lags.max)
    }
  }

  /**
   * [[status]] as JSON (for Python's `kstate.replica_status`): a list of
   * `{"operator", "partition", "active", "committed_version", "standbys": [{"executor", "version"}]}`,
   * `active` and `version` null when unknown.
   */
  def statusJson(queryId: String): String = {
    import org.json4s.JsonDSL._
    import org.json4s.{JLong, JNull, JString, JValue}
    // an absent value is null, not a missing field (json4s drops None)
    def orNull[T](o: Option[T])(f: T => JValue): JValue = o.map(f).getOrElse(JNull)
    val rows = status(queryId).map { s =>
      ("operator" -> s.store.operatorId) ~ ("partition" -> s.store.partition) ~ ("store" -> s.store.storeName) ~
        ("active" -> orNull(s.active)(JString(_))) ~ ("committed_version" -> s.committed) ~
        ("standbys" -> s.standbys.map { case (e, v) => ("executor" -> e) ~ ("version" -> orNull(v)(JLong(_))) })
    }
    org.json4s.jackson.JsonMethods.compact(org.json4s.jackson.JsonMethods.render(rows))
  }

  private def forget(which: (((String, String, Long), Operator)) => Boolean): Unit = {
    val gone = operators.filter(which).keySet
    operators --= gone
    def ofGone(s: ReplicaStore) = gone((s.queryId, s.stateRoot, s.operatorId))
    standbys = standbys.filterNot { case (s, _) => ofGone(s) }
    actives = actives.filterNot { case (s, _) => ofGone(s) }
  }

  /** Whether an executor is alive, as far as Spark knows now. */
  private def aliveNow: String => Boolean = {
    val listed = schedulerExecutors()
    e => !removed(e) && listed.forall(_.contains(e))
  }

  private def liveFollowers(isAlive: String => Boolean = aliveNow): Map[String, Follower] = {
    val since = clock() - liveAfterMillis
    followers.filter { case (e, f) => f.lastPoll >= since && isAlive(e) }
  }
}

object ReplicaCoordinator {
  private final case class Operator(numPartitions: Int, standbys: Int, committed: Long)
  private final case class Follower(host: String, lastPoll: Long, holdings: Map[ReplicaStore, Long])

  private val instance = new AtomicReference[ReplicaCoordinator]()

  /** The coordinator of this driver, when kstate's plugin is loaded. */
  def current: Option[ReplicaCoordinator] = Option(instance.get)

  private[kstate] def install(c: ReplicaCoordinator): Unit = instance.set(c)

  private[kstate] def uninstall(c: ReplicaCoordinator): Unit = instance.compareAndSet(c, null)

  /**
   * The executor id in a Spark task location `executor_<host>_<id>` (Spark's
   * `ExecutorCacheTaskLocation`): executor ids contain no underscore, host names may.
   */
  def executorOf(location: String): String = location.substring(location.lastIndexOf('_') + 1)

  /** The task location Spark prefers for an executor. */
  def location(host: String, executorId: String): String = s"executor_${host}_$executorId"

  /** An operator's standbys on live executors, and the largest lag in versions. */
  final case class Summary(standbys: Int, maxLagVersions: Long)

  /** One store: its active executor, committed version, and each standby with the version it holds. */
  final case class StoreStatus(store: ReplicaStore, active: Option[String], committed: Long,
      standbys: Seq[(String, Option[Long])])
}
