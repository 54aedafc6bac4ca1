package org.apache.spark.sql.kstate

import org.apache.spark.sql.kstate.planning.OperatorIdentity

import java.io.File
import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Path => JPath}

import io.kstate.KStateException
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

/**
 * The format of an operator's configuration record, `_kstate/operator.properties`
 * (docs/upgrades.md): written with the marker `#kstate-format=1`; a record without it (every
 * release before the marker) reads as format 1; a record of a newer format fails with
 * `KSTATE_CHECKPOINT_FROM_NEWER_KSTATE` and is left as it is.
 */
class OperatorRecordFormatSuite extends AnyFunSuite {
  private val conf = new Configuration
  private val fingerprint = Map(
    "kind" -> "deduplicate_by_key",
    "intervalMs" -> "6000",
    "identityTypes" -> "string",
    "timestampType" -> "bigint",
    "stateStoreProvider" -> "io.kstate.KStateStoreProvider"
  )

  private def stateDir(): JPath = Files.createTempDirectory("kstate-op")
  private def record(dir: JPath): JPath = dir.resolve("_kstate").resolve("operator.properties")
  private def put(dir: JPath, text: String): Unit = {
    Files.createDirectories(record(dir).getParent)
    Files.write(record(dir), text.getBytes(StandardCharsets.UTF_8))
  }
  private def text(dir: JPath): String = new String(Files.readAllBytes(record(dir)), StandardCharsets.UTF_8)
  private def path(dir: JPath): Path = new Path(dir.toUri)

  /** A record written by the release before the marker (a checkpoint of commit 4dcec41). */
  private val withoutMarker: String = new String(
    Files.readAllBytes(
      new File(getClass.getResource("/operator-record-without-marker/operator.properties").toURI).toPath
    ),
    StandardCharsets.UTF_8
  )

  test("a record is written with its format marker and reads back as the configuration") {
    val dir = stateDir()
    OperatorIdentity.checkOrRecordConfig(path(dir), "dedup", fingerprint, conf, 1L)
    val lines = text(dir).linesIterator.toSeq
    assert(lines.take(2) == Seq("#kstate operator configuration; do not edit", "#kstate-format=1"), lines)
    assert(OperatorIdentity.readConfig(path(dir), conf) == Some(fingerprint + ("name" -> "dedup")))
    OperatorIdentity.checkOrRecordConfig(path(dir), "dedup", fingerprint, conf, 1L) // a restart: the same
  }

  test(
    "a record without the marker (the previous release's) is format 1: it reads, a restart accepts it and leaves it"
  ) {
    assert(!withoutMarker.contains("kstate-format"))
    val dir = stateDir()
    put(dir, withoutMarker)
    assert(OperatorIdentity.readConfig(path(dir), conf) == Some(fingerprint + ("name" -> "dedup")))
    OperatorIdentity.checkOrRecordConfig(path(dir), "dedup", fingerprint, conf, 1L)
    assert(text(dir) == withoutMarker)
    val e = intercept[KStateException](
      OperatorIdentity.checkOrRecordConfig(path(dir), "dedup", fingerprint + ("intervalMs" -> "7000"), conf, 1L)
    )
    assert(e.errorClass == "KSTATE_OPERATOR_CONFIG_CHANGED")
  }

  test(
    "a record of a newer format is KSTATE_CHECKPOINT_FROM_NEWER_KSTATE, on restart and on read, and stays as it is"
  ) {
    for (found <- Seq("2", "10", "2.1")) {
      val dir = stateDir()
      val newer = withoutMarker.replace(
        "#kstate operator configuration; do not edit\n",
        s"#kstate operator configuration; do not edit\n#kstate-format=$found\n"
      ) + "aKeyOfTheNewerFormat=1\n"
      put(dir, newer)
      for (
        attempt <- Seq(
          () => OperatorIdentity.checkOrRecordConfig(path(dir), "dedup", fingerprint, conf, 1L),
          () => OperatorIdentity.readConfig(path(dir), conf)
        )
      ) {
        val e = intercept[KStateException](attempt())
        assert(e.errorClass == "KSTATE_CHECKPOINT_FROM_NEWER_KSTATE", e.getMessage)
        assert(
          e.getMessage.contains(s"Operator configuration record ${path(dir)}") &&
            e.getMessage.contains("_kstate/operator.properties") &&
            e.getMessage.contains(s"format version $found") && e.getMessage.contains("reads format version 1."),
          e.getMessage
        )
      }
      assert(text(dir) == newer)
    }
  }
}
