package org.apache.spark.sql.kstate.provider

import java.io.File
import java.nio.ByteBuffer
import java.nio.file.{Files, StandardCopyOption}
import java.util.UUID

import scala.collection.mutable

import io.kstate.KStateException
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types._

/**
 * kstate's provider with Spark's state checkpoint format v2 (unique checkpoint ids): every
 * commit gets a fresh id, files are named `<v>_<id>`, a changelog records its lineage, and a
 * store is restored by (version, id) from the files alone, never from another attempt's files.
 * The failure cases follow Spark's RocksDB v2 suites (RocksDBSuite "multiple snapshot files for
 * the same version", RocksDBCheckpointFailureInjectionSuite "Zip File / Changelog File
 * Overwritten by Previous Task", "Delay Snapshot V2", RocksDBLineageSuite multi-hop lineages).
 */
class KStateStoreCheckpointIdsSuite extends AnyFunSuite {
  private val keySchema = StructType(Seq(StructField("k", StringType)))
  private val valueSchema = StructType(Seq(StructField("v", LongType)))
  private val keyProj = UnsafeProjection.create(keySchema)
  private val valueProj = UnsafeProjection.create(valueSchema)
  private def key(s: String): UnsafeRow =
    keyProj(org.apache.spark.sql.catalyst.InternalRow(org.apache.spark.unsafe.types.UTF8String.fromString(s))).copy()
  private def value(v: Long): UnsafeRow = valueProj(org.apache.spark.sql.catalyst.InternalRow(v)).copy()

  import ProviderFixture.tmp

  private val V2 = Map("spark.sql.streaming.stateStore.checkpointFormatVersion" -> "2")

  private def conf(snapshotEvery: Int = 1000, retain: Int = 100, v2: Boolean = true): StateStoreConf =
    ProviderFixture.conf(snapshotEvery, retain, extra = if (v2) V2 else Map.empty)

  private def newProvider(root: String, c: StateStoreConf = conf()): KStateStoreProvider =
    ProviderFixture.open(root, keySchema, valueSchema, c, useColumnFamilies = false)

  private def contents(s: StateStore): Map[String, Long] =
    s.iterator().map(p => p.key.getUTF8String(0).toString -> p.value.getLong(0)).toMap

  private def dirFiles(root: String): Seq[String] =
    new File(s"$root/0/0").listFiles().map(_.getName).filterNot(_.startsWith(".")).toSeq.sorted

  /** Opens (version, id), puts `kvs`, commits; returns the new version's id. */
  private def commit(p: KStateStoreProvider, version: Long, id: Option[String], kvs: (String, Long)*): String = {
    val s = p.getStore(version, id)
    kvs.foreach { case (k, v) => s.put(key(k), value(v)) }
    assert(s.commit() == version + 1)
    val info = s.getStateStoreCheckpointInfo()
    assert(info.partitionId == 0 && info.batchVersion == version + 1 && info.baseStateStoreCkptId == id)
    info.stateStoreCkptId.get
  }

  /** Restores (version, id) in a new provider and returns its contents. */
  private def restored(
      root: String,
      version: Long,
      id: Option[String],
      c: StateStoreConf = conf()
  ): Map[String, Long] = {
    val q = newProvider(root, c)
    try contents(q.getStore(version, id))
    finally q.close()
  }

  test(
    "each commit gets a fresh id and reports (partition, v + 1, new id, base id); files are named <v>_<id>; (v, id) restores in a new provider"
  ) {
    val root = tmp()
    val p = newProvider(root)
    val s0 = p.getStore(0, None)
    s0.put(key("a"), value(1))
    assert(s0.getStateStoreCheckpointInfo() == StateStoreCheckpointInfo(0, 0, None, None))
    s0.commit()
    val i1 = s0.getStateStoreCheckpointInfo()
    assert(i1.batchVersion == 1 && i1.stateStoreCkptId.isDefined && i1.baseStateStoreCkptId.isEmpty)
    val id1 = i1.stateStoreCkptId.get
    val id2 = commit(p, 1, Some(id1), "b" -> 2)
    val id3 = commit(p, 2, Some(id2), "a" -> 3)
    assert(Set(id1, id2, id3).size == 3)
    p.close()
    assert(dirFiles(root) == Seq(
      s"1_$id1.kstate.changelog",
      s"2_$id2.kstate.changelog",
      s"3_$id3.kstate.changelog"
    ).sorted)
    // format 3 (format 2 stays what checkpoint format v1 writes)
    val header = ByteBuffer.wrap(Files.readAllBytes(new File(s"$root/0/0/3_$id3.kstate.changelog").toPath))
    assert(header.getInt(4) == 3)
    assert(restored(root, 1, Some(id1)) == Map("a" -> 1L))
    assert(restored(root, 2, Some(id2)) == Map("a" -> 1L, "b" -> 2L))
    assert(restored(root, 3, Some(id3)) == Map("a" -> 3L, "b" -> 2L))
    assert(restored(root, 0, None) == Map.empty)
  }

  test("format v1 is unchanged: <v>.kstate.changelog of format 2, no ids reported") {
    val root = tmp()
    val p = newProvider(root, conf(v2 = false))
    val s = p.getStore(0)
    s.put(key("a"), value(1))
    s.commit()
    assert(s.getStateStoreCheckpointInfo() == StateStoreCheckpointInfo(0, 1, None, None))
    p.close()
    assert(dirFiles(root) == Seq("1.kstate.changelog"))
    assert(ByteBuffer.wrap(Files.readAllBytes(new File(s"$root/0/0/1.kstate.changelog").toPath)).getInt(4) == 2)
  }

  test(
    "two attempts of the same versions (two lineages, each with snapshots) both restore by their own ids, never mixed"
  ) {
    // RocksDBSuite "correctly handle when there are multiple snapshot files for the same version"
    val root = tmp()
    val first = newProvider(root, conf(snapshotEvery = 2))
    val id1 = commit(first, 0, None, "a" -> 1)
    // two writers continue from (1, id1): one as a failed/speculative attempt, one committed
    val a = newProvider(root, conf(snapshotEvery = 2))
    val b = newProvider(root, conf(snapshotEvery = 2))
    val ids = mutable.Map[(String, Long), String](("a", 1L) -> id1, ("b", 1L) -> id1)
    for (v <- 1L to 5L; (name, p) <- Seq("a" -> a, "b" -> b)) {
      ids((name, v + 1)) = commit(p, v, Some(ids((name, v))), name -> v, s"$name$v" -> v)
      p.doMaintenance()
    }
    Seq(first, a, b).foreach(_.close())
    val names = dirFiles(root)
    for (v <- 2 to 6) {
      assert(names.count(n => n.startsWith(s"${v}_") && n.endsWith(".kstate.changelog")) == 2, names)
    }
    assert(names.count(_.endsWith(".kstate.snapshot")) >= 4, names) // both lineages wrote snapshots
    for (name <- Seq("a", "b"); v <- 2L to 6L) {
      val expected = Map("a" -> 1L) ++ (1L until v).flatMap(w => Seq(name -> w, s"$name$w" -> w))
      assert(restored(root, v, Some(ids((name, v)))) == expected, s"$name at version $v")
    }
  }

  test("a stale attempt's changelog and snapshot written after the committed attempt's are never read") {
    // RocksDBCheckpointFailureInjectionSuite "Changelog File Overwritten by Previous Task" and
    // "Zip File Overwritten by Previous Task": with format v1 the late write replaces the
    // committed file under the same name; with ids it is another file
    val root = tmp()
    val p = newProvider(root, conf(snapshotEvery = 1))
    val id1 = commit(p, 0, None, "a" -> 1)
    p.close()
    val stale = newProvider(root, conf(snapshotEvery = 1))
    val staleStore = stale.getStore(1, Some(id1))
    staleStore.put(key("a"), value(666))
    // the retry commits first
    val retry = newProvider(root, conf(snapshotEvery = 1))
    val id2 = commit(retry, 1, Some(id1), "a" -> 2)
    val id3 = commit(retry, 2, Some(id2), "b" -> 3)
    retry.close()
    // the stale attempt's changelog lands late, then its snapshot (maintenance of a replaced version)
    staleStore.commit()
    val staleId = staleStore.getStateStoreCheckpointInfo().stateStoreCkptId.get
    stale.doMaintenance()
    stale.close()
    assert(
      dirFiles(root).contains(s"2_$staleId.kstate.changelog") && dirFiles(root).contains(s"2_$staleId.kstate.snapshot")
    )
    assert(restored(root, 2, Some(id2)) == Map("a" -> 2L))
    assert(restored(root, 3, Some(id3)) == Map("a" -> 2L, "b" -> 3L))
    val q = newProvider(root)
    q.getStore(3, Some(id3))
    assert(q.lastRestore.get.snapshotVersion.isEmpty, "the stale attempt's snapshot of version 2 is not a base")
    q.close()
    // the stale attempt's state stays readable by its own id, as another attempt
    assert(restored(root, 2, Some(staleId)) == Map("a" -> 666L))
  }

  test(
    "an unknown id is KSTATE_CHECKPOINT_ID_UNKNOWN naming the ids found; a version above 0 without id is KSTATE_CHECKPOINT_ID_MISSING"
  ) {
    val root = tmp()
    val p = newProvider(root)
    val id1 = commit(p, 0, None, "a" -> 1)
    val id2 = commit(p, 1, Some(id1), "a" -> 2)
    p.close()
    val unknown = UUID.randomUUID().toString
    val e = intercept[KStateException](restored(root, 2, Some(unknown)))
    assert(
      e.errorClass == "KSTATE_CHECKPOINT_ID_UNKNOWN" && e.getMessage.contains(unknown) &&
        e.getMessage.contains(id2) && e.getMessage.contains("version 2"),
      e.getMessage
    )
    val m = intercept[KStateException](restored(root, 2, None))
    assert(
      m.errorClass == "KSTATE_CHECKPOINT_ID_MISSING" && m.getMessage.contains(id2) &&
        m.getMessage.contains("commits/1"),
      m.getMessage
    )
    // a version with no file at all
    val gone = intercept[KStateException](restored(root, 3, Some(unknown)))
    assert(
      gone.errorClass == "KSTATE_STATE_FILE_MISSING" && gone.getMessage.contains(s"3_$unknown.kstate.changelog"),
      gone.getMessage
    )
    // the provider is still usable after a failed restore
    val q = newProvider(root)
    intercept[KStateException](q.getStore(2, Some(unknown)))
    assert(contents(q.getStore(2, Some(id2))) == Map("a" -> 2L))
    q.close()
  }

  test("a changelog of the lineage that is missing is KSTATE_STATE_FILE_MISSING naming it, never another attempt's") {
    val root = tmp()
    val p = newProvider(root)
    val id1 = commit(p, 0, None, "a" -> 1)
    val id2 = commit(p, 1, Some(id1), "a" -> 2)
    val id3 = commit(p, 2, Some(id2), "a" -> 3)
    p.close()
    // another attempt of version 2 exists, but the committed one is gone
    val other = newProvider(root)
    commit(other, 1, Some(id1), "a" -> 99)
    other.close()
    new File(s"$root/0/0/2_$id2.kstate.changelog").delete()
    val e = intercept[KStateException](restored(root, 3, Some(id3)))
    assert(
      e.errorClass == "KSTATE_STATE_FILE_MISSING" && e.getMessage.contains(s"2_$id2.kstate.changelog"),
      e.getMessage
    )
  }

  test("a valid file renamed to another id is refused as KSTATE_STATE_FILE_CORRUPT, naming both ids") {
    val root = tmp()
    val p = newProvider(root)
    val id1 = commit(p, 0, None, "a" -> 1)
    val other = newProvider(root)
    val id1b = commit(other, 0, None, "a" -> 666)
    Seq(p, other).foreach(_.close())
    val dir = new File(s"$root/0/0").toPath
    Files.move(
      dir.resolve(s"1_$id1b.kstate.changelog"),
      dir.resolve(s"1_$id1.kstate.changelog"),
      StandardCopyOption.REPLACE_EXISTING
    )
    val e = intercept[KStateException](restored(root, 1, Some(id1)))
    assert(
      e.errorClass == "KSTATE_STATE_FILE_CORRUPT" && e.getMessage.contains(s"checkpoint id $id1b") &&
        e.getMessage.contains(s"checkpoint id $id1"),
      e.getMessage
    )
  }

  test("restore follows a lineage across several changelogs (longer than one changelog records) and a snapshot") {
    // RocksDBLineageSuite: multi-hop lineages
    val root = tmp()
    val p = newProvider(root)
    val ids = mutable.ArrayBuffer[Option[String]](None)
    val n = KStateStoreProvider.MaxLineage * 2 + 30
    for (v <- 0 until n) ids += Some(commit(p, v, ids(v), s"k${v % 7}" -> v.toLong))
    p.close()
    def expected(v: Int): Map[String, Long] = (0 until v).map(w => s"k${w % 7}" -> w.toLong).toMap
    // no snapshot: the restore hops from changelog to changelog down to version 1
    val q = newProvider(root, conf(snapshotEvery = 50))
    assert(contents(q.getStore(n, ids(n))) == expected(n))
    assert(q.lastRestore.get.snapshotVersion.isEmpty && q.lastRestore.get.recordsReplayed == n)
    // maintenance snapshots the loaded version; a commit after it records a lineage from it
    q.doMaintenance()
    assert(dirFiles(root).contains(s"${n}_${ids(n).get}.kstate.snapshot"), "no snapshot")
    for (v <- n until n + 3) ids += Some(commit(q, v, ids(v), s"k${v % 7}" -> v.toLong))
    q.close()
    val r = newProvider(root)
    assert(contents(r.getStore(n + 3, ids(n + 3))) == expected(n + 3))
    assert(r.lastRestore.get.snapshotVersion.contains(n.toLong) && r.lastRestore.get.recordsReplayed == 3)
    r.close()
    // an older version restores from the changelogs alone, whatever snapshots are newer
    assert(restored(root, 150, ids(150)) == expected(150))
  }

  test(
    "maintenance with ids: snapshots named by id, cleanup by version along the committed chain, every retained version restores"
  ) {
    val root = tmp()
    val c = conf(snapshotEvery = 3, retain = 4)
    val p = newProvider(root, c)
    val ids = mutable.ArrayBuffer[Option[String]](None)
    val model = mutable.Map[Int, Map[String, Long]](0 -> Map.empty)
    val others = mutable.ArrayBuffer.empty[(Int, String)]
    for (v <- 0 until 14) {
      // a failed attempt of each version, from the committed base, in a provider of its own that
      // snapshots its version (maintenance of a replaced attempt) and runs its own cleanup
      val failed = newProvider(root, conf(snapshotEvery = 1, retain = 4))
      others += ((v + 1, commit(failed, v, ids(v), "failed" -> v.toLong)))
      failed.doMaintenance()
      failed.close()
      ids += Some(commit(p, v, ids(v), s"k${v % 5}" -> v.toLong))
      model(v + 1) = model(v) + (s"k${v % 5}" -> v.toLong)
      assert(contents(p.getStore(v + 1, ids(v + 1))) == model(v + 1)) // as Spark's next batch: the committed id
      p.doMaintenance()
    }
    p.close()
    val names = dirFiles(root)
    val snapshots = names.filter(_.endsWith(".kstate.snapshot"))
    def version(n: String) = n.takeWhile(_ != '_').toLong
    val committedSnapshots = snapshots.filter(n => ids.flatten.exists(i => n.endsWith(s"_$i.kstate.snapshot")))
    // retained 11..14: base 9 (committed snapshots 3, 6, 9, 12); everything below 9 deleted
    // whatever its id, the base version's changelogs and other attempts' snapshots too, other
    // attempts' files from 10 on kept
    assert(names.map(version).min == 9, names)
    assert(committedSnapshots.map(version).toSet == Set(9L, 12L), snapshots)
    assert(!names.exists(n => version(n) == 9 && n.endsWith(".kstate.changelog")), names)
    assert(snapshots.count(n => version(n) == 9) == 1, snapshots)
    for ((v, id) <- others if v >= 10) {
      assert(names.contains(s"${v}_$id.kstate.changelog") && names.contains(s"${v}_$id.kstate.snapshot"), s"$v $names")
    }
    for (v <- 9 to 14) assert(restored(root, v, ids(v), c) == model(v), s"version $v")
    // versions below the base are gone
    val e = intercept[KStateException](restored(root, 8, ids(8), c))
    assert(e.errorClass == "KSTATE_STATE_FILE_MISSING")
  }

  test(
    "cleanup keeps what the version Spark last asked for by id needs (a version the provider committed after it may not be the committed attempt)"
  ) {
    val root = tmp()
    val c = conf(snapshotEvery = 1, retain = 1)
    val p = newProvider(root, c)
    var id: Option[String] = None
    for (v <- 0 until 4) {
      val s = p.getStore(v, id) // Spark asks for (v, id) only from the second batch on: v = 0 has no id
      s.put(key("k"), value(v))
      s.commit()
      id = s.getStateStoreCheckpointInfo().stateStoreCkptId
      p.doMaintenance()
    }
    p.close()
    // version 3 was asked for with its id: retained 3, base snapshot 3; version 4 was never asked for
    val names = dirFiles(root)
    assert(
      names.exists(_.startsWith("3_")) && names.exists(_.startsWith("4_")) && !names.exists(_.startsWith("2_")),
      names
    )
  }

  test("a store committed after another of the same provider reports its own version and ids (racing commits)") {
    // RocksDBStateStoreCheckpointFormatV2Suite "racing commits don't return incorrect checkpointInfo"
    val p = newProvider(tmp())
    val s1 = p.getStore(0, None)
    s1.put(key("a"), value(1))
    s1.commit()
    val id1 = s1.getStateStoreCheckpointInfo().stateStoreCkptId
    val s2 = p.getStore(1, id1)
    s2.put(key("b"), value(2))
    s2.commit()
    assert(s1.getStateStoreCheckpointInfo() == StateStoreCheckpointInfo(0, 1, id1, None))
    val i2 = s2.getStateStoreCheckpointInfo()
    assert(i2.batchVersion == 2 && i2.baseStateStoreCkptId == id1 && i2.stateStoreCkptId != id1)
    p.close()
  }

  test("a loaded version of another id is not reused: the same version of another attempt is restored by its id") {
    val root = tmp()
    val p = newProvider(root)
    val id1 = commit(p, 0, None, "a" -> 1)
    val idA = commit(p, 1, Some(id1), "x" -> 1) // this provider's attempt of version 2
    val other = newProvider(root)
    val idB = commit(other, 1, Some(id1), "y" -> 2) // the attempt Spark recorded
    other.close()
    assert(contents(p.getStore(2, Some(idB))) == Map("a" -> 1L, "y" -> 2L))
    assert(contents(p.getStore(2, Some(idA))) == Map("a" -> 1L, "x" -> 1L))
    p.close()
  }

  test(
    "switching an existing checkpoint between formats is KSTATE_UNSUPPORTED_CHECKPOINT_FORMAT (Spark 4.2 does not pin the format)"
  ) {
    val v1root = tmp()
    val p = newProvider(v1root, conf(v2 = false))
    p.getStore(0).commit()
    p.close()
    val e = intercept[KStateException](restored(v1root, 1, None))
    assert(
      e.errorClass == "KSTATE_UNSUPPORTED_CHECKPOINT_FORMAT" && e.getMessage.contains("format 1") &&
        e.getMessage.contains("now runs with format 2"),
      e.getMessage
    )
    val v2root = tmp()
    val id1 = commit(newProvider(v2root), 0, None, "a" -> 1)
    val back = intercept[KStateException](restored(v2root, 1, None, conf(v2 = false)))
    assert(
      back.errorClass == "KSTATE_UNSUPPORTED_CHECKPOINT_FORMAT" && back.getMessage.contains("format 2"),
      back.getMessage
    )
    val withId = intercept[KStateException](restored(v2root, 1, Some(id1), conf(v2 = false)))
    assert(withId.errorClass == "KSTATE_UNSUPPORTED_CHECKPOINT_FORMAT")
  }

  test(
    "loadEmpty: the snapshot of v + 1 gets a fresh id, reported in the checkpoint info; (v + 1, id) restores it alone"
  ) {
    val root = tmp()
    val p = newProvider(root)
    val id1 = commit(p, 0, None, "a" -> 1)
    val s = p.getStore(1, None, forceSnapshotOnCommit = false, loadEmpty = true)
    s.put(key("b"), value(2))
    assert(s.commit() == 2)
    val info = s.getStateStoreCheckpointInfo()
    assert(info.batchVersion == 2 && info.baseStateStoreCkptId.isEmpty)
    val id2 = info.stateStoreCkptId.get
    assert(id2 != id1)
    assert(dirFiles(root) == Seq(s"1_$id1.kstate.changelog", s"2_$id2.kstate.snapshot").sorted)
    val id3 = commit(p, 2, Some(id2), "c" -> 3)
    p.close()
    assert(restored(root, 2, Some(id2)) == Map("b" -> 2L))
    assert(restored(root, 3, Some(id3)) == Map("b" -> 2L, "c" -> 3L))
    assert(restored(root, 1, Some(id1)) == Map("a" -> 1L))
  }
}
