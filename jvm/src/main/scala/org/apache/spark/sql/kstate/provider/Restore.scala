package org.apache.spark.sql.kstate.provider

import org.apache.spark.sql.kstate.errors.KStateErrors

import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.engine.{FamilyRegistry, StateFile}
import org.apache.spark.sql.kstate.engine.StateFile.LineageEntry

/**
 * One restore: which version, from which snapshot, how many changelog records, how long.
 * `standbyVersion`: the version a standby copy held when this provider adopted it (then only
 * the changelogs after it were replayed, and `snapshotVersion` is None). `caughtUpFrom`: the
 * version this provider's own working copy held when it was brought to `version` by replaying
 * only the changelogs after it (its store ran on another executor meanwhile).
 */
final case class RestoreInfo(
    version: Long,
    snapshotVersion: Option[Long],
    recordsReplayed: Long,
    millis: Long,
    standbyVersion: Option[Long] = None,
    caughtUpFrom: Option[Long] = None
)

/**
 * Rebuilding version v of a store into a working copy: the newest snapshot at or below v, then
 * the changelogs after it up to v, each verified as it is read ([[apply]]); or, into a copy
 * that already holds an earlier version (a standby's), only the changelogs after that version
 * ([[onto]]). A missing changelog is `KSTATE_STATE_FILE_MISSING`; a damaged or foreign file
 * `KSTATE_STATE_FILE_CORRUPT` (the caller then discards the half-built copy: nothing
 * half-loaded is ever served).
 *
 * With checkpoint format v2 (`ids`) a version is a (version, id) pair and the files to read
 * are those of its lineage ([[CheckpointLineage]]); files of other ids are never read.
 *
 * @param registry     the column families of v
 * @param numKeys      v's number of keys (-1 when not counted)
 * @param staleAbove   snapshots above v found on disk: written for versions that a re-run is
 *                     about to rewrite (the next commit deletes them; format v1 only)
 * @param chain        format v2: the (version, id) of v and the versions below it back to where
 *                     the restore started (the snapshot or held version read, else version 1)
 */
private[kstate] final case class Restore(
    info: RestoreInfo,
    registry: FamilyRegistry,
    numKeys: Long,
    staleAbove: Set[Long],
    chain: Vector[LineageEntry] = Vector.empty
) {

  /** What the working copy holds after this restore, as the base of a later [[Restore.onto]]. */
  def base: Restore.Base = Restore.Base(info.version, registry, numKeys, chain.lastOption.map(_.id))
}

private[kstate] object Restore {

  /**
   * What a working copy holds: a committed version, its column families and key count, and with
   * checkpoint format v2 the version's checkpoint id (None for version 0 and for format v1).
   */
  final case class Base(version: Long, registry: FamilyRegistry, numKeys: Long, id: Option[String] = None)

  private def emptyBase = Base(0L, FamilyRegistry.initial(StateStore.DEFAULT_COL_FAMILY_NAME), 0L)

  /** Restores `version` into `copy` (empty), reading `files`; `fits`: may the heap copy grow. */
  def apply(
      files: CheckpointFiles,
      version: Long,
      copy: WorkingCopy,
      fits: () => Boolean,
      countRows: Boolean
  ): Restore = {
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
   * Checkpoint format v2: restores (`version`, `id`) into `copy` (empty): the base of its lineage
   * (a snapshot, or version 0), then the changelogs of its lineage. `id` is None only for
   * version 0; a version above 0 without one is `KSTATE_CHECKPOINT_ID_MISSING` (or
   * `KSTATE_UNSUPPORTED_CHECKPOINT_FORMAT` when the store's files are of format v1).
   */
  def withId(
      files: CheckpointFiles,
      version: Long,
      id: Option[String],
      copy: WorkingCopy,
      fits: () => Boolean,
      countRows: Boolean
  ): Restore = {
    val started = System.nanoTime()
    val on = files.checkpoints()
    (version, id) match {
      case (0L, None) => Restore(RestoreInfo(0L, None, 0L, 0L), emptyBase.registry, 0L, Set.empty[Long])
      case (0L, Some(i)) => throw new IllegalArgumentException(s"state version 0 has no checkpoint id (got $i)")
      case (v, None) =>
        val v1 = files.versions()
        if (on.idsOf(v).isEmpty && (v1.changelogs(v) || v1.snapshots(v))) {
          throw KStateErrors.checkpointFormatChanged(describe(files), v, written = 1, asked = 2)
        }
        throw KStateErrors.checkpointIdMissing(describe(files), v, on.idsOf(v))
      case (v, Some(i)) =>
        val resolved = CheckpointLineage.resolve(files, on, v, i, describe(files))
        val (base, snapshotUsed) = resolved.start match {
          case CheckpointLineage.FromSnapshot(e) =>
            val loaded = load(files, StateFile.Snapshot, e.version, v, copy, fits, emptyBase.registry, Some(e.id))
            (Base(e.version, loaded._2, loaded._1.numKeys, Some(e.id)), Some(e.version))
          case _ => (emptyBase, None)
        }
        replayIds(files, base, resolved, v, copy, fits, countRows, started, snapshotUsed, None)
    }
  }

  /**
   * Brings `copy`, which holds `base`, to `version` (at least `base.version`) by replaying the
   * changelogs after `base.version`: a standby catching up, or adopted by a provider. With
   * checkpoint format v2 (`id`), only along the lineage of (`version`, `id`): None when `base`
   * is not on it (the copy holds another attempt's state; the caller rebuilds from the checkpoint).
   */
  def onto(
      files: CheckpointFiles,
      base: Base,
      version: Long,
      copy: WorkingCopy,
      fits: () => Boolean,
      countRows: Boolean,
      standby: Boolean,
      id: Option[String] = None
  ): Option[Restore] = {
    require(version >= base.version, s"cannot restore version $version onto ${base.version}")
    val standbyVersion = if (standby) Some(base.version) else None
    id match {
      case None =>
        Some(replay(
          files,
          files.versions(),
          base,
          version,
          copy,
          fits,
          countRows,
          System.nanoTime(),
          None,
          standbyVersion
        ))
      case Some(i) =>
        val held = base.id.map(LineageEntry(base.version, _))
        if (held.isEmpty && base.version > 0) None
        else if (version == base.version) {
          if (held.exists(_.id != i)) None
          else Some(Restore(
            RestoreInfo(version, None, 0L, 0L, standbyVersion),
            base.registry,
            base.numKeys,
            Set.empty[Long],
            held.toVector
          ))
        } else {
          val resolved = CheckpointLineage.resolve(files, files.checkpoints(), version, i, describe(files), held)
          val fromBase = resolved.start match {
            case CheckpointLineage.FromHeld(_) => true
            case CheckpointLineage.FromEmpty => base.version == 0
            case _ => false
          }
          if (!fromBase) None
          else Some(replayIds(
            files,
            base,
            resolved,
            version,
            copy,
            fits,
            countRows,
            System.nanoTime(),
            None,
            standbyVersion
          ))
        }
    }
  }

  private def describe(files: CheckpointFiles): String = s"the state store at ${files.dir}"

  private def replayIds(
      files: CheckpointFiles,
      base: Base,
      resolved: CheckpointLineage.Resolved,
      version: Long,
      copy: WorkingCopy,
      fits: () => Boolean,
      countRows: Boolean,
      started: Long,
      snapshotUsed: Option[Long],
      standbyVersion: Option[Long]
  ): Restore = {
    var registry = base.registry
    var numKeys = base.numKeys
    var replayed = 0L
    resolved.replay.foreach { e =>
      val (summary, families) = load(files, StateFile.Changelog, e.version, version, copy, fits, registry, Some(e.id))
      registry = families
      replayed += summary.records
      numKeys = summary.numKeys
    }
    if (countRows && numKeys < 0) numKeys = copy.countAll()
    Restore(
      RestoreInfo(version, snapshotUsed, replayed, (System.nanoTime() - started) / 1000000, standbyVersion),
      registry,
      numKeys,
      Set.empty[Long],
      resolved.chain
    )
  }

  private def replay(
      files: CheckpointFiles,
      on: CheckpointFiles.Versions,
      base: Base,
      version: Long,
      copy: WorkingCopy,
      fits: () => Boolean,
      countRows: Boolean,
      started: Long,
      snapshotUsed: Option[Long],
      standbyVersion: Option[Long]
  ): Restore = {
    var registry = base.registry
    var numKeys = base.numKeys
    var replayed = 0L
    var v = base.version + 1
    while (v <= version) {
      if (!on.changelogs.contains(v)) {
        // a checkpoint of format v2 restarted with format v1 (Spark 4.2 only)
        if (files.checkpoints().idsOf(v).nonEmpty) {
          throw KStateErrors.checkpointFormatChanged(describe(files), v, written = 2, asked = 1)
        }
        throw files.missing(StateFile.Changelog, v, version)
      }
      val (summary, families) = load(files, StateFile.Changelog, v, version, copy, fits, registry)
      registry = families
      replayed += summary.records
      numKeys = summary.numKeys
      v += 1
    }
    if (countRows && numKeys < 0) numKeys = copy.countAll()
    Restore(
      RestoreInfo(
        version,
        snapshotUsed,
        replayed,
        (System.nanoTime() - started) / 1000000,
        standbyVersion
      ),
      registry,
      numKeys,
      on.snapshots.filter(_ > version)
    )
  }

  private def load(
      files: CheckpointFiles,
      kind: StateFile.Kind,
      v: Long,
      target: Long,
      copy: WorkingCopy,
      fits: () => Boolean,
      registry: FamilyRegistry,
      id: Option[String] = None
  ): (StateFile.Summary, FamilyRegistry) = {
    // a snapshot lists its keys in key order (StateFile)
    val sink = copy.loader(fits, inOrder = kind == StateFile.Snapshot)
    try {
      val summary = files.read(kind, v, target, sink, id)
      sink.finish()
      (summary, sink.applyFamilies(registry))
    } finally sink.close()
  }
}
