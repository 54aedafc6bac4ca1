package org.apache.spark.sql.kstate.engine

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, File}
import java.nio.ByteBuffer
import java.nio.file.Files

import scala.collection.mutable.ArrayBuffer

import io.kstate.KStateException
import org.scalatest.funsuite.AnyFunSuite

/**
 * [[StateFile]]'s format: the writer's identity in the header, checked on read; files of the
 * previous format (no identity) still read. Damage (flipped bits, truncation) is covered end to
 * end in `KStateStoreProviderSuite`.
 */
class StateFileSuite extends AnyFunSuite {
  import StateFile.{Changelog, Kind, Snapshot}

  private val mine = StateFileIdentity(1000000007L, "default", 0)

  private def write(identity: StateFileIdentity, kind: Kind = Changelog, version: Long = 5): Array[Byte] = {
    val bytes = new ByteArrayOutputStream()
    val w = new StateFile.Writer(bytes, kind, version, identity)
    w.family(1, "kstate_meta")
    w.put(Array[Byte](0, 0, 1), Array[Byte](9))
    w.delete(Array[Byte](0, 0, 2))
    w.finish(numKeys = 1)
    bytes.toByteArray
  }

  /** Notes every record it is fed; a table's entries as puts (read from a copy of its bytes). */
  private class Recorder(readTables: Boolean = true) extends StateFile.Visitor {
    val seen = ArrayBuffer.empty[String]
    override def table(entries: Long, bytes: StateFile.TableBytes): Unit = {
      seen += s"table $entries"
      if (readTables) {
        val f = File.createTempFile("statefile-suite", ".sst")
        try {
          val out = new java.io.FileOutputStream(f)
          try bytes.copyTo(out)
          finally out.close()
          TableFile.foreach(f)((k, v) => put(k, v))
        } finally f.delete()
      }
    }
    override def put(key: Array[Byte], value: Array[Byte]): Unit =
      seen += s"put ${key.mkString(",")}=${value.mkString(",")}"
    override def delete(key: Array[Byte]): Unit = seen += s"delete ${key.mkString(",")}"
    override def family(cf: Short, name: String): Unit = seen += s"family $cf $name"
    override def dropFamily(cf: Short): Unit = seen += s"drop $cf"
  }

  private def read(
      bytes: Array[Byte],
      expected: StateFileIdentity,
      kind: Kind = Changelog,
      version: Long = 5,
      visitor: StateFile.Visitor = new Recorder
  ): StateFile.Summary =
    StateFile.read(new ByteArrayInputStream(bytes), kind, version, expected, "the-file", visitor)

  private def fixture(name: String): Array[Byte] =
    Files.readAllBytes(new File(getClass.getResource(s"/state-format-1/$name").toURI).toPath)

  test("a file records its writer's identity; read as that store it yields every record") {
    val r = new Recorder
    val summary = read(write(mine), mine, visitor = r)
    assert(summary.copy(checksum = None) == StateFile.Summary(3, 1, Some(mine)))
    assert(summary.checksum.isDefined, "the trailer's checksum")
    assert(r.seen == Seq("family 1 kstate_meta", "put 0,0,1=9", "delete 0,0,2"))
  }

  for (
    (what, other) <- Seq(
      "partition" -> mine.copy(partitionId = 1),
      "operator id" -> mine.copy(operatorId = 1000000008L),
      "store name" -> mine.copy(storeName = "right-keyToNumValues")
    );
    kind <- Seq(Changelog, Snapshot)
  ) {
    test(
      s"a valid ${kind.suffix} of another $what is KSTATE_STATE_FILE_CORRUPT naming expected and found; the visitor gets nothing"
    ) {
      val r = new Recorder
      val e = intercept[KStateException](read(write(other, kind), mine, kind, visitor = r))
      assert(e.errorClass == "KSTATE_STATE_FILE_CORRUPT")
      assert(
        e.getMessage.contains("the-file") && e.getMessage.contains(s"expected $mine") &&
          e.getMessage.contains(s"found $other"),
        e.getMessage
      )
      assert(e.getMessage.contains("new checkpoint location"), e.getMessage)
      assert(r.seen.isEmpty)
    }
  }

  test("the identity is covered by the checksum: a flipped bit in it is corrupt, not another store") {
    val bytes = write(mine)
    val operatorIdLowByte = 4 + 4 + 1 + 8 + 7 // magic, format, kind, version, then the id's 8 bytes
    bytes(operatorIdLowByte) = (bytes(operatorIdLowByte) ^ 1).toByte
    val e = intercept[KStateException](read(bytes, mine))
    assert(e.errorClass == "KSTATE_STATE_FILE_CORRUPT")
    assert(
      e.getMessage.contains("checksum mismatch") && !e.getMessage.contains("another state store"),
      e.getMessage
    )
  }

  test("format 2 is written; files of format 1 (the previous release, no identity) read for any store") {
    assert(ByteBuffer.wrap(write(mine)).getInt(4) == StateFile.FormatVersion)
    assert(StateFile.FormatVersion == 2)
    val snapshot = fixture("3.kstate.snapshot")
    assert(ByteBuffer.wrap(snapshot).getInt(4) == StateFile.FormatWithoutIdentity)
    for (anyone <- Seq(mine, mine.copy(partitionId = 9))) {
      val r = new Recorder
      val summary = read(snapshot, anyone, Snapshot, 3, r)
      assert(summary.identity.isEmpty && summary.numKeys == 3)
      assert(r.seen.count(_.startsWith("put")) == 3)
    }
    val changelog = read(fixture("4.kstate.changelog"), mine, Changelog, 4)
    assert(changelog.identity.isEmpty && changelog.records == 2)
  }

  test(
    "a format above 3 (a newer kstate's file) is KSTATE_CHECKPOINT_FROM_NEWER_KSTATE naming the file and both versions; nothing is read"
  ) {
    for (kind <- Seq(Changelog, Snapshot); newer <- Seq(6, 9)) {
      val bytes = write(mine, kind)
      ByteBuffer.wrap(bytes).putInt(4, newer)
      val r = new Recorder
      val e = intercept[KStateException](read(bytes, mine, kind, visitor = r))
      assert(e.errorClass == "KSTATE_CHECKPOINT_FROM_NEWER_KSTATE", e.getMessage)
      assert(
        e.getMessage.contains("State file the-file") && e.getMessage.contains(s"format version $newer") &&
          e.getMessage.contains("reads format versions 1, 2, 3, 4 and 5") && e.getMessage.contains(
            "new checkpoint location"
          ) &&
          e.getMessage.contains("neither used nor changed this file"),
        e.getMessage
      )
      assert(r.seen.isEmpty)
    }
    // a newer file's layout after its version is unknown: even one that is all garbage after it
    val garbage = ByteBuffer.allocate(12).putInt(StateFile.Magic).putInt(6).putInt(-1).array()
    assert(intercept[KStateException](read(garbage, mine)).errorClass == "KSTATE_CHECKPOINT_FROM_NEWER_KSTATE")
  }

  test("a format version below 1 is corrupt") {
    for (bad <- Seq(0, -1)) {
      val bytes = write(mine)
      ByteBuffer.wrap(bytes).putInt(4, bad)
      val e = intercept[KStateException](read(bytes, mine))
      assert(e.errorClass == "KSTATE_STATE_FILE_CORRUPT" && e.getMessage.contains(s"unknown format version $bad"))
    }
  }

  // ---- format 3: checkpoint format v2 -------------------------------------------------------

  private val lineage = Seq(StateFile.LineageEntry(3, "id-3"), StateFile.LineageEntry(4, "id-4"))

  private def writeV2(
      kind: Kind = Changelog,
      version: Long = 5,
      id: String = "id-5",
      lin: Seq[StateFile.LineageEntry] = lineage
  ): Array[Byte] = {
    val bytes = new ByteArrayOutputStream()
    val w = new StateFile.Writer(bytes, kind, version, mine, Some(StateFile.Checkpoint(id, lin)))
    w.put(Array[Byte](0, 0, 1), Array[Byte](9))
    w.finish(numKeys = 1)
    bytes.toByteArray
  }

  test(
    "format 3 (checkpoint format v2) records the version's id and lineage; read with that id it yields them and every record"
  ) {
    val bytes = writeV2()
    assert(ByteBuffer.wrap(bytes).getInt(4) == StateFile.FormatWithCheckpointId)
    val r = new Recorder
    val summary = StateFile.read(new ByteArrayInputStream(bytes), Changelog, 5, mine, "the-file", r, Some("id-5"))
    assert(summary.copy(checksum =
      None
    ) == StateFile.Summary(1, 1, Some(mine), Some(StateFile.Checkpoint("id-5", lineage))))
    assert(r.seen == Seq("put 0,0,1=9"))
    // the header alone: the records and the trailer (a put of 13 bytes, then 21) are not read
    val h = StateFile.readHeader(new ByteArrayInputStream(bytes.dropRight(13 + 21)), Changelog, 5, "the-file")
    assert(h == StateFile.Header(3, Some(mine), Some(StateFile.Checkpoint("id-5", lineage))))
    // a snapshot has an id and no lineage
    val snap = writeV2(Snapshot, lin = Nil)
    assert(StateFile.read(new ByteArrayInputStream(snap), Snapshot, 5, mine, "s", new Recorder, Some("id-5"))
      .checkpoint.contains(StateFile.Checkpoint("id-5")))
  }

  test(
    "a format 3 file read under another id, or without one (checkpoint format v1), is KSTATE_STATE_FILE_CORRUPT naming both; a format 2 file read with an id too"
  ) {
    for (
      (bytes, expected, found) <- Seq(
        (writeV2(), Some("id-other"), "checkpoint id id-5"),
        (writeV2(), None, "checkpoint id id-5"),
        (write(mine), Some("id-5"), "no checkpoint id")
      )
    ) {
      val r = new Recorder
      val e = intercept[KStateException](
        StateFile.read(new ByteArrayInputStream(bytes), Changelog, 5, mine, "the-file", r, expected)
      )
      assert(
        e.errorClass == "KSTATE_STATE_FILE_CORRUPT" && e.getMessage.contains(s"holds $found") &&
          e.getMessage.contains("another attempt"),
        e.getMessage
      )
      assert(r.seen.isEmpty)
    }
  }

  // ---- formats 4 and 5: a snapshot holding a table file ---------------------------------------

  private val entries = (0 until 1000).map(i => (Array[Byte](0, 0, (i >> 8).toByte, i.toByte), Array[Byte](i.toByte)))

  private def writeTable(checkpoint: Option[StateFile.Checkpoint] = None): Array[Byte] = {
    val dir = Files.createTempDirectory("statefile-suite").toFile
    try {
      val t = TableFile.write(dir, f => entries.foreach { case (k, v) => f(k, v) }).get
      assert(t.entries == entries.size)
      val bytes = new ByteArrayOutputStream()
      val w = new StateFile.Writer(bytes, Snapshot, 5, mine, checkpoint, withTable = true)
      w.family(0, "default")
      w.table(t.file, t.entries)
      w.finish(numKeys = entries.size)
      bytes.toByteArray
    } finally org.apache.spark.network.util.JavaUtils.deleteRecursively(dir)
  }

  private def expectedRecords = "family 0 default" +: s"table ${entries.size}" +:
    entries.map { case (k, v) => s"put ${k.mkString(",")}=${v.mkString(",")}" }

  test("a snapshot of format 4 holds its entries as one table file: read, its table yields every entry in key order") {
    val bytes = writeTable()
    assert(ByteBuffer.wrap(bytes).getInt(4) == StateFile.FormatWithTable)
    val r = new Recorder
    val summary = read(bytes, mine, Snapshot, visitor = r)
    assert(summary.records == 2 && summary.numKeys == entries.size)
    assert(r.seen == expectedRecords)
    // a visitor that leaves the table's bytes unread: they are skipped, and still verified
    val skipping = new Recorder(readTables = false)
    assert(read(bytes, mine, Snapshot, visitor = skipping).checksum == summary.checksum)
    assert(skipping.seen == Seq("family 0 default", s"table ${entries.size}"))
  }

  test("format 5: a table's snapshot of checkpoint format v2 records its id") {
    val bytes = writeTable(Some(StateFile.Checkpoint("id-5")))
    assert(ByteBuffer.wrap(bytes).getInt(4) == StateFile.FormatWithTableAndCheckpointId)
    val r = new Recorder
    val summary = StateFile.read(new ByteArrayInputStream(bytes), Snapshot, 5, mine, "the-file", r, Some("id-5"))
    assert(summary.checkpoint.contains(StateFile.Checkpoint("id-5")) && r.seen == expectedRecords)
    assert(intercept[KStateException](read(bytes, mine, Snapshot)).getMessage.contains("another attempt"))
  }

  test("a flipped bit in a table file is KSTATE_STATE_FILE_CORRUPT (checksum), found before the table is used") {
    val bytes = writeTable()
    for (at <- Seq(bytes.length / 3, bytes.length / 2, bytes.length - 40)) {
      val bad = bytes.clone()
      bad(at) = (bad(at) ^ 0x10).toByte
      val e = intercept[KStateException](read(bad, mine, Snapshot, visitor = new Recorder(readTables = false)))
      assert(e.errorClass == "KSTATE_STATE_FILE_CORRUPT", e.getMessage)
    }
    val truncated = bytes.dropRight(bytes.length / 2)
    assert(intercept[KStateException](read(truncated, mine, Snapshot)).getMessage.contains("truncated"))
  }

  test("a table where none may be, records beside a table, or a format 4 snapshot without one are corrupt") {
    def corrupt(bytes: Array[Byte], kind: Kind, why: String): Unit = {
      val e = intercept[KStateException](read(bytes, mine, kind, visitor = new Recorder(readTables = false)))
      assert(e.errorClass == "KSTATE_STATE_FILE_CORRUPT" && e.getMessage.contains(why), e.getMessage)
    }
    def withFormat(bytes: Array[Byte], f: Int) = { val b = bytes.clone(); ByteBuffer.wrap(b).putInt(4, f); b }
    // a table in a format 2 snapshot: an unknown record to that format
    corrupt(withFormat(writeTable(), StateFile.FormatVersion), Snapshot, "unknown record tag 5")
    // a changelog of format 4
    corrupt(withFormat(write(mine, Changelog), StateFile.FormatWithTable), Changelog, "formats 4 and 5 are snapshots")
    // puts and deletes in a snapshot of format 4
    corrupt(
      withFormat(write(mine, Snapshot), StateFile.FormatWithTable),
      Snapshot,
      "a put record in a snapshot holding a table"
    )
    // a snapshot of format 4 with families only
    val familiesOnly = new ByteArrayOutputStream()
    val w = new StateFile.Writer(familiesOnly, Snapshot, 5, mine, None, withTable = true)
    w.family(0, "default")
    w.finish(0)
    corrupt(familiesOnly.toByteArray, Snapshot, "without its table file")
  }

  test("no entries: no table file (RocksDB writes none), and nothing is left behind") {
    val dir = Files.createTempDirectory("statefile-suite").toFile
    try {
      assert(TableFile.write(dir, _ => ()).isEmpty)
      assert(dir.list().isEmpty)
    } finally dir.delete()
  }

  test("a format 3 changelog whose lineage does not lead to the version below it is corrupt") {
    for (
      bad <- Seq(
        Nil,
        Seq(StateFile.LineageEntry(3, "a")),
        Seq(StateFile.LineageEntry(2, "a"), StateFile.LineageEntry(4, "b")),
        Seq(
          StateFile.LineageEntry(0, "a"),
          StateFile.LineageEntry(1, "b"),
          StateFile.LineageEntry(2, "c"),
          StateFile.LineageEntry(3, "d"),
          StateFile.LineageEntry(4, "e")
        )
      )
    ) {
      val e = intercept[KStateException](read(writeV2(lin = bad), mine))
      assert(e.errorClass == "KSTATE_STATE_FILE_CORRUPT" && e.getMessage.contains("lineage"), e.getMessage)
    }
    // version 1 has none
    assert(StateFile.read(
      new ByteArrayInputStream(writeV2(version = 1, lin = Nil)),
      Changelog,
      1,
      mine,
      "f",
      new Recorder,
      Some("id-5")
    ).records == 1)
  }
}
