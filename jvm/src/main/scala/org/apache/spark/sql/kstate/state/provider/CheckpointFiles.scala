package org.apache.spark.sql.kstate.state.provider

import java.io.FileNotFoundException

import scala.util.control.NonFatal

import io.kstate.KStateErrors
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import org.apache.spark.sql.kstate.state.store._

/**
 * One store's files in its checkpoint directory (`<checkpoint>/state/<op>/<partition>[/<store>]`):
 *  - `<v>.kstate.changelog`: the changes of version v ([[StateFile]]), one per commit;
 *  - `<v>.kstate.snapshot`: all of version v, written by maintenance.
 * Every file carries the store's identity and is verified when read ([[StateFile.read]]).
 * The newest changelog's version is the store's recorded position: a reader that has applied
 * version v (a later standby replica) continues with `<v+1>.kstate.changelog`.
 *
 * Threading: stateless apart from the directory; any thread may call it. Files appear whole or
 * not at all ([[StateFiles]]), so a reader never sees a half-written one.
 */
private[state] final class CheckpointFiles(val dir: Path, hadoopConf: Configuration,
    identity: StateFileIdentity) {
  import CheckpointFiles._

  private val files = StateFiles(dir, hadoopConf)

  def path(kind: StateFile.Kind, version: Long): Path = new Path(dir, s"$version.${kind.suffix}")

  /** The versions that have a changelog and a snapshot (temporary files ignored). */
  def versions(): Versions = {
    val names = files.list()
    def of(kind: StateFile.Kind): Set[Long] = names.flatMap { n =>
      val suffix = "." + kind.suffix
      if (n.endsWith(suffix)) n.stripSuffix(suffix).toLongOption else None
    }.toSet
    Versions(of(StateFile.Changelog), of(StateFile.Snapshot))
  }

  /**
   * Reads `kind` of `version` (needed to restore `target`), verified, into `visitor`.
   * `KSTATE_STATE_FILE_MISSING` / `KSTATE_STATE_FILE_CORRUPT` name the file and the batch.
   */
  def read(kind: StateFile.Kind, version: Long, target: Long, visitor: StateFile.Visitor): StateFile.Summary = {
    val p = path(kind, version)
    val in = try files.open(p) catch {
      case _: FileNotFoundException => throw KStateErrors.stateFileMissing(p.toString, version, target)
    }
    try StateFile.read(in, kind, version, identity, p.toString, visitor) finally in.close()
  }

  /** Whether `kind` of `version` reads whole, with a valid checksum and this store's identity. */
  def verifies(kind: StateFile.Kind, version: Long): Boolean =
    try { read(kind, version, version, Discard); true } catch { case NonFatal(_) => false }

  def missing(kind: StateFile.Kind, version: Long, target: Long): Throwable =
    KStateErrors.stateFileMissing(path(kind, version).toString, version, target)

  /** Opens version `version`'s changelog; it appears only at `out.commit()`. */
  def openChangelog(version: Long): (StateFiles.AtomicOutput, StateFile.Writer) = {
    val out = files.create(path(StateFile.Changelog, version))
    (out, new StateFile.Writer(out.stream, StateFile.Changelog, version, identity))
  }

  /**
   * Writes version `version`'s snapshot (its families, `entries` and key count) to a temporary
   * file and returns it unpublished: `commit()` makes it appear whole, `cancel()` drops it.
   */
  def prepareSnapshot(version: Long, families: Map[String, Short], numKeys: Long,
      entries: FrozenEntries): StateFiles.AtomicOutput = {
    val out = files.create(path(StateFile.Snapshot, version))
    try {
      val w = new StateFile.Writer(out.stream, StateFile.Snapshot, version, identity)
      families.foreach { case (name, id) => w.family(id, name) }
      entries.foreach((k, v) => w.put(k, v))
      w.finish(numKeys)
      out
    } catch {
      case NonFatal(e) =>
        try out.cancel() catch { case NonFatal(c) => e.addSuppressed(c) }
        throw e
    }
  }

  def delete(kind: StateFile.Kind, version: Long): Unit = files.delete(path(kind, version))

  /** Which write of `kind` of `version` is on disk (None: no such file). */
  def stamp(kind: StateFile.Kind, version: Long): Option[StateFiles.Stamp] = files.stamp(path(kind, version))
}

private[state] object CheckpointFiles {
  /** The versions a store directory has files for. */
  final case class Versions(changelogs: Set[Long], snapshots: Set[Long]) {
    def latest: Option[Long] = (changelogs ++ snapshots).maxOption
  }

  /** Drops what it reads: verification only. */
  private object Discard extends StateFile.Visitor {
    override def put(key: Array[Byte], value: Array[Byte]): Unit = ()
    override def delete(key: Array[Byte]): Unit = ()
    override def family(cf: Short, name: String): Unit = ()
    override def dropFamily(cf: Short): Unit = ()
  }
}
