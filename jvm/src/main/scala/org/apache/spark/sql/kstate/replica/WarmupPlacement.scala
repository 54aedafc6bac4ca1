package org.apache.spark.sql.kstate.replica

/**
 * Decides which stores' actives should move, and where, so that an operator's actives are
 * balanced over the executors, and which warm-up copies the moves need (KIP-441's warm-up
 * replicas, docs/replicas.md "Warm-up"). A pure function of what the coordinator knows, so that
 * it is tested on its own; the coordinator moves a store only once its copy on the destination
 * is within the acceptable lag ([[ReplicaCoordinator.preferredLocation]]).
 *
 * The rules:
 *  1. Balance: an operator's actives on live executors differ by at most one between the
 *     executors that can hold copies (their followers poll). Executors are never filled past
 *     that; a store whose active executor is lost or unknown is not moved here (failover is the
 *     standbys' business, [[FailoverPlacement]]). A store failing over to a copy counts on that
 *     executor (it runs there in this micro-batch) but does not move: a move planned onto the
 *     executor that also takes a lost executor's stores would pile them up.
 *  2. Sticky: only as many stores move as balance needs, from the fullest executor to the
 *     emptiest; a store keeps a move (and its warm-up) planned in an earlier micro-batch while
 *     balance still needs it, so a warm-up is not thrown away half done. Among the other stores
 *     of the fullest executor, one with a copy on the destination moves first (the warmest),
 *     then by partition.
 *  3. A move to an executor that holds the store's standby needs no warm-up: the standby is the
 *     copy. Any other move needs a warm-up copy on its destination, and at most `budget` of those
 *     exist at once; a move without one waits for a later micro-batch.
 *
 * Ties by executor id (numeric order, [[StandbyPlacement.ExecutorOrder]]), so the result is
 * deterministic.
 */
object WarmupPlacement {

  /**
   * One store of the operator.
   *
   * @param active   its active executor, if known and alive
   * @param standbys the executors its standbys are placed on
   * @param copies   the committed version each live executor's copy of it holds
   * @param movable  false for a store failing over to `active` in this micro-batch (counted
   *                 there, never moved)
   */
  final case class Slot(
      store: ReplicaStore,
      active: Option[String],
      standbys: Seq[String],
      copies: Map[String, Long],
      movable: Boolean = true
  )

  /**
   * @param moves   store -> the executor its active should move to
   * @param warmups store -> the executor that keeps a warm-up copy of it (a subset of `moves`:
   *                the moves whose destination holds no standby of the store)
   */
  final case class Plan(moves: Map[ReplicaStore, String], warmups: Map[ReplicaStore, String])

  object Plan { val Empty: Plan = Plan(Map.empty, Map.empty) }

  /**
   * @param slots     every store of the operator
   * @param executors the executors that can take an active (live, their followers poll)
   * @param planned   the moves planned at the previous micro-batch (kept while still useful)
   * @param budget    warm-up copies this operator may keep now (the query's maximum less those
   *                  of its other operators)
   */
  def plan(slots: Seq[Slot], executors: Set[String], planned: Map[ReplicaStore, String], budget: Int): Plan = {
    val order = executors.toSeq.sorted(StandbyPlacement.ExecutorOrder)
    if (order.size < 2) return Plan.Empty
    val placed = slots.filter(_.active.isDefined).sortBy(_.store.partition)
    val load = scala.collection.mutable.LinkedHashMap.empty[String, Int]
    order.foreach(load(_) = 0)
    placed.foreach(s => load(s.active.get) = load.getOrElse(s.active.get, 0) + 1)
    val onExecutor = placed.filter(_.movable).groupBy(_.active.get).map { case (e, ss) =>
      e -> ss.to(scala.collection.mutable.ArrayBuffer)
    }
    var moves = Vector.empty[(Slot, String)]
    // From the fullest executor to the emptiest while they differ by 2 or more. A store that
    // moved in never moves on: a destination was the emptiest, so it stays within one of it.
    def step(): Boolean = {
      // the fullest executor with a store that may move (a failing-over store may not)
      val from = load.keys.toSeq.sorted(StandbyPlacement.ExecutorOrder)
        .filter(e => onExecutor.get(e).exists(_.nonEmpty)).maxByOption(e => load(e))
      val to = order.minBy(e => load(e))
      val candidates = from.flatMap(onExecutor.get).getOrElse(scala.collection.mutable.ArrayBuffer.empty[Slot])
      if (from.forall(f => load(f) - load(to) <= 1) || candidates.isEmpty) false
      else {
        val pick = candidates.find(s => planned.get(s.store).contains(to))
          .orElse(candidates.filter(_.copies.contains(to)).maxByOption(_.copies(to)))
          .getOrElse(candidates.head)
        candidates -= pick
        moves :+= pick -> to
        load(from.get) -= 1
        load(to) += 1
        true
      }
    }
    while (step()) {}
    // warm-ups: moves planned before keep theirs first, then by partition
    val needing = moves.filterNot { case (s, to) => s.standbys.contains(to) }
      .sortBy { case (s, to) => (if (planned.get(s.store).contains(to)) 0 else 1, s.store.partition) }
    val warmups = needing.take(math.max(0, budget)).map { case (s, to) => s.store -> to }.toMap
    val copied = moves.filter { case (s, to) => s.standbys.contains(to) || warmups.contains(s.store) }
    Plan(copied.map { case (s, to) => s.store -> to }.toMap, warmups)
  }
}
