package org.apache.spark.sql.kstate.replica

import scala.util.control.NonFatal

import org.apache.spark.sql.kstate.provider.{CheckpointFiles, Restore, WorkingCopy}
import org.apache.spark.sql.kstate.engine.{StateFile, StateFiles}

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
 * Checkpoint format v2 (a target with a checkpoint id): the copy holds a (version, id) and
 * follows the committed id's lineage ([[Restore.onto]] with the id): it replays only when the
 * version it holds is on the lineage of the committed (version, id), and is adopted only then;
 * otherwise (it holds another attempt's state) it is rebuilt, or not adopted. Files are never
 * rewritten under an id, so no stamp is needed.
 *
 * Threading: the follower thread calls [[catchUp]]; a task thread calls [[take]]; both under
 * this copy's lock, so an adoption waits for a replay in progress, at most one catch-up.
 *
 * @param newCopy an empty working copy, on the heap while the executor's budget allows
 */
private[kstate] final class StandbyCopy(
    val store: ReplicaStore,
    files: CheckpointFiles,
    newCopy: () => WorkingCopy,
    countRows: Boolean
) {
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

  /** The checkpoint id of the version this copy holds (format v2), else None. */
  def checkpointId: Option[String] = synchronized(Option(base).flatMap(_.id))

  /**
   * Brings the copy to `committed`, rebuilding it when its lineage broke. `id`: the checkpoint id
   * of `committed` in a checkpoint of format v2 (then the copy follows that id's lineage).
   */
  def catchUp(committed: Long, id: Option[String] = None): CatchUp = synchronized {
    if (closed) return CatchUp(rebuilt = false, 0L)
    if (id.isDefined) return catchUpById(committed, id.get)
    if (copy != null && (base.version > committed || !sameLineage)) drop()
    if (copy == null) rebuild(committed)
    else if (base.version < committed) {
      val r = Restore.onto(files, base, committed, copy, () => copy.fitsBudget(), countRows, standby = true).get
      held(r, StateFile.Changelog, committed)
      CatchUp(rebuilt = false, r.info.recordsReplayed)
    } else CatchUp(rebuilt = false, 0L)
  }

  private def catchUpById(committed: Long, id: String): CatchUp = {
    val onLineage = if (copy == null || base.version > committed) None
    else Restore.onto(files, base, committed, copy, () => copy.fitsBudget(), countRows, standby = true, Some(id))
    onLineage match {
      case Some(r) =>
        base = r.base
        heldVersion = committed
        CatchUp(rebuilt = false, r.info.recordsReplayed)
      case None =>
        drop()
        val fresh = newCopy()
        val r =
          try Restore.withId(files, committed, Some(id), fresh, () => fresh.fitsBudget(), countRows)
          catch {
            case NonFatal(e) => fresh.close(); throw e
          }
        copy = fresh
        base = r.base
        heldVersion = committed
        CatchUp(rebuilt = true, r.info.recordsReplayed)
    }
  }

  /**
   * Hands the copy to a provider that restores `version`: the copy, brought to `version`, and
   * the restore that did it; None when the copy cannot serve `version` (it is ahead of it, of
   * another lineage, or holds nothing). Either way this standby no longer holds it.
   *
   * @param countRowsNow whether the adopting provider counts keys (it counts them if the files
   *                     did not)
   */
  def take(version: Long, countRowsNow: Boolean, checkpoint: StandbyCopy.Wanted = StandbyCopy.FormatV1)
      : Option[(WorkingCopy, Restore)] = synchronized {
    closed = true
    try {
      val usable = copy != null && base.version <= version && (checkpoint match {
        case StandbyCopy.FormatV1 => base.id.isEmpty && sameLineage
        // format v2: only a copy on the lineage of (version, id); version 0 has nothing to adopt
        case StandbyCopy.WithId(id) => id.isDefined
      })
      if (!usable) None
      else {
        val id = checkpoint match { case StandbyCopy.WithId(i) => i; case _ => None }
        Restore.onto(files, base, version, copy, () => copy.fitsBudget(), countRowsNow, standby = true, id).map { r =>
          val out = copy
          copy = null
          (out, r)
        }
      }
    } finally drop()
  }

  def close(): Unit = synchronized { closed = true; drop() }

  private def rebuild(committed: Long): CatchUp = {
    val fresh = newCopy()
    val r =
      try Restore(files, committed, fresh, () => fresh.fitsBudget(), countRows)
      catch {
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

private[kstate] object StandbyCopy {

  /** Which state a provider adopting a copy wants: a version of a format-v1 checkpoint, or of format v2 with its id. */
  sealed trait Wanted
  case object FormatV1 extends Wanted
  final case class WithId(id: Option[String]) extends Wanted

  /** One catch-up: whether the copy was rebuilt from the checkpoint, and the records replayed. */
  final case class CatchUp(rebuilt: Boolean, recordsReplayed: Long)
}
