package org.apache.spark.sql.kstate.planning

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager

/**
 * Whether an operator already has state in a checkpoint, judged from its state directory
 * `state/<id>/` alone.
 *
 * State is a file of a committed store version: a name starting with the version number
 * (`<v>.kstate.changelog`, `<v>.kstate.snapshot` of kstate's provider; `<v>.changelog`,
 * `<v>.zip` of Spark's RocksDB provider; `<v>.delta`, `<v>.snapshot` of its HDFS provider) in a
 * partition directory `<partition>/` or in a store directory `<partition>/<store>/` below it.
 * Not state: metadata directories (`_metadata`, `_kstate`, any name starting with `_`), schema
 * files, and temporary or checksum files (names starting with `.`); empty partition
 * directories. These are what a first micro-batch that failed before committing any store
 * leaves, so such a query still starts afresh.
 */
object CommittedState {
  private val VersionFile = "[0-9]+[._].*".r

  /** A file of committed state under `stateDir`, or None if it has none. Reads only. */
  def find(stateDir: Path, conf: Configuration): Option[Path] = {
    val fm = CheckpointFileManager.create(stateDir, conf)
    def children(dir: Path) = if (fm.exists(dir)) fm.list(dir).toSeq else Nil
    def versionFile(dir: Path): Option[Path] =
      children(dir).filter(_.isFile).map(_.getPath).find(p => VersionFile.matches(p.getName))
    def dirs(dir: Path, keep: String => Boolean): Iterator[Path] =
      children(dir).iterator.filter(s => s.isDirectory && keep(s.getPath.getName)).map(_.getPath)
    dirs(stateDir, _.toIntOption.isDefined).flatMap { partition =>
      versionFile(partition).orElse(dirs(partition, n => !hidden(n)).flatMap(versionFile).nextOption())
    }.nextOption()
  }

  private def hidden(name: String): Boolean = name.startsWith("_") || name.startsWith(".")
}
