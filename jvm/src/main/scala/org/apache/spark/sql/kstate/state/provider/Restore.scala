package org.apache.spark.sql.kstate.state.provider

import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.state.store.{FamilyRegistry, StateFile}

/**
 * One restore: which version, from which snapshot, how many changelog records, how long.
 * `standbyVersion`: the version a standby copy held when this provider adopted it (then only
 * the changelogs after it were replayed, and `snapshotVersion` is None).
 */
final case class RestoreInfo(version: Long, snapshotVersion: Option[Long],
    recordsReplayed: Long, millis: Long, standbyVersion: Option[Long] = None)

/**
 * Rebuilding version v of a store into a working copy: the newest snapshot at or below v, then
 * the changelogs after it up to v, each verified as it is read ([[apply]]); or, into a copy
 * that already holds an earlier version (a standby's), only the changelogs after that version
 * ([[onto]]). A missing changelog is `KSTATE_STATE_FILE_MISSING`; a damaged or foreign file
 * `KSTATE_STATE_FILE_CORRUPT` (the caller then discards the half-built copy: nothing
 * half-loaded is ever served).
 *
 * @param registry     the column families of v
 * @param numKeys      v's number of keys (-1 when not counted)
 * @param staleAbove   snapshots above v found on disk: written for versions that a re-run is
 *                     about to rewrite (the next commit deletes them)
 */
private[state] final case class Restore(info: RestoreInfo, registry: FamilyRegistry, numKeys: Long,
    staleAbove: Set[Long]) {
  /** What the working copy holds after this restore, as the base of a later [[Restore.onto]]. */
  def base: Restore.Base = Restore.Base(info.version, registry, numKeys)
}

private[state] object Restore {
  /** What a working copy holds: a committed version, its column families and key count. */
  final case class Base(version: Long, registry: FamilyRegistry, numKeys: Long)

  private def emptyBase = Base(0L, FamilyRegistry.initial(StateStore.DEFAULT_COL_FAMILY_NAME), 0L)

  /** Restores `version` into `copy` (empty), reading `files`; `fits`: may the heap copy grow. */
  def apply(files: CheckpointFiles, version: Long, copy: WorkingCopy, fits: () => Boolean,
      countRows: Boolean): Restore = {
    val started = System.nanoTime()
    // listed for version 0 too: a re-run of the first micro-batch replaces version 1
    val on = files.versions()
    val snapshotUsed = if (version > 0) on.snapshots.filter(_ <= version).maxOption else None
    val base = snapshotUsed.fold(emptyBase) { s =>
      val loaded = load(files, StateFile.Snapshot, s, version, copy, fits, emptyBase.registry)
      Base(s, loaded._2, loaded._1.numKeys)
    }
    replay(files, on, base, version, copy, fits, countRows, started, snapshotUsed, None)
  }

  /**
   * Brings `copy`, which holds `base`, to `version` (at least `base.version`) by replaying the
   * changelogs after `base.version`: a standby catching up, or adopted by a provider.
   */
  def onto(files: CheckpointFiles, base: Base, version: Long, copy: WorkingCopy, fits: () => Boolean,
      countRows: Boolean, standby: Boolean): Restore = {
    require(version >= base.version, s"cannot restore version $version onto ${base.version}")
    replay(files, files.versions(), base, version, copy, fits, countRows, System.nanoTime(), None,
      if (standby) Some(base.version) else None)
  }

  private def replay(files: CheckpointFiles, on: CheckpointFiles.Versions, base: Base, version: Long,
      copy: WorkingCopy, fits: () => Boolean, countRows: Boolean, started: Long,
      snapshotUsed: Option[Long], standbyVersion: Option[Long]): Restore = {
    var registry = base.registry
    var numKeys = base.numKeys
    var replayed = 0L
    var v = base.version + 1
    while (v <= version) {
      if (!on.changelogs.contains(v)) throw files.missing(StateFile.Changelog, v, version)
      val (summary, families) = load(files, StateFile.Changelog, v, version, copy, fits, registry)
      registry = families
      replayed += summary.records
      numKeys = summary.numKeys
      v += 1
    }
    if (countRows && numKeys < 0) numKeys = copy.countAll()
    Restore(RestoreInfo(version, snapshotUsed, replayed, (System.nanoTime() - started) / 1000000,
      standbyVersion), registry, numKeys, on.snapshots.filter(_ > version))
  }

  private def load(files: CheckpointFiles, kind: StateFile.Kind, v: Long, target: Long, copy: WorkingCopy,
      fits: () => Boolean, registry: FamilyRegistry): (StateFile.Summary, FamilyRegistry) = {
    val sink = copy.loader(fits)
    try {
      val summary = files.read(kind, v, target, sink)
      sink.flush()
      (summary, sink.applyFamilies(registry))
    } finally sink.close()
  }
}
