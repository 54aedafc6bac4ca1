package org.apache.spark.sql.kstate.replica

import java.util.concurrent.atomic.AtomicReference

import org.apache.spark.internal.Logging
import org.apache.spark.sql.kstate.replica.ReplicaProtocol._

/**
 * The driver's table of standby replicas (docs/replicas.md): which executors hold a standby of
 * which store, what they have applied, and where each store's next task should run. One per
 * SparkContext, created by kstate's plugin ([[io.kstate.KStatePlugin]]); [[ReplicaCoordinator.current]].
 *
 * What it learns, and from whom:
 *  - from each micro-batch's planning ([[plan]], the driver's query thread): the operator's
 *    stores, the version its batch starts from (the newest committed one), the standbys and
 *    warm-ups wanted and each store's active executor (Spark's `StateStoreCoordinator`);
 *  - from executors' followers ([[poll]], Spark's RPC threads): which executors can hold
 *    standbys, on which host, and the version each of their copies holds;
 *  - from Spark's listener bus: executors removed and queries terminated.
 * What it decides at each planning: the standbys ([[StandbyPlacement]]), where the stores of a
 * lost executor run ([[FailoverPlacement]]), the moves that
 * balance each operator's actives with their warm-up copies ([[WarmupPlacement]]), and which of
 * those moves this micro-batch makes: those whose copy on the destination is within the
 * acceptable lag at planning ([[preferredLocation]]). Moves are decided at a batch boundary, as
 * Kafka's assignor decides them at a rebalance, never while a batch runs.
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
final class ReplicaCoordinator(
    liveAfterMillis: Long,
    clock: () => Long = () => System.currentTimeMillis(),
    schedulerExecutors: () => Option[Set[String]] = () => None
) extends Logging {
  import ReplicaCoordinator._

  /** Operators with standbys, by (query id, state root, operator id). */
  private var operators = Map.empty[(String, String, Long), Operator]
  private var actives = Map.empty[ReplicaStore, String]
  private var standbys = Map.empty[ReplicaStore, Seq[String]]

  /**
   * Copies of replaced standbys, kept where they are until a current standby of the store holds
   * a version at least as new (make before break): store -> executors. A standby that placement
   * moves (balance, StandbyPlacement rule 2) starts empty on its new executor; dropping the old
   * copy at once left the store with no warm copy until the new one caught up, and losing its
   * active in that window restored it cold (found by bench/recovery.py on S3: a standby moved
   * at the planning of the micro-batch during which its active executor was lost; 880,000
   * records replayed). Such a copy is followed, reported and preferred like a standby.
   */
  private var replaced = Map.empty[ReplicaStore, Set[String]]

  /** Stores whose active should move, to which executor (balance, docs/replicas.md "Warm-up"). */
  private var moves = Map.empty[ReplicaStore, String]

  /** The moves this micro-batch makes (their copy was ready when it was planned). */
  private var movingNow = Map.empty[ReplicaStore, String]

  /** The warm-up copies those moves need: store -> the executor that keeps it. */
  private var warmups = Map.empty[ReplicaStore, String]

  /**
   * Stores whose active executor was lost when their operator's micro-batch was planned: the
   * copy their next task runs on ([[FailoverPlacement]]).
   */
  private var failovers = Map.empty[ReplicaStore, String]

  /**
   * Per operator, the executors Spark recorded as the active of one of its stores at a planning:
   * they have run the operator's tasks. The others are young to it ([[StandbyPlacement]], rule 4).
   */
  private var ranOperator = Map.empty[(String, String, Long), Set[String]]

  /** Stores whose active executor changed between an operator's last two plannings. */
  private var lastMoves = Map.empty[(String, String, Long), Int]
  private var followers = Map.empty[String, Follower]

  /** Executors Spark removed: never alive again (a replacement gets a new id). */
  private var removed = Set.empty[String]

  /**
   * A micro-batch of an operator that wants `wanted` is about to run from `committed`;
   * `locate(partition)` gives Spark's recorded location of a partition's store
   * (`executor_<host>_<id>`). Recomputes the operator's standbys, moves and warm-ups. An operator
   * that wants neither standbys nor warm-ups is forgotten: kstate leaves its placement to Spark.
   */
  def plan(
      queryId: String,
      stateRoot: String,
      operatorId: Long,
      storeName: String,
      numPartitions: Int,
      wanted: Wanted,
      committed: Long,
      locate: Int => Option[String]
  ): Unit = {
    val stores = (0 until numPartitions).map(p => ReplicaStore(queryId, stateRoot, operatorId, p, storeName))
    val located = stores.map(s => s -> locate(s.partition).map(ReplicaCoordinator.executorOf))
    synchronized {
      val key = (queryId, stateRoot, operatorId)
      if (!wanted.any) {
        forget(_._1 == key)
      } else {
        operators += key -> Operator(numPartitions, wanted, committed)
        val moved = located.count { case (s, e) => e.isDefined && actives.get(s).exists(a => !e.contains(a)) }
        lastMoves += key -> moved
        located.foreach { case (s, e) => e.fold(actives -= s)(a => actives += s -> a) }
        ranOperator += key -> (ranOperator.getOrElse(key, Set.empty) ++ located.flatMap(_._2))
        val isAlive = aliveNow
        val live = liveFollowers(isAlive)
        val young = live.keySet -- ranOperator(key)
        placeStandbys(stores, s => actives.get(s).filter(isAlive), live, wanted.standbys, young)
        placeFailovers(key, stores, wanted, live, isAlive)
        planMoves(key, stores, wanted, live, isAlive)
        replaceStandbysOfMoves(stores, live, wanted, isAlive, young)
      }
    }
  }

  /**
   * Where the operator's stores whose active executor is lost run next: spread over their live
   * copies ([[FailoverPlacement]]; caller holds the lock).
   */
  private def placeFailovers(
      key: (String, String, Long),
      stores: Seq[ReplicaStore],
      wanted: Wanted,
      live: Map[String, Follower],
      isAlive: String => Boolean
  ): Unit = {
    val lost = stores.filter(s => actives.get(s).exists(a => !isAlive(a)))
    val slots = lost.map(s => FailoverPlacement.Slot(s, heldCopies(s, live).toMap))
    val running = stores.flatMap(s => actives.get(s).filter(isAlive)).groupBy(identity).map { case (e, l) =>
      e -> l.size
    }
    failovers = failovers.filterNot { case (s, _) => stores.contains(s) } ++
      FailoverPlacement.assign(slots, running, committedOf(key), wanted.acceptableLag)
  }

  /**
   * The live copies a task of `store` can adopt after its active executor is lost, with the
   * version each holds: its standbys, its warm-up copy and its replaced standbys' copies (caller
   * holds the lock).
   */
  private def heldCopies(store: ReplicaStore, live: Map[String, Follower]): Seq[(String, Long)] =
    (standbys.getOrElse(store, Nil) ++ warmups.get(store) ++ replaced.getOrElse(store, Set.empty)).distinct
      .flatMap(e => live.get(e).flatMap(_.holdings.get(store)).map(e -> _))

  /** The operator's moves and warm-ups, within the query's warm-up budget (caller holds the lock). */
  private def planMoves(
      key: (String, String, Long),
      stores: Seq[ReplicaStore],
      wanted: Wanted,
      live: Map[String, Follower],
      isAlive: String => Boolean
  ): Unit = {
    def ofOperator(s: ReplicaStore) = (s.queryId, s.stateRoot, s.operatorId) == key
    val othersWarming = warmups.count { case (s, e) => s.queryId == key._1 && !ofOperator(s) && live.contains(e) }
    val slots = stores.map { s =>
      val copies = live.flatMap { case (e, f) => f.versionOf(s).map(e -> _) }
      failovers.get(s) match {
        case Some(e) => WarmupPlacement.Slot(s, Some(e), standbys.getOrElse(s, Nil), copies, movable = false)
        case None => WarmupPlacement.Slot(s, actives.get(s).filter(isAlive), standbys.getOrElse(s, Nil), copies)
      }
    }
    val p = WarmupPlacement.plan(
      slots,
      live.keySet,
      moves.filter(m => ofOperator(m._1)),
      wanted.maxWarmups - othersWarming
    )
    moves = moves.filterNot(m => ofOperator(m._1)) ++ p.moves
    warmups = warmups.filterNot(w => ofOperator(w._1)) ++ p.warmups
    // a copy catches up the versions it lacks; a loaded provider is reused only as it is
    def ready(s: ReplicaStore, e: String) = live.get(e).exists { f =>
      f.holdings.get(s).exists(_ >= committedOf(key) - wanted.acceptableLag) || f.loaded.get(
        s
      ).contains(committedOf(key))
    }
    movingNow = movingNow.filterNot(m => ofOperator(m._1)) ++ p.moves.filter { case (s, e) => ready(s, e) }
  }

  private def committedOf(key: (String, String, Long)): Long = operators(key).committed

  /**
   * A store that moves in this micro-batch runs on its destination from now on, so its standbys
   * are placed against that executor at once (caller holds the lock). Found on a cluster: a store
   * moved onto the executor of its only standby had no other copy until the next planning placed
   * a new standby and that one caught up, and losing the destination in that window restored it
   * cold. The destination keeps its copy (as the store's warm-up) until the task adopted it.
   */
  private def replaceStandbysOfMoves(
      stores: Seq[ReplicaStore],
      live: Map[String, Follower],
      wanted: Wanted,
      isAlive: String => Boolean,
      young: Set[String]
  ): Unit = {
    val moving = stores.flatMap(s => movingNow.get(s).map(s -> _)).toMap
    if (moving.nonEmpty && wanted.standbys > 0) {
      placeStandbys(
        stores,
        s => moving.get(s).orElse(actives.get(s).filter(isAlive)),
        live,
        wanted.standbys,
        young // a destination that has not run the operator yet stays young until Spark records a task there
      )
      warmups ++= moving
    }
  }

  /**
   * Re-places `stores`' standbys ([[StandbyPlacement]]), each store's active as `activeOf` says,
   * keeping each replaced standby that holds a version as a [[replaced]] copy until a current
   * standby is as new, and releasing those that are no longer needed (caller holds the lock).
   */
  private def placeStandbys(
      stores: Seq[ReplicaStore],
      activeOf: ReplicaStore => Option[String],
      live: Map[String, Follower],
      n: Int,
      young: Set[String]
  ): Unit = {
    val placed = StandbyPlacement.assign(
      stores.map(s => StandbyPlacement.Slot(s, activeOf(s), standbys.getOrElse(s, Nil))),
      live.map { case (e, f) => e -> f.host },
      n,
      young
    )
    placed.foreach { case (s, now) =>
      val gone = standbys.getOrElse(s, Nil).filterNot(now.contains)
      if (gone.nonEmpty) replaced += s -> (replaced.getOrElse(s, Set.empty) ++ gone)
    }
    standbys ++= placed
    stores.foreach { s =>
      replaced.get(s).foreach { es =>
        val current = standbys.getOrElse(s, Nil)
        val newest = current.flatMap(e => live.get(e).flatMap(_.holdings.get(s))).maxOption
        val keep = es.filter { e =>
          !current.contains(e) && !activeOf(s).contains(e) &&
          live.get(e).flatMap(_.holdings.get(s)).exists(v => newest.forall(_ < v))
        }
        if (keep.isEmpty) replaced -= s else replaced += s -> keep
      }
    }
  }

  /**
   * Where the next task of `store` should run. While Spark's location (`spark`) is alive: the
   * destination of the store's move when this micro-batch makes it (its copy there was within
   * the acceptable lag when the batch was planned, [[plan]]) and that executor lives, else
   * Spark's location. Once Spark's location is lost: the copy chosen for it when the batch was
   * planned ([[FailoverPlacement]]) while that executor lives and holds it, else the alive copy
   * (standby, warm-up or replaced standby's) that holds the newest version (the loss was learned
   * after the planning); no preference when there is none (a dead location would hold the task
   * back for `spark.locality.wait` before it restores anywhere). One location, never a list:
   * Spark treats several as unordered.
   */
  def preferredLocation(store: ReplicaStore, spark: Option[String]): Option[String] = synchronized {
    val isAlive = aliveNow
    val sparkAlive = spark.exists(l => isAlive(ReplicaCoordinator.executorOf(l)))
    operators.get((store.queryId, store.stateRoot, store.operatorId)) match {
      case None => spark
      case Some(_) =>
        val live = liveFollowers(isAlive)
        val chosen: Option[(String, Follower)] =
          if (sparkAlive) movingNow.get(store).flatMap(e => live.get(e).map(e -> _))
          else failovers.get(store).flatMap(e => live.get(e).filter(_.holdings.contains(store)).map(e -> _))
            .orElse(heldCopies(store, live).maxByOption(_._2).map { case (e, _) => (e, live(e)) })
        chosen.map { case (e, f) => ReplicaCoordinator.location(f.host, e) }.orElse(spark.filter(_ => sparkAlive))
    }
  }

  /**
   * What a task of `store` prefers, for Spark: [[preferredLocation]], and while that is Spark's
   * own live location, the hosts of the store's live standbys holding a version besides
   * (host-level hints: Spark tries the executor first, then, after `spark.locality.wait` or once
   * that executor is gone, any executor of those hosts). Spark fixes a task's preferences when
   * it submits the micro-batch's stage: when the active executor dies while that stage runs (or
   * before Spark learned of it at submission), its partitions' tasks still prefer the dead
   * executor, and without these hosts they run on the first free core after the wait, often the
   * replacement executor, and restore cold; with them, where a standby's host has an executor
   * (one executor per host: the standby's), they run there and adopt it. On one host (a
   * `local-cluster`) they add nothing.
   */
  def preferredLocations(store: ReplicaStore, spark: Option[String]): Seq[String] = {
    val primary = preferredLocation(store, spark)
    val hosts = synchronized {
      val live = liveFollowers()
      if (primary.isEmpty || primary != spark) Nil
      else (standbys.getOrElse(store, Nil) ++ replaced.getOrElse(store, Set.empty))
        .flatMap(e => live.get(e).filter(_.holdings.contains(store)).map(_.host))
    }
    val primaryHost =
      primary.map(l => l.stripPrefix("executor_").substring(0, l.stripPrefix("executor_").lastIndexOf('_')))
    primary.toSeq ++ hosts.distinct.filterNot(h => primaryHost.contains(h))
  }

  /** A follower's poll: records what it holds, answers what it should hold. */
  def poll(p: Poll): Assignments = synchronized {
    if (removed(p.executorId)) Assignments(Nil)
    else {
      followers += p.executorId -> Follower(p.host, clock(), p.holdings, p.loaded)
      val mine = standbys.collect { case (s, es) if es.contains(p.executorId) => s }.toSet ++
        warmups.collect { case (s, e) if e == p.executorId => s } ++
        replaced.collect { case (s, es) if es.contains(p.executorId) => s } ++
        failovers.collect { case (s, e) if e == p.executorId => s } // kept until the task adopts it
      Assignments(mine.toSeq.flatMap { s =>
        operators.get((s.queryId, s.stateRoot, s.operatorId)).map(o => Standby(s, o.committed))
      })
    }
  }

  /** Spark removed `executorId` (lost, killed or decommissioned). */
  def executorRemoved(executorId: String): Unit = synchronized {
    removed += executorId
    followers -= executorId
    ranOperator = ranOperator.map { case (k, ran) => k -> (ran - executorId) }
  }

  /** `queryId` stopped: its stores get no standbys until it runs again. */
  def queryTerminated(queryId: String): Unit = synchronized(forget(_._1._1 == queryId))

  /** The executors whose followers poll now: those that can hold copies (for tests, as a list). */
  def followingExecutors: java.util.List[String] = synchronized {
    import scala.jdk.CollectionConverters._
    liveFollowers().keys.toSeq.sorted(StandbyPlacement.ExecutorOrder).asJava
  }

  /** The table of a query's stores (for `kstate.replica_status` and tests). */
  def status(queryId: String): Seq[ReplicaCoordinator.StoreStatus] = synchronized {
    val live = liveFollowers()
    operators.toSeq.filter(_._1._1 == queryId).flatMap { case ((_, root, op), o) =>
      standbys.keys.filter(s => s.queryId == queryId && s.stateRoot == root && s.operatorId == op).toSeq
        .sortBy(_.partition).map { s =>
          def held(e: String) = e -> live.get(e).flatMap(f => f.versionOf(s))
          ReplicaCoordinator.StoreStatus(
            s,
            actives.get(s),
            o.committed,
            standbys.getOrElse(s, Nil).map(held),
            warmups.get(s).map(held),
            moves.get(s),
            replaced.getOrElse(s, Set.empty).toSeq.sorted(StandbyPlacement.ExecutorOrder).map(held)
          )
        }
    }
  }

  /**
   * One operator in numbers: its standbys on live executors, how many versions the least
   * current store's warmest standby lags behind the committed version (a store with no warm
   * standby lags by all of it), its warm-up copies on live executors, and the stores whose active
   * executor changed between its last two plannings.
   */
  def summary(queryId: String, stateRoot: String, operatorId: Long): ReplicaCoordinator.Summary = synchronized {
    val live = liveFollowers()
    val key = (queryId, stateRoot, operatorId)
    def ofOperator(s: ReplicaStore) = (s.queryId, s.stateRoot, s.operatorId) == key
    operators.get(key).fold(ReplicaCoordinator.Summary(0, 0L, 0, 0)) { o =>
      val stores = standbys.filter { case (s, _) => ofOperator(s) }
      val alive = stores.values.map(_.count(live.contains)).sum
      val lags = stores.filter(_ => o.wanted.standbys > 0).map { case (s, es) =>
        // the same copies replica_status shows: a standby copy, else a provider left loaded there
        val best = (es ++ replaced.getOrElse(s, Set.empty)).flatMap(e => live.get(e).flatMap(_.versionOf(s))).maxOption
        best.fold(o.committed)(v => math.max(0L, o.committed - v))
      }
      val warming = warmups.count { case (s, e) => ofOperator(s) && live.contains(e) }
      ReplicaCoordinator.Summary(alive, if (lags.isEmpty) 0L else lags.max, warming, lastMoves.getOrElse(key, 0))
    }
  }

  /**
   * [[status]] as JSON (for Python's `kstate.replica_status`): a list of
   * `{"operator", "partition", "store", "active", "committed_version", "standbys": [{"executor", "version"}],
   * "warmup": {"executor", "version"}, "moving_to", "replaced_standbys": [{"executor", "version"}]}`,
   * `active`, `version`, `warmup` and
   * `moving_to` null when unknown or none.
   */
  def statusJson(queryId: String): String = {
    import org.json4s.JsonDSL._
    import org.json4s.{JLong, JNull, JString, JValue}
    // an absent value is null, not a missing field (json4s drops None)
    def orNull[T](o: Option[T])(f: T => JValue): JValue = o.map(f).getOrElse(JNull)
    def copy(c: (String, Option[Long])): JValue = ("executor" -> c._1) ~ ("version" -> orNull(c._2)(JLong(_)))
    val rows = status(queryId).map { s =>
      ("operator" -> s.store.operatorId) ~ ("partition" -> s.store.partition) ~ ("store" -> s.store.storeName) ~
        ("active" -> orNull(s.active)(JString(_))) ~ ("committed_version" -> s.committed) ~
        ("standbys" -> s.standbys.map(copy)) ~ ("warmup" -> orNull(s.warmup)(copy)) ~
        ("moving_to" -> orNull(s.movingTo)(JString(_))) ~ ("replaced_standbys" -> s.replaced.map(copy))
    }
    org.json4s.jackson.JsonMethods.compact(org.json4s.jackson.JsonMethods.render(rows))
  }

  private def forget(which: (((String, String, Long), Operator)) => Boolean): Unit = {
    val gone = operators.filter(which).keySet
    operators --= gone
    def ofGone(s: ReplicaStore) = gone((s.queryId, s.stateRoot, s.operatorId))
    standbys = standbys.filterNot { case (s, _) => ofGone(s) }
    replaced = replaced.filterNot { case (s, _) => ofGone(s) }
    actives = actives.filterNot { case (s, _) => ofGone(s) }
    moves = moves.filterNot { case (s, _) => ofGone(s) }
    movingNow = movingNow.filterNot { case (s, _) => ofGone(s) }
    warmups = warmups.filterNot { case (s, _) => ofGone(s) }
    failovers = failovers.filterNot { case (s, _) => ofGone(s) }
    lastMoves --= gone
    ranOperator --= gone
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
  private final case class Operator(numPartitions: Int, wanted: Wanted, committed: Long)
  private final case class Follower(
      host: String,
      lastPoll: Long,
      holdings: Map[ReplicaStore, Long],
      loaded: Map[ReplicaStore, Long]
  ) {

    /** The version this executor holds of `s`: its copy's, else its loaded provider's. */
    def versionOf(s: ReplicaStore): Option[Long] = holdings.get(s).orElse(loaded.get(s))
  }

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

  /**
   * What an operator wants of the coordinator (read from the session at each planning).
   *
   * @param standbys       standby copies per store (`spark.kstate.standbyReplicas`); 0: none
   * @param maxWarmups     warm-up copies at once, over all of the query's operators
   *                       (`spark.kstate.maxWarmupReplicas`); 0: stores move only to standbys,
   *                       and with no standbys either, never
   * @param acceptableLag  versions a copy may lag behind the committed version for its store's
   *                       active to move to it (`spark.kstate.acceptableRecoveryLag`)
   */
  final case class Wanted(standbys: Int, maxWarmups: Int, acceptableLag: Long) {

    /** Whether the coordinator has anything to do for the operator. */
    def any: Boolean = standbys > 0 || maxWarmups > 0
  }

  /**
   * An operator in numbers: standbys on live executors, the largest lag in versions, warm-up
   * copies on live executors, and ownership moves between its last two plannings.
   */
  final case class Summary(standbys: Int, maxLagVersions: Long, warmups: Int, ownershipMoves: Int)

  /**
   * One store: its active executor, committed version, each standby and its warm-up copy with
   * the version it holds, the executor its active should move to, and the copies of standbys
   * that placement replaced, kept until a current standby is as new ([[ReplicaCoordinator]]'s
   * `replaced`).
   */
  final case class StoreStatus(
      store: ReplicaStore,
      active: Option[String],
      committed: Long,
      standbys: Seq[(String, Option[Long])],
      warmup: Option[(String, Option[Long])],
      movingTo: Option[String],
      replaced: Seq[(String, Option[Long])] = Nil
  )
}
