package org.apache.spark.sql.kstate.planning

import java.nio.file.Files

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

/** [[CommittedState]]: which files under an operator's state directory count as state. */
class CommittedStateSuite extends AnyFunSuite {

  /** The name of the state file found in a state directory holding `files` (paths under it). */
  private def found(files: String*): Option[String] = {
    val root = Files.createTempDirectory("kstate-op")
    files.foreach { f =>
      val p = root.resolve(f)
      Files.createDirectories(p.getParent)
      Files.write(p, Array[Byte](1))
    }
    Files.createDirectories(root.resolve("7")) // an empty partition directory
    CommittedState.find(new Path(root.toUri), new Configuration).map(_.getName)
  }

  /** What Spark and kstate write before any store commits. */
  private val metadata = Seq(
    "_kstate/operator.properties",
    "_metadata/metadata",
    "0/_metadata/schema",
    "_stateSchema/default/0_2f8c.schema"
  )

  test("no state: a missing directory, metadata, temporary and checksum files of a failed first batch") {
    assert(CommittedState.find(
      new Path(Files.createTempDirectory("kstate-op").toUri.toString, "none"),
      new Configuration
    ).isEmpty)
    assert(found().isEmpty)
    assert(found(metadata ++ Seq(
      "1/.1.kstate.changelog.5d1e.tmp",
      "0/.1.delta.crc",
      "2/left-keyToNumValues/.3.zip.tmp",
      "0/_metadata/1.schema"
    ): _*).isEmpty)
  }

  test("state: a file of a committed store version, whichever provider wrote it") {
    for (
      f <- Seq(
        "0/1.kstate.changelog",
        "3/10.kstate.snapshot",
        "1/2.changelog",
        "1/2.zip",
        "0/5.delta",
        "0/5.snapshot",
        "0/left-keyToNumValues/1.delta",
        "0/default/1_0c6e.changelog"
      )
    ) {
      assert(found(metadata :+ f: _*) === Some(new Path(f).getName), f)
    }
  }
}
