package org.apache.spark.sql.kstate.engine

import java.io.{FileNotFoundException, InputStream, OutputStream}
import java.nio.file.{Files, NoSuchFileException, Paths, StandardCopyOption}
import java.util.UUID

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{LocalFileSystem, Path, RawLocalFileSystem}

import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager

/**
 * The files of one store's checkpoint directory: its changelogs and snapshots.
 *
 * Contract: `create` returns a stream whose file appears, whole, only at `commit()` (or never:
 * `cancel()`); a file is never seen half-written, also after a crash. `open` of a missing file
 * throws `FileNotFoundException`. `list` returns file names, temporary files included (callers
 * filter by suffix).
 *
 * Two implementations: [[StateFiles.Hadoop]] through Spark's `CheckpointFileManager` (any file
 * system: HDFS, object stores), and [[StateFiles.Local]] for a checkpoint on the local file
 * system, written with java.nio. Decision: Hadoop's local file system, without its native
 * library (pyspark ships none), starts a `chmod` process for every file it creates and a
 * `readlink` process for every rename, which cost kstate's commits tens of milliseconds each;
 * the local implementation does the same temp-file-and-rename with no process. On HDFS the
 * client retries completing a closed file sooner than by default ([[HdfsCloseRetry]]). Neither forces
 * data to the device (Hadoop's local file system does not either): a killed process loses
 * nothing, a machine crash may lose the newest files, as with Spark's own providers.
 */
private[kstate] trait StateFiles {
  def create(path: Path): StateFiles.AtomicOutput
  def open(path: Path): InputStream
  def list(): Seq[String]
  def delete(path: Path): Unit

  /** The file's length and modification time, or None when there is no such file. */
  def stamp(path: Path): Option[StateFiles.Stamp]
}

private[kstate] object StateFiles {

  /**
   * Tells one write of a file from another: a file rewritten under the same name (a
   * micro-batch re-run) gets a new modification time, and usually a new length.
   */
  final case class Stamp(length: Long, modifiedMillis: Long)

  /** An output stream that becomes its file at `commit()`; `cancel()` leaves no file. */
  trait AtomicOutput {
    def stream: OutputStream
    def commit(): Unit
    def cancel(): Unit
  }

  /**
   * The files of `dir`, created if absent: local ones with java.nio, others through Hadoop.
   * Local means Hadoop's local file system serving the `file` scheme: a file system built on it
   * under another scheme (e.g. one that changes `rename`) has its own semantics and is used
   * through Hadoop (found by Spark's `StateStoreSuiteBase`, "SPARK-18342").
   */
  def apply(dir: Path, hadoopConf: Configuration): StateFiles = {
    val fs = dir.getFileSystem(hadoopConf)
    fs match {
      case _: LocalFileSystem | _: RawLocalFileSystem if fs.getUri.getScheme == "file" => new Local(dir)
      case _ if fs.getUri.getScheme == "hdfs" => new Hadoop(dir, HdfsCloseRetry(hadoopConf))
      case _ => new Hadoop(dir, hadoopConf)
    }
  }

  final class Hadoop(dir: Path, hadoopConf: Configuration) extends StateFiles {
    private val fm = CheckpointFileManager.create(dir, hadoopConf)
    fm.mkdirs(dir)

    override def create(path: Path): AtomicOutput = {
      val out = fm.createAtomic(path, true)
      new AtomicOutput {
        override def stream: OutputStream = out
        override def commit(): Unit = out.close()
        override def cancel(): Unit = out.cancel()
      }
    }
    override def open(path: Path): InputStream = fm.open(path)
    override def list(): Seq[String] =
      if (fm.exists(dir)) fm.list(dir).map(_.getPath.getName).toSeq else Nil
    override def delete(path: Path): Unit = fm.delete(path)
    override def stamp(path: Path): Option[Stamp] =
      try {
        val st = path.getFileSystem(hadoopConf).getFileStatus(path)
        Some(Stamp(st.getLen, st.getModificationTime))
      } catch { case _: FileNotFoundException => None }
  }

  final class Local(dir: Path) extends StateFiles {
    private val root = local(dir)
    Files.createDirectories(root)

    /** The local path of a `file:` or scheme-less Hadoop path. */
    private def local(path: Path): java.nio.file.Path = Paths.get(path.toUri.getPath)

    override def create(path: Path): AtomicOutput = {
      val target = local(path)
      val temp = target.resolveSibling(s".${target.getFileName}.${UUID.randomUUID()}.tmp")
      val out = Files.newOutputStream(temp)
      new AtomicOutput {
        private var done = false
        override def stream: OutputStream = out
        override def commit(): Unit = {
          require(!done, s"$target was already completed or cancelled")
          done = true
          try {
            out.close()
            Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING)
          } catch {
            case NonFatal(e) =>
              Files.deleteIfExists(temp)
              throw e
          }
        }
        override def cancel(): Unit = if (!done) {
          done = true
          try out.close()
          finally Files.deleteIfExists(temp)
        }
      }
    }

    override def open(path: Path): InputStream =
      try Files.newInputStream(local(path))
      catch {
        case e: NoSuchFileException =>
          val f = new FileNotFoundException(e.getMessage); f.initCause(e); throw f
      }

    override def list(): Seq[String] = {
      if (!Files.isDirectory(root)) return Nil
      val names = Files.list(root)
      try names.iterator().asScala.map(_.getFileName.toString).toList
      finally names.close()
    }

    override def stamp(path: Path): Option[Stamp] =
      try {
        val f = local(path)
        Some(Stamp(Files.size(f), Files.getLastModifiedTime(f).toMillis))
      } catch { case _: NoSuchFileException => None }

    /** Also deletes the checksum file Hadoop's local file system may have written beside it. */
    override def delete(path: Path): Unit = {
      val file = local(path)
      Files.deleteIfExists(file)
      Files.deleteIfExists(file.resolveSibling(s".${file.getFileName}.crc"))
    }
  }
}
