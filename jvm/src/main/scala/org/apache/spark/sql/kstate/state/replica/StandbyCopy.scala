package org.apache.spark.sql.kstate.state.replica

import scala.util.control.NonFatal

import org.apache.spark.sql.kstate.state.provider.{CheckpointFiles, Restore, WorkingCopy}
import org.apache.spark.sql.kstate.state.store.{StateFile, StateFiles}

/**
 * One standby copy of a store on this executor: a working copy at a committed version, kept
 * current by replaying the checkpoint's changelogs after it (seed 004's restore loop), until a
 * provider of this executor adopts it ([[take]]) or the coordinator no longer wants it
 * ([[close]]).
 *
 * Lineage: the copy remembers which write of the last file it applied is on disk
 * ([[StateFiles.Stamp]]). Before it replays further, and before it is adopted, that file must
 * still be the same write; if it was rewritten (a query rewound and re-run) or deleted
 * (retention passed a lagging copy), the copy is rebuilt from the checkpoint: the newest
 * snapshot, then changelogs. A copy is never served from another lineage.
 *
 * Threading: the follower thread calls [[catchUp]]; a task thread calls [[take]]; both under
 * this copy's lock, so an adoption waits for a replay in progress, at most one catch-up.
 *
 * @param newCopy an empty working copy, on the heap while the executor's budget allows
 */
private[state] final class StandbyCopy(val store: ReplicaStore, files: CheckpointFiles,
    newCopy: () => WorkingCopy, countRows: Boolean) {
  import StandbyCopy._

  private var copy: WorkingCopy = _
  private var base: Restore.Base = _
  /** The last file applied and which write of it: None for version 0 (an empty store). */
  private var applied: Option[(StateFile.Kind, Long, StateFiles.Stamp)] = None
  @volatile private var heldVersion: Long = -1L
  /** Taken or closed: it never holds a copy again (a late catch-up does nothing). */
  private var closed = false

  /** The committed version this copy holds; -1 while it holds none. */
  def version: Long = heldVersion

  /** Brings the copy to `committed`, rebuilding it when its lineage broke. */
  def catchUp(committed: Long): CatchUp = synchronized {
    if (closed) return CatchUp(rebuilt = false, 0L)
    if (copy != null && (base.version > committed || !sameLineage)) drop()
    if (copy == null) rebuild(committed)
    else if (base.version < committed) {
      val r = Restore.onto(files, base, committed, copy, () => copy.fitsBudget(), countRows, standby = true)
      held(r, StateFile.Changelog, committed)
      CatchUp(rebuilt = false, r.info.recordsReplayed)
    } else CatchUp(rebuilt = false, 0L)
  }

  /**
   * Hands the copy to a provider that restores `version`: the copy, brought to `version`, and
   * the restore that did it; None when the copy cannot serve `version` (it is ahead of it, of
   * another lineage, or holds nothing). Either way this standby no longer holds it.
   *
   * @param countRowsNow whether the adopting provider counts keys (it counts them if the files
   *                     did not)
   */
  def take(version: Long, countRowsNow: Boolean): Option[(WorkingCopy, Restore)] = synchronized {
    closed = true
    try {
      if (copy == null || base.version > version || !sameLineage) None
      else {
        val r = Restore.onto(files, base, version, copy, () => copy.fitsBudget(), countRowsNow, standby = true)
        val out = copy
        copy = null
        Some((out, r))
      }
    } finally drop()
  }

  def close(): Unit = synchronized { closed = true; drop() }

  private def rebuild(committed: Long): CatchUp = {
    val fresh = newCopy()
    val r = try Restore(files, committed, fresh, () => fresh.fitsBudget(), countRows) catch {
      case NonFatal(e) => fresh.close(); throw e
    }
    copy = fresh
    held(r, if (r.info.snapshotVersion.contains(committed)) StateFile.Snapshot else StateFile.Changelog, committed)
    CatchUp(rebuilt = true, r.info.recordsReplayed)
  }

  /** Records that the copy holds `r`'s version, whose last file read was `kind` of that version. */
  private def held(r: Restore, kind: StateFile.Kind, v: Long): Unit = {
    base = r.base
    applied = if (v == 0) None else files.stamp(kind, v).map(s => (kind, v, s))
    if (v > 0 && applied.isEmpty) drop() // the file vanished while it was read: rebuild next time
    else heldVersion = v
  }

  private def sameLineage: Boolean = applied.forall { case (kind, v, stamp) => files.stamp(kind, v).contains(stamp) }

  private def drop(): Unit = {
    if (copy != null) copy.close()
    copy = null
    base = null
    applied = None
    heldVersion = -1L
  }
}

private[state] object StandbyCopy {
  /** One catch-up: whether the copy was rebuilt from the checkpoint, and the records replayed. */
  final case class CatchUp(rebuilt: Boolean, recordsReplayed: Long)
}
