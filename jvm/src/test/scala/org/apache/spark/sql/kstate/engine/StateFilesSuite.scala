package org.apache.spark.sql.kstate.engine

import java.io.{File, FileNotFoundException}
import java.nio.file.Files

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

class StateFilesSuite extends AnyFunSuite {
  private def implementations(dir: File): Seq[(String, StateFiles)] = {
    val path = new Path(dir.toURI)
    Seq("local (java.nio)" -> new StateFiles.Local(path), "Hadoop" -> new StateFiles.Hadoop(path, new Configuration))
  }

  private def visible(files: StateFiles): Set[String] = files.list().filterNot(_.startsWith(".")).toSet

  private def read(files: StateFiles, p: Path): String = {
    val in = files.open(p)
    try new String(in.readAllBytes(), "UTF-8")
    finally in.close()
  }

  test(
    "the local file system is written with java.nio; a file system built on it, under its own scheme, through Hadoop"
  ) {
    val dir = Files.createTempDirectory("kstate-files-choice").toFile
    assert(StateFiles(new Path(dir.toURI), new Configuration).isInstanceOf[StateFiles.Local])
    val conf = new Configuration
    conf.set(s"fs.${RenameFailsFileSystem.Scheme}.impl", classOf[RenameFailsFileSystem].getName)
    conf.setBoolean(s"fs.${RenameFailsFileSystem.Scheme}.impl.disable.cache", true)
    val files = StateFiles(new Path(s"${RenameFailsFileSystem.Scheme}://${dir.getAbsolutePath}/custom"), conf)
    assert(files.isInstanceOf[StateFiles.Hadoop])
    // its rename is the one used: a commit whose rename fails fails, and no file appears
    val out =
      files.create(new Path(s"${RenameFailsFileSystem.Scheme}://${dir.getAbsolutePath}/custom/1.kstate.changelog"))
    out.stream.write(1)
    val e = intercept[Exception](out.commit())
    assert(e.getMessage.contains("rename"), e)
    assert(!new File(dir, "custom/1.kstate.changelog").exists())
  }

  for (which <- Seq(0, 1)) {
    def make(): (String, StateFiles, File) = {
      val dir = Files.createTempDirectory("kstate-files").toFile
      val (name, files) = implementations(dir)(which)
      (name, files, dir)
    }
    val name = implementations(Files.createTempDirectory("kstate-files-name").toFile)(which)._1

    test(s"$name: a file appears whole at commit, replaces an older one, and cancel leaves nothing") {
      val (_, files, dir) = make()
      val p = new Path(new File(dir, "1.kstate.changelog").toURI)
      val out = files.create(p)
      out.stream.write("first".getBytes("UTF-8"))
      assert(!visible(files).contains("1.kstate.changelog"), "visible before commit")
      out.commit()
      assert(visible(files) == Set("1.kstate.changelog") && read(files, p) == "first")
      val again = files.create(p)
      again.stream.write("second".getBytes("UTF-8"))
      again.commit()
      assert(read(files, p) == "second")
      val cancelled = files.create(new Path(new File(dir, "2.kstate.changelog").toURI))
      cancelled.stream.write("never".getBytes("UTF-8"))
      cancelled.cancel()
      assert(visible(files) == Set("1.kstate.changelog"))
      assert(!files.list().exists(_.contains("2.kstate.changelog")), files.list())
    }

    test(s"$name: opening a missing file is FileNotFoundException; delete removes a file") {
      val (_, files, dir) = make()
      val p = new Path(new File(dir, "3.kstate.snapshot").toURI)
      intercept[FileNotFoundException](files.open(p))
      val out = files.create(p)
      out.stream.write(1)
      out.commit()
      files.delete(p)
      assert(visible(files).isEmpty)
      intercept[FileNotFoundException](files.open(p))
    }
  }

  test("a local checkpoint directory gets java.nio files (no Hadoop checksum files); others Hadoop's") {
    val dir = Files.createTempDirectory("kstate-files").toFile
    val files = StateFiles(new Path(dir.getAbsolutePath), new Configuration)
    assert(files.isInstanceOf[StateFiles.Local])
    val out = files.create(new Path(new File(dir, "1.kstate.changelog").toURI))
    out.stream.write(7)
    out.commit()
    assert(dir.list().toSet == Set("1.kstate.changelog"))
    // Hadoop's local file system writes a checksum file beside each file; deleting through the
    // local implementation removes that too (checkpoints written by earlier kstate versions).
    val hadoop = new StateFiles.Hadoop(new Path(dir.toURI), new Configuration)
    val h = hadoop.create(new Path(new File(dir, "2.kstate.changelog").toURI))
    h.stream.write(8)
    h.commit()
    assert(dir.list().contains(".2.kstate.changelog.crc"))
    files.delete(new Path(new File(dir, "2.kstate.changelog").toURI))
    assert(dir.list().toSet == Set("1.kstate.changelog"))
  }
}

/** A file system on the local disk, under its own scheme, whose rename always fails. */
class RenameFailsFileSystem extends org.apache.hadoop.fs.RawLocalFileSystem {
  override def getUri: java.net.URI = java.net.URI.create(s"${RenameFailsFileSystem.Scheme}:///")
  override def rename(src: Path, dst: Path): Boolean = false
}

object RenameFailsFileSystem {
  val Scheme = "kstaterenamefails"
}
