package org.apache.spark.sql.kstate.state.provider

import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.state.store.{FamilyRegistry, StateFile}

/** One restore: which version, from which snapshot, how many changelog records, how long. */
final case class RestoreInfo(version: Long, snapshotVersion: Option[Long],
    recordsReplayed: Long, millis: Long)

/**
 * Rebuilding version v of a store into an empty working copy: the newest snapshot at or below
 * v, then the changelogs after it up to v, each verified as it is read. A missing changelog is
 * `KSTATE_STATE_FILE_MISSING`; a damaged or foreign file `KSTATE_STATE_FILE_CORRUPT` (the caller
 * then discards the half-built copy: nothing half-loaded is ever served).
 *
 * @param registry     the column families of v
 * @param numKeys      v's number of keys (-1 when not counted)
 * @param staleAbove   snapshots above v found on disk: written for versions that a re-run is
 *                     about to rewrite (the next commit deletes them)
 */
private[state] final case class Restore(info: RestoreInfo, registry: FamilyRegistry, numKeys: Long,
    staleAbove: Set[Long])

private[state] object Restore {
  /** Restores `version` into `copy` (empty), reading `files`; `fits`: may the heap copy grow. */
  def apply(files: CheckpointFiles, version: Long, copy: WorkingCopy, fits: () => Boolean,
      countRows: Boolean): Restore = {
    val started = System.nanoTime()
    var registry = FamilyRegistry.initial(StateStore.DEFAULT_COL_FAMILY_NAME)
    var numKeys = 0L
    var replayed = 0L
    var snapshotUsed: Option[Long] = None
    var staleAbove = Set.empty[Long]
    def load(kind: StateFile.Kind, v: Long): StateFile.Summary = {
      val sink = copy.loader(fits)
      try {
        val summary = files.read(kind, v, version, sink)
        sink.flush()
        registry = sink.applyFamilies(registry)
        summary
      } finally sink.close()
    }
    // listed for version 0 too: a re-run of the first micro-batch replaces version 1
    val on = files.versions()
    staleAbove = on.snapshots.filter(_ > version)
    if (version > 0) {
      snapshotUsed = on.snapshots.filter(_ <= version).maxOption
      snapshotUsed.foreach(s => numKeys = load(StateFile.Snapshot, s).numKeys)
      var v = snapshotUsed.getOrElse(0L) + 1
      while (v <= version) {
        if (!on.changelogs.contains(v)) throw files.missing(StateFile.Changelog, v, version)
        val summary = load(StateFile.Changelog, v)
        replayed += summary.records
        numKeys = summary.numKeys
        v += 1
      }
    }
    if (countRows && numKeys < 0) numKeys = copy.countAll()
    Restore(RestoreInfo(version, snapshotUsed, replayed, (System.nanoTime() - started) / 1000000),
      registry, numKeys, staleAbove)
  }
}
