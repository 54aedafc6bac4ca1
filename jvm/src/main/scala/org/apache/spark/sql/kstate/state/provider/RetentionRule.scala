package org.apache.spark.sql.kstate.state.provider

import org.apache.spark.sql.kstate.state.provider.CheckpointFiles.Versions

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
private[state] object RetentionRule {
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
}
