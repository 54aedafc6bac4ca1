package org.apache.spark.sql.kstate.provider

import java.io.FileNotFoundException

import scala.util.control.NonFatal

import org.apache.spark.sql.kstate.errors.KStateErrors
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import org.apache.spark.sql.kstate.engine._
import org.apache.spark.sql.kstate.engine.StateFile.LineageEntry

/**
 * One store's files in its checkpoint directory (`<checkpoint>/state/<op>/<partition>[/<store>]`):
 *  - `<v>.kstate.changelog`: the changes of version v ([[StateFile]]), one per commit;
 *  - `<v>.kstate.snapshot`: all of version v, written by maintenance.
 * With checkpoint format v2 (unique checkpoint ids) every name also carries the id of the commit
 * that made the version: `<v>_<id>.kstate.changelog`, `<v>_<id>.kstate.snapshot`; two attempts
 * of a version never share a file. The methods take the id as `Option` (None: format v1 names).
 * Every file carries the store's identity (and id) and is verified when read ([[StateFile.read]]).
 * The newest changelog's version is the store's recorded position: a reader that has applied
 * version v (a later standby replica) continues with `<v+1>.kstate.changelog`.
 *
 * Threading: stateless apart from the directory; any thread may call it. Files appear whole or
 * not at all ([[StateFiles]]), so a reader never sees a half-written one.
 */
private[kstate] final class CheckpointFiles(
    val dir: Path,
    hadoopConf: Configuration,
    identity: StateFileIdentity
) {
  import CheckpointFiles._

  private val files = StateFiles(dir, hadoopConf)

  def path(kind: StateFile.Kind, version: Long, id: Option[String] = None): Path =
    new Path(dir, fileName(kind, version, id))

  /** The versions that have a changelog and a snapshot of format v1 (temporary and v2 files ignored). */
  def versions(): Versions = {
    val names = files.list()
    def of(kind: StateFile.Kind): Set[Long] = names.flatMap { n =>
      val suffix = "." + kind.suffix
      if (n.endsWith(suffix)) n.stripSuffix(suffix).toLongOption else None
    }.toSet
    Versions(of(StateFile.Changelog), of(StateFile.Snapshot))
  }

  /** The (version, id) of every changelog and snapshot of format v2 (named `<v>_<id>`). */
  def checkpoints(): IdVersions = {
    val names = files.list()
    def of(kind: StateFile.Kind): Set[LineageEntry] = names.flatMap(n => parseId(n, kind)).toSet
    IdVersions(of(StateFile.Changelog), of(StateFile.Snapshot))
  }

  /**
   * Reads `kind` of `version` (needed to restore `target`), verified, into `visitor`: the file of
   * checkpoint id `id` (format v2), or the format v1 file when None.
   * `KSTATE_STATE_FILE_MISSING` / `KSTATE_STATE_FILE_CORRUPT` name the file and the batch.
   */
  def read(
      kind: StateFile.Kind,
      version: Long,
      target: Long,
      visitor: StateFile.Visitor,
      id: Option[String] = None
  ): StateFile.Summary = {
    val p = path(kind, version, id)
    val in =
      try files.open(p)
      catch {
        case _: FileNotFoundException => throw KStateErrors.stateFileMissing(p.toString, version, target)
      }
    try StateFile.read(in, kind, version, identity, p.toString, visitor, id)
    finally in.close()
  }

  /** The header of `kind` of (`version`, `id`), not verified (its full [[read]] verifies it). */
  def header(kind: StateFile.Kind, version: Long, target: Long, id: Option[String]): StateFile.Header = {
    val p = path(kind, version, id)
    val in =
      try files.open(p)
      catch {
        case _: FileNotFoundException => throw KStateErrors.stateFileMissing(p.toString, version, target)
      }
    try StateFile.readHeader(in, kind, version, p.toString)
    finally in.close()
  }

  /** Whether `kind` of `version` (id `id`) reads whole, with a valid checksum, this store's identity and id. */
  def verifies(kind: StateFile.Kind, version: Long, id: Option[String] = None): Boolean =
    try { read(kind, version, version, Discard, id); true }
    catch { case NonFatal(_) => false }

  /**
   * The checksum of `kind` of `version` (id `id`) when it reads whole as this store's file, else
   * None: which write of the file is on disk (a re-run of a micro-batch rewrites it).
   */
  def checksum(kind: StateFile.Kind, version: Long, id: Option[String] = None): Option[Int] =
    try read(kind, version, version, Discard, id).checksum
    catch { case NonFatal(_) => None }

  def missing(kind: StateFile.Kind, version: Long, target: Long, id: Option[String] = None): Throwable =
    KStateErrors.stateFileMissing(path(kind, version, id).toString, version, target)

  /**
   * Opens version `version`'s changelog; it appears only at `out.commit()`. With a `checkpoint`
   * (format v2) the file is `<v>_<id>` and records the id and lineage.
   */
  def openChangelog(version: Long, checkpoint: Option[StateFile.Checkpoint] = None)
      : (StateFiles.AtomicOutput, StateFile.Writer) = {
    val out = files.create(path(StateFile.Changelog, version, checkpoint.map(_.id)))
    (out, new StateFile.Writer(out.stream, StateFile.Changelog, version, identity, checkpoint))
  }

  /**
   * Writes version `version`'s snapshot (its families, `entries` and key count, by name: read
   * once the entries are written) to a temporary file and returns it unpublished: `commit()`
   * makes it appear whole, `cancel()` drops it. With an `id` (format v2) the file is
   * `<v>_<id>.kstate.snapshot`. Entries with a [[FrozenEntries.tableDir]] (a working copy in
   * RocksDB) are written as one table file there first, then copied in ([[TableFile]]).
   */
  def prepareSnapshot(
      version: Long,
      families: Map[String, Short],
      numKeys: => Long,
      entries: FrozenEntries,
      id: Option[String] = None
  ): StateFiles.AtomicOutput = {
    val table = entries.tableDir.flatMap(dir => TableFile.write(dir, entries.foreach))
    try {
      val out = files.create(path(StateFile.Snapshot, version, id))
      try {
        val checkpoint = id.map(StateFile.Checkpoint(_))
        val w = new StateFile.Writer(out.stream, StateFile.Snapshot, version, identity, checkpoint, table.isDefined)
        families.foreach { case (name, id) => w.family(id, name) }
        table match {
          case Some(t) => w.table(t.file, t.entries)
          case None => if (entries.tableDir.isEmpty) entries.foreach((k, v) => w.put(k, v))
        }
        w.finish(numKeys)
        out
      } catch {
        case NonFatal(e) =>
          try out.cancel()
          catch { case NonFatal(c) => e.addSuppressed(c) }
          throw e
      }
    } finally table.foreach(_.file.delete())
  }

  def delete(kind: StateFile.Kind, version: Long, id: Option[String] = None): Unit =
    files.delete(path(kind, version, id))

  /** Which write of `kind` of `version` is on disk (None: no such file). */
  def stamp(kind: StateFile.Kind, version: Long, id: Option[String] = None): Option[StateFiles.Stamp] =
    files.stamp(path(kind, version, id))
}

private[kstate] object CheckpointFiles {

  /** The versions a store directory has files for. */
  final case class Versions(changelogs: Set[Long], snapshots: Set[Long]) {
    def latest: Option[Long] = (changelogs ++ snapshots).maxOption
  }

  /** The (version, id) a store directory has files of format v2 for. */
  final case class IdVersions(changelogs: Set[LineageEntry], snapshots: Set[LineageEntry]) {
    def latest: Option[Long] = (changelogs ++ snapshots).map(_.version).maxOption

    /** The ids version `v` has a file of. */
    def idsOf(v: Long): Seq[String] = (changelogs ++ snapshots).filter(_.version == v).map(_.id).toSeq.distinct.sorted
  }

  /** A state file's name: `<v>.<suffix>` (format v1) or `<v>_<id>.<suffix>` (format v2). */
  def fileName(kind: StateFile.Kind, version: Long, id: Option[String]): String =
    id.fold(s"$version.${kind.suffix}")(i => s"${version}_$i.${kind.suffix}")

  /** The (version, id) of a format v2 file name of `kind`, if it is one. */
  def parseId(name: String, kind: StateFile.Kind): Option[LineageEntry] = {
    val suffix = "." + kind.suffix
    if (!name.endsWith(suffix) || name.startsWith(".")) None
    else {
      val stem = name.stripSuffix(suffix)
      val cut = stem.indexOf('_')
      if (cut <= 0 || cut == stem.length - 1) None
      else stem.substring(0, cut).toLongOption.map(LineageEntry(_, stem.substring(cut + 1)))
    }
  }

  /** Drops what it reads: verification only. */
  private object Discard extends StateFile.Visitor {
    override def put(key: Array[Byte], value: Array[Byte]): Unit = ()
    override def delete(key: Array[Byte]): Unit = ()
    override def family(cf: Short, name: String): Unit = ()
    override def dropFamily(cf: Short): Unit = ()
    override def table(entries: Long, bytes: StateFile.TableBytes): Unit = ()
  }
}
