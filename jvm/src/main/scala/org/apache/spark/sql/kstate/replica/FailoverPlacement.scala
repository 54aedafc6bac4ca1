package org.apache.spark.sql.kstate.replica

/**
 * Chooses where each store whose active executor is lost runs next: on one of its live copies
 * (standby, warm-up, or a replaced standby's copy still followed), spreading the failed-over
 * stores over the executors that hold copies instead of piling them onto one. A pure function
 * of what the coordinator knows at a planning, so that it is tested on its own.
 *
 * Why: Spark runs a failed-over store's task where its copy is; with one core per executor, an
 * executor that takes four of an operator's six stores runs them one after another while the
 * others idle. Found by bench/recovery.py on S3: a lost executor's two stores both went to the
 * executor of their standbys, which also took a planned move in the same micro-batch (4 tasks
 * against 2 on the other executor, 1.86x the steady micro-batch); in the next loss, three stores
 * went to the executor holding their standbys (5 tasks against 1) although a warm-up copy one
 * version behind was on the other.
 *
 * The rules:
 *  1. Candidates: the copies within `acceptableLag` versions of the committed version (the
 *     batch replays at most that many versions' changelogs, as a move does); when none is, the
 *     copy holding the newest version (the least to replay); no copy, no choice (a cold restore
 *     wherever Spark runs the task).
 *  2. Among the candidates, the executor that will run the fewest of the operator's stores in
 *     this micro-batch (its live actives, plus the stores this placement already gave it); then
 *     the newest version; then executor id (numeric order), so the result is deterministic.
 *  3. Stores with fewer candidates choose first (then by partition), so a store that can go to
 *     one executor only does not find it filled by one that could have gone elsewhere; then a
 *     store whose executor ended with at least 2 more stores than another of its candidates
 *     moves there, until none can.
 */
object FailoverPlacement {

  /**
   * One store whose active executor is lost.
   *
   * @param copies the version each live executor's copy of it holds
   */
  final case class Slot(store: ReplicaStore, copies: Map[String, Long])

  /**
   * @param slots         the operator's stores whose active executor is lost
   * @param actives       the operator's stores each live executor runs (their actives are alive)
   * @param committed     the version the micro-batch starts from
   * @param acceptableLag versions a copy may lag behind `committed` and still be a candidate
   * @return store -> the executor its next task should run on (stores without a copy absent)
   */
  def assign(
      slots: Seq[Slot],
      actives: Map[String, Int],
      committed: Long,
      acceptableLag: Long
  ): Map[ReplicaStore, String] = {
    val load = scala.collection.mutable.Map.empty[String, Int].withDefaultValue(0) ++= actives
    def candidates(s: Slot): Seq[(String, Long)] = {
      val near = s.copies.filter(_._2 >= committed - acceptableLag).toSeq
      lazy val newest = s.copies.values.max
      if (near.nonEmpty || s.copies.isEmpty) near else s.copies.filter(_._2 == newest).toSeq
    }
    val order = Ordering.Tuple3(Ordering.Int, Ordering.Long, StandbyPlacement.ExecutorOrder)
    val choices = slots.map(s => s.store -> candidates(s)).filter(_._2.nonEmpty)
      .sortBy { case (s, c) => (c.size, s.partition) }
    val chosen = scala.collection.mutable.LinkedHashMap.empty[ReplicaStore, String]
    choices.foreach { case (s, c) =>
      val (e, _) = c.minBy { case (e, v) => (load(e), -v, e) }(order)
      load(e) += 1
      chosen(s) = e
    }
    // Greedy choices can leave a store on an executor that later choices filled: it moves to a
    // candidate with at least 2 fewer (each move lowers the sum of squared loads, so this ends).
    var moved = true
    while (moved) {
      moved = false
      choices.foreach { case (s, c) =>
        val e = chosen(s)
        c.filter { case (o, _) => load(o) + 2 <= load(e) }.minByOption { case (o, v) => (load(o), -v, o) }(order)
          .foreach { case (o, _) =>
            load(e) -= 1; load(o) += 1; chosen(s) = o; moved = true
          }
      }
    }
    chosen.toMap
  }
}
