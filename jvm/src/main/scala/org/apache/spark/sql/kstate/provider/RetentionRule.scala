package org.apache.spark.sql.kstate.provider

import org.apache.spark.sql.kstate.provider.CheckpointFiles.{IdVersions, Versions}
import org.apache.spark.sql.kstate.engine.StateFile.LineageEntry

/**
 * Which files maintenance may delete. The rule: a restore of version v reads the newest
 * snapshot at or below v, then every changelog after it up to v. With `latest` the newest
 * version on disk and `keep` = max(1, `spark.sql.streaming.minBatchesToRetain`), the retained
 * versions are `latest - keep + 1 .. latest`. Let `base` be the newest snapshot at or below the
 * oldest retained version that is usable (verified readable, see [[delete]]'s `usable`). Then
 * restoring any retained version needs only `base` and later snapshots and the changelogs after
 * `base`: everything older (snapshots below `base`, changelogs up to `base`) is deleted. Without
 * a usable `base`, nothing is deleted.
 *
 * Example (keep 4, snapshots at 3, 6, 9, 12, changelogs 1..14): retained 11..14, base 9;
 * deleted: snapshots 3 and 6, changelogs 1..9; kept: snapshots 9 and 12, changelogs 10..14.
 * Should snapshot 9 be damaged (unusable), base is 6: only snapshot 3 and changelogs 1..6 go,
 * and deleting the damaged snapshot 9 leaves every retained version restorable from 6.
 */
private[kstate] object RetentionRule {

  /** The files of `on` to delete; `usable(s)` says whether snapshot s may serve as the base. */
  def delete(on: Versions, minVersionsToRetain: Int, usable: Long => Boolean): Versions =
    on.latest match {
      case None => Versions(Set.empty, Set.empty)
      case Some(latest) =>
        val oldestKept = latest - math.max(1, minVersionsToRetain) + 1
        val candidates = on.snapshots.filter(_ <= oldestKept).toSeq.sorted(Ordering[Long].reverse)
        candidates.find(usable) match {
          case None => Versions(Set.empty, Set.empty)
          case Some(base) => Versions(on.changelogs.filter(_ <= base), on.snapshots.filter(_ < base))
        }
    }

  /** Format v2: the files to delete, and the base snapshot they were chosen by. */
  final case class IdDeletes(changelogs: Set[LineageEntry], snapshots: Set[LineageEntry], base: Option[LineageEntry])

  /**
   * Checkpoint format v2: the same rule along the committed chain. `chain` is the (version, id)
   * of the committed version `tip` and the versions below it (ascending, ending at `tip`); the
   * retained versions are `tip - keep + 1 .. tip` of that chain. The base is the newest usable
   * snapshot on the chain at or below the oldest retained version; every file of a version below
   * it is deleted, whatever its id, and so are the base version's changelogs and its snapshots of
   * other ids. Files of other ids at versions from the base on (other attempts: failed,
   * speculative, or replaced by a re-run) stay until a later base passes them. Without a usable
   * base on the chain, nothing is deleted.
   *
   * Example (keep 2; committed chain 1_a 2_b 3_c 4_d 5_e, snapshots 3_c and 3_x (another attempt
   * of version 3), changelogs 1_a..5_e and 4_y): retained 4..5, base 3_c: deleted 1_a, 2_b, 3_c's
   * changelog and snapshot 3_x; kept snapshot 3_c, changelogs 4_d, 4_y, 5_e.
   */
  def deleteWithIds(
      on: IdVersions,
      chain: Seq[LineageEntry],
      tip: Long,
      minVersionsToRetain: Int,
      usable: LineageEntry => Boolean
  ): IdDeletes = {
    val oldestKept = tip - math.max(1, minVersionsToRetain) + 1
    chain.filter(e => e.version <= oldestKept && on.snapshots(e)).sortBy(-_.version).find(usable) match {
      case None => IdDeletes(Set.empty, Set.empty, None)
      case Some(base) =>
        IdDeletes(
          on.changelogs.filter(_.version <= base.version),
          on.snapshots.filter(s => s.version < base.version || (s.version == base.version && s != base)),
          Some(base)
        )
    }
  }
}
