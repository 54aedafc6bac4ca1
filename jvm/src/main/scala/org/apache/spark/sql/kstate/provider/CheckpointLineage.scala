package org.apache.spark.sql.kstate.provider

import scala.collection.mutable

import org.apache.spark.sql.kstate.errors.KStateErrors

import org.apache.spark.sql.kstate.provider.CheckpointFiles.IdVersions
import org.apache.spark.sql.kstate.engine.StateFile
import org.apache.spark.sql.kstate.engine.StateFile.LineageEntry

/**
 * Checkpoint format v2: which files restore version v with checkpoint id `id`, found from the
 * files alone (docs/state-store.md, "Checkpoint format v2").
 *
 * Every version of a v2 store is a (version, id) pair; its changelog `<v>_<id>.kstate.changelog`
 * records its lineage, the (version, id) of the versions below it back to a snapshot or version
 * 1 (or, shortened, to a version whose own changelog continues it). Resolving (v, id) walks
 * down from it: a version whose snapshot `<w>_<id_w>.kstate.snapshot` exists is the base; else
 * its changelog is replayed and the version below it is the next one, its id taken from the
 * lineages read so far (reading one more changelog header when they end). Version 0 (empty) ends
 * the walk, and so does `held`, a version a working copy already holds (a standby's). Files of
 * other ids at the same versions (other attempts of a micro-batch: failed, speculative, late, or
 * a snapshot of a replaced version) are never read.
 *
 * Errors: the target (named by the commit log) without a file of its id is
 * `KSTATE_CHECKPOINT_ID_UNKNOWN` (listing the ids there are), or `KSTATE_STATE_FILE_MISSING`
 * when the version has no file at all; a version of the lineage without its changelog is
 * `KSTATE_STATE_FILE_MISSING` naming that file.
 */
private[kstate] object CheckpointLineage {

  /** Where a resolved restore starts. */
  sealed trait Start { def version: Long }

  /** Version 0: an empty store. */
  case object FromEmpty extends Start { override def version: Long = 0L }

  /** The snapshot of `entry`. */
  final case class FromSnapshot(entry: LineageEntry) extends Start { override def version: Long = entry.version }

  /** A working copy that already holds `entry`. */
  final case class FromHeld(entry: LineageEntry) extends Start { override def version: Long = entry.version }

  /**
   * A restore of the last entry of `chain`: start from `start`, then replay the changelogs of
   * `replay` (ascending, the versions after the start's).
   */
  final case class Resolved(start: Start, replay: Vector[LineageEntry]) {

    /** (version, id) from the start (when it is not version 0) to the target, ascending. */
    def chain: Vector[LineageEntry] =
      (start match {
        case FromSnapshot(e) => Vector(e)
        case FromHeld(e) => Vector(e)
        case FromEmpty => Vector.empty
      }) ++ replay
  }

  /**
   * How to restore (`version`, `id`) from the files `on` lists, stopping at `held` if it is on
   * the lineage. `store` names the store in errors.
   */
  def resolve(
      files: CheckpointFiles,
      on: IdVersions,
      version: Long,
      id: String,
      store: => String,
      held: Option[LineageEntry] = None
  ): Resolved = {
    require(version > 0, s"version $version has no checkpoint id")
    val target = LineageEntry(version, id)
    if (!on.changelogs(target) && !on.snapshots(target)) {
      val ids = on.idsOf(version)
      if (ids.nonEmpty) throw KStateErrors.checkpointIdUnknown(store, version, id, ids)
      throw files.missing(StateFile.Changelog, version, version, Some(id))
    }
    val ids = mutable.Map[Long, String](version -> id)
    val replay = mutable.ArrayBuffer.empty[LineageEntry]
    var v = version
    var start: Start = null
    while (start == null) {
      val e = LineageEntry(v, ids(v))
      if (held.contains(e)) start = FromHeld(e)
      else if (on.snapshots(e)) start = FromSnapshot(e)
      else {
        if (!on.changelogs(e)) throw files.missing(StateFile.Changelog, v, version, Some(e.id))
        replay += e
        if (v == 1) start = FromEmpty
        else {
          if (!ids.contains(v - 1)) {
            val lineage = files.header(StateFile.Changelog, v, version, Some(e.id)).checkpoint
              .map(_.lineage).getOrElse(Nil)
            lineage.foreach(l => ids.getOrElseUpdate(l.version, l.id))
            if (!ids.contains(v - 1)) {
              throw KStateErrors.stateFileCorrupt(
                files.path(StateFile.Changelog, v, Some(e.id)).toString,
                v,
                "it records no lineage to the version below it"
              )
            }
          }
          v -= 1
        }
      }
    }
    Resolved(start, replay.reverseIterator.toVector)
  }
}
