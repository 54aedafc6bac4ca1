package org.apache.spark.sql.kstate.replica

/**
 * Chooses the executors that hold standby copies of each store (Kafka Streams' standby task
 * assignment, with an executor as the instance and its host as the rack). A pure function of
 * what the coordinator knows, so that it is tested on its own.
 *
 * The rules, in order:
 *  1. A standby never sits on its store's active executor, and a store never has two standbys
 *     on one executor.
 *  2. Sticky: a standby stays where it is while its executor can hold standbys and is not the
 *     active one, unless another executor that could take it holds at least 2 fewer actives
 *     and standbys (an executor added since: Kafka's assignor balances standbys too; the
 *     threshold of 2 keeps a move from making the balance worse the other way). A store whose
 *     active executor is unknown or lost keeps its standbys as they are (they are where the
 *     next task should run) and gets no new ones until an active is known again.
 *  3. A missing standby goes to another host than the active's and the store's other standbys
 *     when one exists, else to the same host; among those, to an executor that is not young
 *     (below) when one exists; among those, to the executor with the fewest actives and
 *     standbys; ties by executor id (numeric order), so the result is deterministic.
 *  4. A young executor (one that has not yet run a task of the operator: typically the
 *     replacement of a lost one) takes a standby only when no other executor can: a standby
 *     there would make the operator's first task on that JVM a failover, paying its class
 *     loading, deserialization and JIT compilation inside the recovery micro-batch (measured at
 *     1.6 s against 0.4 s for the same task on a warm executor, docs/replicas.md). So rule 2
 *     never moves a standby from an executor that is not young to a young one, and rule 3 puts
 *     host diversity first, then age, then load. An executor stops being young once it has run
 *     one of the operator's actives (a warm-up move balances the actives onto it); from then on
 *     rule 2 moves standbys to it as it moves them to any executor with fewer.
 */
object StandbyPlacement {

  /**
   * One store to place standbys for.
   *
   * @param active  its active executor, if known and alive
   * @param current its standbys now
   */
  final case class Slot(store: ReplicaStore, active: Option[String], current: Seq[String])

  /**
   * @param slots     every store that wants standbys
   * @param executors the executors that can hold standbys (their followers poll), with their hosts
   * @param n         standbys per store
   * @param young     the executors among `executors` that have not yet run a task of the
   *                  operator (rule 4); none by default
   * @return each store's standbys: at most `n`
   */
  def assign(
      slots: Seq[Slot],
      executors: Map[String, String],
      n: Int,
      young: Set[String] = Set.empty
  ): Map[ReplicaStore, Seq[String]] = {
    val load = scala.collection.mutable.Map.empty[String, Int].withDefaultValue(0)
    slots.flatMap(_.active).foreach(e => load(e) += 1)
    val kept = slots.map { s =>
      val keep = s.current.distinct.filter(e => executors.contains(e) && !s.active.contains(e)).take(n)
      keep.foreach(e => load(e) += 1)
      s -> keep
    }
    val ordered = executors.keys.toSeq.sorted(ExecutorOrder)
    kept.sortBy(_._1.store.toString).map { case (s, keep) =>
      var chosen = keep
      if (s.active.isDefined) {
        chosen = chosen.map { e =>
          val others = ordered.filterNot(c => s.active.contains(c) || chosen.contains(c))
          others.filter(c => load(c) + 2 <= load(e) && (young(e) || !young(c)))
            .minByOption(c => (if (young(c)) 1 else 0, load(c))) match {
            case Some(c) => load(e) -= 1; load(c) += 1; c
            case None => e
          }
        }
        var candidates = ordered.filterNot(e => s.active.contains(e) || chosen.contains(e))
        while (chosen.size < n && candidates.nonEmpty) {
          val usedHosts = (s.active.toSeq ++ chosen).flatMap(executors.get).toSet
          val pick = candidates.minBy(e => (if (usedHosts(executors(e))) 1 else 0, if (young(e)) 1 else 0, load(e)))
          chosen :+= pick
          load(pick) += 1
          candidates = candidates.filterNot(_ == pick)
        }
      }
      s.store -> chosen
    }.toMap
  }

  /** Executor ids in numeric order where they are numbers ("2" before "10"), then by name. */
  val ExecutorOrder: Ordering[String] = Ordering.by((e: String) => (e.toLongOption.isEmpty, e.length, e))
}
