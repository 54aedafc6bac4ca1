package org.apache.spark.sql.kstate.provider

import org.apache.spark.sql.kstate.engine.StateLoader

import java.io.{File, RandomAccessFile}
import java.nio.file.{Files, StandardCopyOption}
import java.util.UUID

import scala.collection.mutable

import io.kstate.KStateException
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types._

/**
 * kstate-specific behaviour of [[KStateStoreProvider]]: its files, restore paths, named errors
 * and metrics. The StateStore contract shared with Spark's providers is in the conformance
 * suites.
 */
class KStateStoreProviderSuite extends AnyFunSuite {
  private val keySchema = StructType(Seq(StructField("k", StringType)))
  private val valueSchema = StructType(Seq(StructField("v", LongType)))
  private val keyProj = UnsafeProjection.create(keySchema)
  private val valueProj = UnsafeProjection.create(valueSchema)
  private def key(s: String): UnsafeRow =
    keyProj(org.apache.spark.sql.catalyst.InternalRow(
      org.apache.spark.unsafe.types.UTF8String.fromString(s)
    )).copy()
  private def value(v: Long): UnsafeRow =
    valueProj(org.apache.spark.sql.catalyst.InternalRow(v)).copy()

  import ProviderFixture.{conf, tmp}

  private def newProvider(root: String, c: StateStoreConf = conf()): KStateStoreProvider =
    ProviderFixture.open(root, keySchema, valueSchema, c, useColumnFamilies = false)

  private def contents(s: StateStore): Map[String, Long] =
    s.iterator().map(p => p.key.getUTF8String(0).toString -> p.value.getLong(0)).toMap

  /**
   * Commits versions 1..n where version v sets key "k<v % 5>" = v and deletes "k<(v+2) % 5>";
   * with `maintain`, runs maintenance after each commit as Spark's maintenance thread would
   * (it writes the snapshots due and deletes what retention allows).
   */
  private def writeVersions(
      p: KStateStoreProvider,
      from: Int,
      to: Int,
      model: mutable.Map[Int, Map[String, Long]],
      maintain: Boolean = true
  ): Unit = {
    for (v <- from to to) {
      val s = p.getStore(v - 1)
      s.put(key(s"k${v % 5}"), value(v))
      s.remove(key(s"k${(v + 2) % 5}"))
      assert(s.commit() == v)
      if (maintain) p.doMaintenance()
      model(v) = contents(p.getStore(v))
    }
  }

  private def dirFiles(root: String): Seq[String] =
    new File(s"$root/0/0").listFiles().map(_.getName).filterNot(_.startsWith(".")).toSeq.sorted

  test("every version restores identically from snapshots + changelogs in a new provider") {
    val root = tmp()
    val p = newProvider(root, conf(retain = 100))
    val model = mutable.Map[Int, Map[String, Long]]()
    writeVersions(p, 1, 10, model)
    p.close()
    assert(dirFiles(root).contains("3.kstate.snapshot"))
    assert(dirFiles(root).contains("10.kstate.changelog"))
    for (v <- 1 to 10) {
      val q = newProvider(root)
      assert(contents(q.getStore(v)) == model(v), s"version $v")
      val info = q.lastRestore.get
      assert(info.snapshotVersion == Some(v / 3 * 3).filter(_ > 0), s"version $v")
      q.close()
    }
  }

  test("restore metrics: snapshot used, records replayed, reported once by the next commit") {
    val root = tmp()
    val p = newProvider(root)
    writeVersions(p, 1, 7, mutable.Map.empty)
    p.close()
    val q = newProvider(root)
    val s = q.getStore(7)
    // snapshot 6, then changelog 7 (one put, one delete)
    assert(q.lastRestore.get == q.lastRestore.get.copy(
      version = 7,
      snapshotVersion = Some(6),
      recordsReplayed = 2
    ))
    s.put(key("x"), value(1))
    s.commit()
    val m = s.metrics.customMetrics.map { case (k, v) => k.name -> v }
    assert(m("kstateStoreRestoreRecordsReplayed") == 2)
    assert(m("kstateStoreRestoredFromSnapshot") == 1)
    val s2 = q.getStore(8)
    s2.commit()
    assert(s2.metrics.customMetrics.map { case (k, v) => k.name -> v }("kstateStoreRestoredFromSnapshot") == 0)
  }

  test("numKeys is exact across overwrites, deletes and restores") {
    val root = tmp()
    val p = newProvider(root)
    val model = mutable.Map[Int, Map[String, Long]]()
    writeVersions(p, 1, 8, model)
    val s = p.getStore(8)
    assert(s.metrics.numKeys == model(8).size)
    p.close()
    val q = newProvider(root)
    assert(q.getStore(8).metrics.numKeys == model(8).size)
  }

  test("abort leaves the version reusable, and a re-run commits different data") {
    val p = newProvider(tmp())
    val s = p.getStore(0)
    s.put(key("a"), value(1))
    s.commit()
    val t = p.getStore(1)
    t.put(key("b"), value(2))
    t.abort()
    val u = p.getStore(1)
    assert(contents(u) == Map("a" -> 1L))
    u.put(key("c"), value(3))
    assert(u.commit() == 2)
    assert(contents(p.getStore(2)) == Map("a" -> 1L, "c" -> 3L))
  }

  test("a missing changelog is a named error naming the file and the batch") {
    val root = tmp()
    val p = newProvider(root, conf(snapshotEvery = 100))
    writeVersions(p, 1, 4, mutable.Map.empty)
    p.close()
    new File(s"$root/0/0/3.kstate.changelog").delete()
    val e = intercept[KStateException](newProvider(root).getStore(4))
    assert(e.errorClass == "KSTATE_STATE_FILE_MISSING")
    assert(e.getMessage.contains("3.kstate.changelog") && e.getMessage.contains("micro-batch 2"))
  }

  test("a version that was never committed cannot be opened") {
    val p = newProvider(tmp())
    writeVersions(p, 1, 2, mutable.Map.empty)
    val e = intercept[KStateException](p.getStore(5))
    assert(e.errorClass == "KSTATE_STATE_FILE_MISSING")
  }

  for (
    (what, damage) <- Seq[(String, File => Unit)](
      "a flipped byte" -> { f =>
        val raf = new RandomAccessFile(f, "rw")
        try { raf.seek(raf.length() / 2); val b = raf.read(); raf.seek(raf.length() / 2); raf.write(b ^ 0x10) }
        finally raf.close()
      },
      "truncation" -> { f =>
        val raf = new RandomAccessFile(f, "rw");
        try raf.setLength(raf.length() - 3)
        finally raf.close()
      },
      "an empty file" -> { f =>
        val raf = new RandomAccessFile(f, "rw");
        try raf.setLength(0)
        finally raf.close()
      }
    )
  ) {
    for (kind <- Seq("changelog", "snapshot")) {
      test(s"a $kind with $what is a named error naming the file and the batch, never wrong state") {
        val root = tmp()
        val p = newProvider(root)
        writeVersions(p, 1, 5, mutable.Map.empty)
        p.close()
        val version = if (kind == "snapshot") 3 else 5
        damage(new File(s"$root/0/0/$version.kstate.$kind"))
        val q = newProvider(root)
        val e = intercept[KStateException](q.getStore(5))
        assert(e.errorClass == "KSTATE_STATE_FILE_CORRUPT")
        assert(e.getMessage.contains(s"$version.kstate.$kind"))
        assert(e.getMessage.contains(s"micro-batch ${version - 1}"))
        // the provider is left empty, not half-loaded: the next attempt fails the same way
        assert(intercept[KStateException](q.getStore(5)).errorClass == "KSTATE_STATE_FILE_CORRUPT")
        // earlier versions not depending on the damaged file still restore
        if (kind == "changelog") assert(contents(q.getStore(4)).nonEmpty)
      }
    }
  }

  // ---- whose files they are ----------------------------------------------------------------

  private def storeOf(op: Long, partition: Int, store: String): String => StateStoreId =
    StateStoreId(_, op, partition, store)

  private def storeDir(root: String, id: String => StateStoreId): File =
    new File(id(root).storeCheckpointLocation().toUri.getPath)

  private val thisStore = storeOf(0, 0, StateStoreId.DEFAULT_STORE_NAME)

  for (
    (what, other) <- Seq(
      "another partition" -> storeOf(0, 1, StateStoreId.DEFAULT_STORE_NAME),
      "another operator id" -> storeOf(7, 0, StateStoreId.DEFAULT_STORE_NAME),
      "another store name" -> storeOf(0, 0, "left-keyToNumValues")
    )
  ) {
    for (kind <- Seq("changelog", "snapshot")) {
      test(
        s"a valid $kind of $what copied in place is KSTATE_STATE_FILE_CORRUPT naming both stores; the right file loads"
      ) {
        val root = tmp()
        val model = mutable.Map[Int, Map[String, Long]]()
        val p = ProviderFixture.open(root, keySchema, valueSchema, conf(), useColumnFamilies = false, thisStore)
        writeVersions(p, 1, 5, model)
        p.close()
        // the other store holds other data at the same versions
        val o = ProviderFixture.open(root, keySchema, valueSchema, conf(), useColumnFamilies = false, other)
        for (v <- 1 to 5) {
          val s = o.getStore(v - 1); s.put(key(s"other$v"), value(-v)); s.commit(); o.doMaintenance()
        }
        o.close()
        val version = if (kind == "snapshot") 3 else 5
        val name = s"$version.kstate.$kind"
        val target = new File(storeDir(root, thisStore), name)
        val original = Files.readAllBytes(target.toPath)
        Files.copy(new File(storeDir(root, other), name).toPath, target.toPath, StandardCopyOption.REPLACE_EXISTING)

        val q = ProviderFixture.open(root, keySchema, valueSchema, conf(), useColumnFamilies = false, thisStore)
        val e = intercept[KStateException](q.getStore(5))
        assert(e.errorClass == "KSTATE_STATE_FILE_CORRUPT")
        val expected = "operator 0, store 'default', partition 0"
        val found = {
          val id = other(root)
          s"operator ${id.operatorId}, store '${id.storeName}', partition ${id.partitionId}"
        }
        assert(
          e.getMessage.contains(name) && e.getMessage.contains(s"expected $expected") &&
            e.getMessage.contains(s"found $found"),
          e.getMessage
        )
        assert(e.getMessage.contains("new checkpoint location"), e.getMessage)
        q.close()

        // the right file back in place: version 5 restores as written
        Files.write(target.toPath, original)
        val r = ProviderFixture.open(root, keySchema, valueSchema, conf(), useColumnFamilies = false, thisStore)
        assert(contents(r.getStore(5)) == model(5))
        r.close()
      }
    }
  }

  test("state files of format 1 (the previous release, no identity) still restore; new versions are format 2") {
    val root = tmp()
    val dir = storeDir(root, thisStore)
    dir.mkdirs()
    for (n <- Seq("1", "2", "3", "4").map(v => s"$v.kstate.changelog") :+ "3.kstate.snapshot") {
      Files.copy(new File(getClass.getResource(s"/state-format-1/$n").toURI).toPath, new File(dir, n).toPath)
    }
    // written by writeVersions(1 to 4) of the previous release
    val p = newProvider(root)
    assert(contents(p.getStore(4)) == Map("k2" -> 2L, "k3" -> 3L, "k4" -> 4L))
    assert(p.lastRestore.get.snapshotVersion == Some(3))
    assert(contents(p.getStore(2)) == Map("k1" -> 1L, "k2" -> 2L))
    val s = p.getStore(4)
    s.put(key("k5"), value(5))
    assert(s.commit() == 5)
    p.close()
    val q = newProvider(root)
    assert(contents(q.getStore(5)) == Map("k2" -> 2L, "k3" -> 3L, "k4" -> 4L, "k5" -> 5L))
    q.close()
    val header = java.nio.ByteBuffer.wrap(Files.readAllBytes(new File(dir, "5.kstate.changelog").toPath))
    assert(header.getInt(4) == 2)
  }

  test("a crash between the changelog write and the batch's commit: the batch re-runs cleanly") {
    val root = tmp()
    val p = newProvider(root)
    writeVersions(p, 1, 2, mutable.Map.empty)
    val s = p.getStore(2)
    s.put(key("lost"), value(1))
    s.commit() // changelog 3 is written, but Spark never records batch 2 as done
    p.close()
    // the restarted query re-runs batch 2 from version 2, with different input
    val q = newProvider(root)
    val t = q.getStore(2)
    assert(!contents(t).contains("lost"))
    t.put(key("rerun"), value(2))
    assert(t.commit() == 3)
    q.close()
    val r = newProvider(root)
    val c = contents(r.getStore(3))
    assert(c.contains("rerun") && !c.contains("lost"))
  }

  test("maintenance keeps what restoring the retained versions needs, deletes the rest") {
    val root = tmp()
    val p = newProvider(root, conf(snapshotEvery = 3, retain = 4))
    val model = mutable.Map[Int, Map[String, Long]]()
    writeVersions(p, 1, 14, model)
    p.doMaintenance()
    p.close()
    val files = dirFiles(root)
    // oldest retained version is 11: it needs snapshot 9 and changelogs 10..14
    assert(files.filter(_.endsWith("snapshot")) == Seq("12.kstate.snapshot", "9.kstate.snapshot"))
    assert(files.filter(_.endsWith("changelog")).map(_.takeWhile(_ != '.').toInt).sorted == (10 to 14))
    for (v <- 11 to 14) {
      val q = newProvider(root)
      assert(contents(q.getStore(v)) == model(v))
      q.close()
    }
  }

  // ---- snapshots from maintenance ----------------------------------------------------------

  private def snapshotFiles(root: String): Seq[String] = dirFiles(root).filter(_.endsWith(".kstate.snapshot"))

  test("commit writes no snapshot; the next maintenance writes the due one of the committed version") {
    val root = tmp()
    val p = newProvider(root, conf(snapshotEvery = 3, retain = 100))
    val model = mutable.Map[Int, Map[String, Long]]()
    writeVersions(p, 1, 4, model, maintain = false)
    assert(snapshotFiles(root).isEmpty, "a commit wrote a snapshot")
    p.doMaintenance() // loaded version 4, 4 versions since the last snapshot (none)
    assert(snapshotFiles(root) == Seq("4.kstate.snapshot"))
    p.doMaintenance() // nothing due
    writeVersions(p, 5, 6, model, maintain = false)
    p.doMaintenance() // 2 versions since 4: not due
    assert(snapshotFiles(root) == Seq("4.kstate.snapshot"))
    writeVersions(p, 7, 7, model, maintain = false)
    p.doMaintenance()
    assert(snapshotFiles(root) == Seq("4.kstate.snapshot", "7.kstate.snapshot"))
    p.close()
    for (v <- 1 to 7) {
      val q = newProvider(root)
      assert(contents(q.getStore(v)) == model(v), s"version $v")
      assert(q.lastRestore.get.snapshotVersion == Seq(4L, 7L).filter(_ <= v).lastOption, s"version $v")
      q.close()
    }
  }

  test("maintenance snapshots the committed version, not the changes of a store still open") {
    val root = tmp()
    for (budget <- Seq(1L << 30, 0L)) { // heap and RocksDB working copies
      val dir = s"$root/$budget"
      val p = newProvider(dir, snapshotEveryVersion(budget))
      hundredKeys(p)
      val s = p.getStore(1)
      s.put(key("uncommitted"), value(-1))
      s.remove(key("k1"))
      p.doMaintenance() // version 1 is due with minDeltasForSnapshot 1
      assert(s.commit() == 2)
      p.close()
      val q = newProvider(dir)
      assert(contents(q.getStore(1)) == (0 until 100).map(i => s"k$i" -> i.toLong).toMap)
      assert(q.lastRestore.get.snapshotVersion == Some(1L))
      q.close()
    }
  }

  /** [[heapBudget]] with a snapshot due at every version. */
  private def snapshotEveryVersion(bytes: Long): StateStoreConf = conf(
    snapshotEvery = 1,
    extra = heapBudget(bytes).sqlConfs.filter(_._1 == org.apache.spark.sql.kstate.config.KStateConf.HeapStateBytes.key)
  )

  for (base <- Seq(2, 0))
    test(s"a snapshot of a version that a re-run rewrites is never restored (re-run from version $base)") {
      val root = tmp()
      val p = newProvider(root, conf(snapshotEvery = base + 1, retain = 100))
      writeVersions(p, 1, base, mutable.Map.empty)
      val s = p.getStore(base)
      s.put(key("lost"), value(1))
      assert(s.commit() == base + 1) // its changelog is written, but Spark never records the batch as done
      p.doMaintenance() // and maintenance snapshots that version before the executor dies
      p.close()
      assert(snapshotFiles(root) == Seq(s"${base + 1}.kstate.snapshot"))
      val q = newProvider(root)
      val t = q.getStore(base) // the restarted query re-runs the batch, with different input
      t.put(key("rerun"), value(2))
      assert(t.commit() == base + 1)
      q.close()
      val r = newProvider(root)
      val c = contents(r.getStore(base + 1))
      assert(c.contains("rerun") && !c.contains("lost"), c)
      assert(snapshotFiles(root).isEmpty, "the snapshot of the replaced version must go")
    }

  test("a snapshot written while the task re-ran that version is not published") {
    val root = tmp()
    val p = new InterleavingProvider
    p.init(
      StateStoreId(root, 0, 0),
      keySchema,
      valueSchema,
      NoPrefixKeyStateEncoderSpec(keySchema),
      useColumnFamilies = false,
      conf(snapshotEvery = 2, retain = 100),
      new org.apache.hadoop.conf.Configuration,
      useMultipleValuesPerKey = false,
      None
    )
    writeVersions(p, 1, 1, mutable.Map.empty, maintain = false)
    val s = p.getStore(1)
    s.put(key("lost"), value(1))
    assert(s.commit() == 2)
    // maintenance has written the snapshot of version 2 when the task re-runs that batch
    p.whenSnapshotPrepared = () => {
      val t = p.getStore(1)
      t.put(key("rerun"), value(2))
      assert(t.commit() == 2)
    }
    p.doMaintenance()
    assert(snapshotFiles(root).isEmpty, "a snapshot of the replaced version 2 was published")
    p.close()
    val c = contents(newProvider(root).getStore(2))
    assert(c.contains("rerun") && !c.contains("lost"), c)
  }

  test("a snapshot write that fails leaves no file; the next maintenance writes it") {
    val root = tmp()
    val p = new InterleavingProvider
    p.init(
      StateStoreId(root, 0, 0),
      keySchema,
      valueSchema,
      NoPrefixKeyStateEncoderSpec(keySchema),
      useColumnFamilies = false,
      conf(snapshotEvery = 2, retain = 100),
      new org.apache.hadoop.conf.Configuration,
      useMultipleValuesPerKey = false,
      None
    )
    val model = mutable.Map[Int, Map[String, Long]]()
    writeVersions(p, 1, 2, model, maintain = false)
    p.whenSnapshotPrepared = () => throw new java.io.IOException("injected: the checkpoint file system failed")
    p.doMaintenance() // logged, not thrown: a snapshot is an optimisation
    assert(allFiles(root).forall(_.endsWith(".kstate.changelog")), allFiles(root))
    p.doMaintenance()
    assert(snapshotFiles(root) == Seq("2.kstate.snapshot"))
    p.close()
    val q = newProvider(root)
    assert(contents(q.getStore(2)) == model(2) && q.lastRestore.get.snapshotVersion == Some(2L))
    q.close()
  }

  test("snapshots written by maintenance are reported once, by the next committed version") {
    val p = newProvider(tmp(), conf(snapshotEvery = 2))
    writeVersions(p, 1, 2, mutable.Map.empty, maintain = false)
    p.doMaintenance()
    def metric(st: StateStore, name: String) = st.metrics.customMetrics.map { case (k, v) => k.name -> v }(name)
    val s = p.getStore(2)
    s.put(key("x"), value(1))
    s.commit()
    assert(metric(s, "kstateStoreSnapshotsWritten") == 1)
    val t = p.getStore(3)
    t.commit()
    assert(metric(t, "kstateStoreSnapshotsWritten") == 0)
    p.close()
  }

  test(
    "forceSnapshotOnCommit: the commit returns at once; the writer thread writes that version's snapshot, counted once"
  ) {
    val root = tmp()
    val p = newProvider(root, conf(snapshotEvery = 100, retain = 100))
    val model = mutable.Map[Int, Map[String, Long]]()
    writeVersions(p, 1, 2, model, maintain = false)
    def metrics(st: StateStore) = st.metrics.customMetrics.map { case (k, v) => k.name -> v } // read once: taken once
    val s = p.getStore(2, None, forceSnapshotOnCommit = true, loadEmpty = false)
    s.put(key("x"), value(7))
    ProviderFixture.withForcedSnapshotWriterHeld {
      assert(s.commit() == 3, "the commit waits for no snapshot")
      assert(snapshotFiles(root).isEmpty, "written on the task thread")
      // counted by the commit that froze it (Spark's StateStoreSuite, SPARK-54063, reads it there)
      val atCommit = metrics(s)
      assert(atCommit("forceSnapshotCount") == 1 && atCommit("kstateStoreSnapshotsWritten") == 0, atCommit)
      model(3) = contents(p.getStore(3))
    }
    assert(snapshotFiles(root) == Seq("3.kstate.snapshot"), "no snapshot of the forced version")
    val t = p.getStore(3) // not forced: no snapshot; the written one reported once
    t.put(key("y"), value(8))
    t.commit()
    ForcedSnapshots.awaitQueued()
    val later = metrics(t)
    assert(snapshotFiles(root) == Seq("3.kstate.snapshot"))
    assert(later("forceSnapshotCount") == 0 && later("kstateStoreSnapshotsWritten") == 1, later)
    assert(metrics(t)("kstateStoreSnapshotsWritten") == 0, "reported twice")
    p.close()
    val q = newProvider(root)
    assert(contents(q.getStore(3)) == model(3) && q.lastRestore.get.snapshotVersion.contains(3L))
    q.close()
  }

  test("forceSnapshotOnCommit: a version committed while its snapshot is written is not in it") {
    val root = tmp()
    val p = newProvider(root, conf(snapshotEvery = 100, retain = 100))
    val model = mutable.Map[Int, Map[String, Long]]()
    writeVersions(p, 1, 2, model, maintain = false)
    ProviderFixture.withForcedSnapshotWriterHeld {
      val s = p.getStore(2, None, forceSnapshotOnCommit = true, loadEmpty = false)
      s.put(key("x"), value(7))
      s.commit()
      model(3) = contents(p.getStore(3))
      val t = p.getStore(3) // committed before the frozen view of 3 is written
      t.put(key("x"), value(70))
      t.remove(key("k3"))
      t.commit()
    }
    p.close()
    val q = newProvider(root)
    assert(contents(q.getStore(3)) == model(3) && q.lastRestore.get.snapshotVersion.contains(3L))
    assert(contents(q.getStore(4)) == model(3) - "k3" + ("x" -> 70L))
    q.close()
  }

  test("loadEmpty: an empty store at the version; its commit writes that version + 1 as a snapshot only") {
    val root = tmp()
    val p = newProvider(root, conf(snapshotEvery = 100, retain = 100))
    val model = mutable.Map[Int, Map[String, Long]]()
    writeVersions(p, 1, 2, model, maintain = false)
    val before = dirFiles(root)
    val s = p.getStore(2, None, forceSnapshotOnCommit = false, loadEmpty = true)
    assert(contents(s).isEmpty && s.get(key("k2")) == null, "the empty store shows version 2's state")
    s.put(key("c"), value(3))
    assert(s.commit() == 3)
    assert(dirFiles(root) == (before :+ "3.kstate.snapshot").sorted, "anything but the snapshot written")
    assert(contents(p.getStore(3)) == Map("c" -> 3L))
    val t = p.getStore(3) // the next version continues it with a changelog, as always
    t.put(key("d"), value(4))
    t.commit()
    p.close()
    val q = newProvider(root)
    val restored = q.getStore(3)
    assert(contents(restored) == Map("c" -> 3L) && q.lastRestore.get.snapshotVersion.contains(3L))
    // the snapshot's trailer counts its keys (it once recorded 0: the count taken before writing)
    assert(restored.metrics.numKeys == 1)
    assert(contents(q.getStore(4)) == Map("c" -> 3L, "d" -> 4L))
    assert(contents(q.getStore(2)) == model(2), "the earlier versions changed")
    q.close()
  }

  test("loadEmpty: spills stay local, an abort writes nothing, and the next store reloads the version") {
    val kc = org.apache.spark.sql.kstate.config.KStateConf
    val root = tmp()
    val p = newProvider(root, conf(snapshotEvery = 1, retain = 100, extra = Map(kc.MaxWriteSetBytes.key -> "8k")))
    val model = mutable.Map[Int, Map[String, Long]]()
    writeVersions(p, 1, 2, model, maintain = false)
    val before = dirFiles(root)
    val aborted = p.getStore(2, None, forceSnapshotOnCommit = false, loadEmpty = true)
    (0 until 2000).foreach(i => aborted.put(key(s"x$i"), value(i)))
    aborted.abort()
    assert(dirFiles(root) == before, "an aborted empty store left files")
    assert(contents(p.getStore(2)) == model(2), "the aborted writes leaked into version 2")
    val open = p.getStore(2, None, forceSnapshotOnCommit = false, loadEmpty = true)
    open.put(key("y"), value(1))
    p.doMaintenance() // a snapshot of version 2 is due (snapshotEvery 1): not of these writes
    assert(dirFiles(root) == before, "maintenance wrote the empty store's writes as a version")
    assert(contents(p.getStore(2)) == model(2), "another store saw the empty store's writes")
    intercept[IllegalStateException](open.commit()) // that store reloaded the partition
    val s = p.getStore(2, None, forceSnapshotOnCommit = false, loadEmpty = true)
    (0 until 2000).foreach(i => s.put(key(s"x$i"), value(i)))
    s.remove(key("x7"))
    assert(s.asInstanceOf[KStateStore].counters.spills > 0, "the writes never spilled: the test tests nothing")
    assert(s.commit() == 3)
    assert(dirFiles(root) == (before :+ "3.kstate.snapshot").sorted)
    val expected = (0 until 2000).filter(_ != 7).map(i => s"x$i" -> i.toLong).toMap
    p.close()
    val q = newProvider(root)
    assert(contents(q.getStore(3)) == expected)
    q.close()
  }

  test("rows handed out are fresh objects; rows passed in may be reused by the caller") {
    val p = newProvider(tmp())
    val s = p.getStore(0)
    val k = key("a").copy()
    val v = value(1).copy()
    s.put(k, v)
    v.setLong(0, 99) // caller reuses its row
    val got1 = s.get(key("a"))
    val got2 = s.get(key("a"))
    assert(got1.getLong(0) == 1 && !(got1 eq got2))
  }

  // ---- heap working copy -------------------------------------------------------------------

  /**
   * A heap state budget with `bytes` free: the budget is the executor's (JVM's), and providers
   * of earlier tests that were never closed still hold their part of it.
   */
  private def heapBudget(bytes: Long): StateStoreConf = conf(extra =
    Map(
      org.apache.spark.sql.kstate.config.KStateConf.HeapStateBytes.key -> (if (bytes == 0) 0L
                                                                           else
                                                                             org.apache.spark.sql.kstate.engine.HeapStateBudget.reserved + bytes).toString
    )
  )

  test("state starts on the heap and moves to RocksDB once it outgrows the heap state budget") {
    val root = tmp()
    val p = newProvider(root, heapBudget(20000))
    val model = mutable.TreeMap.empty[String, Long]
    var v = 0L
    var movedAt = -1L
    while (v < 12) {
      val s = p.getStore(v)
      (0 until 40).foreach { i =>
        val k = s"v${v}i$i"; s.put(key(k), value(i)); model(k) = i
      }
      model.keys.filter(_.endsWith("i7")).toSeq.foreach { k => s.remove(key(k)); model.remove(k) }
      v = s.commit()
      if (!p.onHeap && movedAt < 0) movedAt = v
      val r = p.getStore(v)
      assert(contents(r) == model.toMap, s"version $v")
      assert(r.get(key(s"v${v - 1}i3")).getLong(0) == 3)
      assert(r.metrics.numKeys == model.size)
    }
    assert(movedAt > 1, "the state should start on the heap and move once it grew")
    assert(p.heapReservedBytes == 0)
    p.close()
    // A restore of the same state with room on the heap stays there; without room, the
    // restore moves to RocksDB part way through.
    val roomy = newProvider(root)
    assert(contents(roomy.getStore(v)) == model.toMap && roomy.onHeap)
    assert(roomy.heapReservedBytes > 0)
    roomy.close()
    assert(roomy.heapReservedBytes == 0)
    val tight = newProvider(root, heapBudget(20000))
    assert(contents(tight.getStore(v)) == model.toMap && !tight.onHeap)
    assert(tight.getStore(v).metrics.numKeys == model.size)
    tight.close()
  }

  test("a changelog that fails after the heap copy changed: the batch fails, version v is served again") {
    for (budget <- Seq(1L << 30, 0L)) { // heap working copy (changed first) and RocksDB
      val root = tmp()
      val p = new FailingChangelogProvider
      p.init(
        StateStoreId(root, 0, 0),
        keySchema,
        valueSchema,
        NoPrefixKeyStateEncoderSpec(keySchema),
        useColumnFamilies = false,
        heapBudget(budget),
        new org.apache.hadoop.conf.Configuration,
        useMultipleValuesPerKey = false,
        None
      )
      hundredKeys(p)
      assert(p.onHeap == (budget > 0))
      val s = p.getStore(1)
      (0 until 50).foreach(i => s.put(key(s"k$i"), value(-i)))
      (50 until 60).foreach(i => s.remove(key(s"k$i")))
      s.put(key("new"), value(1))
      p.failNext = true
      intercept[java.io.IOException](s.commit())
      assert(!allFiles(root).exists(_.startsWith("2.kstate.changelog")), allFiles(root))
      val again = p.getStore(1)
      assert(contents(again) == (0 until 100).map(i => s"k$i" -> i.toLong).toMap)
      assert(again.metrics.numKeys == 100)
      again.put(key("new"), value(2))
      assert(again.commit() == 2)
      assert(p.getStore(2).metrics.numKeys == 101)
      p.close()
      assert(contents(newProvider(root).getStore(2)).size == 101)
    }
  }

  test("a store that bounds its heap keeps a small working copy on the heap, a larger one in RocksDB") {
    val root = tmp()
    val p = newProvider(root)
    hundredKeys(p) // about 12 KB of heap copy
    assert(p.onHeap)
    val small = p.getStore(1).asInstanceOf[KStateStore]
    small.limitHeap(1L << 20) // the copy takes less than half of the bound: it stays
    assert(p.onHeap && p.heapCopyBytesWithin > 0)
    small.put(key("x"), value(1))
    assert(small.commit() == 2 && p.onHeap)
    val s = p.getStore(2).asInstanceOf[KStateStore]
    s.limitHeap(16L << 10) // 16 KB: the copy now takes more than half of it
    assert(!p.onHeap && p.heapReservedBytes == 0 && p.heapCopyBytesWithin == 0)
    assert(contents(s) == (0 until 100).map(i => s"k$i" -> i.toLong).toMap + ("x" -> 1L))
    s.put(key("y"), value(2))
    assert(s.commit() == 3)
    p.getStore(1).abort() // another version: a restore, which stays in RocksDB
    assert(p.lastRestore.get.version == 1 && !p.onHeap)
    assert(contents(p.getStore(3)).size == 102 && !p.onHeap)
    p.close()
  }

  test("a bounded store's working copy counts against its bound: the write set spills sooner") {
    val p = newProvider(tmp())
    hundredKeys(p)
    val s = p.getStore(1).asInstanceOf[KStateStore]
    s.limitHeap(Long.MaxValue / 4) // bounded, with room: the copy stays and is counted
    val copy = p.heapCopyBytesWithin
    val bound = 4 * copy
    s.limitHeap(bound)
    assert(p.onHeap && copy > 0 && p.heapCopyBytesWithin == copy)
    // the write set may hold bound - copy bytes; the put that passes that spills
    var before = 0L
    var perPut = 0L
    var i = 0
    while (p.onHeap && i < 100000) {
      before = s.changes.heapBytes
      s.put(key(f"new$i%05d"), value(i))
      perPut = s.changes.heapBytes - before
      i += 1
    }
    assert(!p.onHeap && s.spilled, "the write set never spilled")
    assert(
      before <= bound - copy && before > bound - copy - 2 * math.max(perPut, 200L),
      s"spilled with $before bytes in the write set; bound $bound, copy $copy"
    )
    s.abort()
    p.close()
  }

  /**
   * Checks that `s`, just restored by `q`, holds `model`; then that the restored keys take updates
   * and deletes like any others, and that the next version restores again in a new provider.
   */
  private def restoredExactly(
      root: String,
      q: KStateStoreProvider,
      s: StateStore,
      model: Map[String, Long],
      what: String
  )
      : Unit = {
    assert(contents(s) == model && s.metrics.numKeys == model.size, what)
    s.put(key("v0i0001"), value(-1)); s.remove(key("v5i0499")); s.put(key("new"), value(7))
    val next = s.commit()
    val expected = model + ("v0i0001" -> -1L) - "v5i0499" + ("new" -> 7L)
    assert(contents(q.getStore(next)) == expected, what)
    q.close()
    val again = newProvider(root)
    assert(contents(again.getStore(next)) == expected, s"$what, restored again")
    again.close()
  }

  test("a snapshot restored into RocksDB (no heap room, or not enough) is exact and takes later changes") {
    val root = tmp()
    val model = mutable.TreeMap.empty[String, Long]
    val p = newProvider(root)
    var v = 0L
    while (v < 6) {
      val s = p.getStore(v)
      (0 until 500).foreach { i =>
        val k = f"v${v}i$i%04d"; s.put(key(k), value(i)); model(k) = i
      }
      v = s.commit()
    }
    p.doMaintenance() // a snapshot of version 6
    p.close()
    // budget 0: the snapshot goes straight into RocksDB (as a table file: its keys are in order);
    // a budget of a few KB: it starts on the heap, which moves to RocksDB part way through
    Seq(0, 20000).foreach { budget =>
      val q = newProvider(root, heapBudget(budget))
      val s = q.getStore(v)
      assert(q.lastRestore.flatMap(_.snapshotVersion).contains(v) && !q.onHeap, s"budget $budget")
      restoredExactly(root, q, s, model.toMap, s"budget $budget")
    }
  }

  test(
    "a copy in RocksDB snapshots one table file (format 4): restored into RocksDB whole, into the heap when the budget holds it, exactly either way"
  ) {
    val root = tmp()
    val model = mutable.TreeMap.empty[String, Long]
    val p = newProvider(root, heapBudget(0))
    var v = 0L
    while (v < 6) {
      val s = p.getStore(v)
      (0 until 500).foreach { i =>
        val k = f"v${v}i$i%04d"; s.put(key(k), value(i)); model(k) = i
      }
      if (v > 0) (0 until 500 by 7).foreach { i =>
        val k = f"v${v - 1}i$i%04d"; s.remove(key(k)); model -= k
      }
      v = s.commit()
    }
    p.doMaintenance() // a snapshot of version 6, from RocksDB
    assert(!p.onHeap)
    p.close()
    val snapshot = java.nio.file.Paths.get(s"$root/0/0/$v.kstate.snapshot")
    assert(java.nio.ByteBuffer.wrap(java.nio.file.Files.readAllBytes(snapshot)).getInt(4) == 4)
    // tableSnapshots=false (to go back to the previous release): records, format 2
    val off = newProvider(
      root,
      conf(
        snapshotEvery = 1,
        extra =
          Map(
            org.apache.spark.sql.kstate.config.KStateConf.HeapStateBytes.key -> "0",
            org.apache.spark.sql.kstate.config.KStateConf.TableSnapshots.key -> "false"
          )
      )
    )
    val o = off.getStore(v)
    o.put(key("off"), value(1))
    val offVersion = o.commit()
    off.doMaintenance()
    off.close()
    val offSnapshot = java.nio.file.Paths.get(s"$root/0/0/$offVersion.kstate.snapshot")
    assert(java.nio.ByteBuffer.wrap(java.nio.file.Files.readAllBytes(offSnapshot)).getInt(4) == 2)
    val back = newProvider(root)
    assert(contents(back.getStore(offVersion)) == model.toMap + ("off" -> 1L))
    back.close()
    // room for all of it: the heap; none (0), or less than its keys and values (20000): RocksDB
    var heapSize = 0L
    Seq(50000000L -> true, 0L -> false, 20000L -> false).foreach { case (budget, onHeap) =>
      val q = newProvider(root, heapBudget(budget))
      val s = q.getStore(v)
      assert(q.lastRestore.flatMap(_.snapshotVersion).contains(v) && q.onHeap == onHeap, s"budget $budget")
      if (onHeap) heapSize = q.heapReservedBytes
      restoredExactly(root, q, s, model.toMap, s"budget $budget")
    }
    // room for just less than the heap copy needs: RocksDB (the estimate and its headroom)
    val q = newProvider(root, heapBudget(heapSize - 1))
    val s = q.getStore(v)
    assert(!q.onHeap && contents(s) == model.toMap && s.metrics.numKeys == model.size)
    q.close()
  }

  test(
    "a heap copy in key order too large to be restored on the heap with headroom snapshots a table file too; a restore ingests it unless its budget holds it"
  ) {
    // long keys: the arena's free room is then small beside the entries, as in a large state
    val perVersion = 30000
    def name(v: Long, i: Int) = f"v${v}i$i%06d" + "x" * 90
    def build(root: String, budget: Long): KStateStoreProvider = {
      val p = newProvider(root, heapBudget(budget))
      var v = 0L
      while (v < 3) {
        val s = p.getStore(v)
        (0 until perVersion).foreach(i => s.put(key(name(v, i)), value(i)))
        v = s.commit()
      }
      p
    }
    def format(root: String) = java.nio.ByteBuffer.wrap(
      java.nio.file.Files.readAllBytes(java.nio.file.Paths.get(s"$root/0/0/3.kstate.snapshot"))
    ).getInt(4)
    val roomy = tmp()
    val big = build(roomy, 50000000L)
    val heapSize = big.heapReservedBytes
    // the restore's estimate with its headroom, which the test's budget stays just below
    val threshold = (big.heapRestoreEstimate * StateLoader.Headroom).toLong
    assert(heapSize < threshold, s"no budget between the heap copy's $heapSize bytes and $threshold")
    big.doMaintenance()
    big.close()
    assert(format(roomy) == 2, "room to spare: records")
    // within its budget, but not with a quarter to spare beside the restore's estimate; in key order (restored from its
    // changelogs, each of keys above the last: the heap copy's sorted index is valid)
    val root = tmp()
    build(root, 50000000L).close()
    val p = newProvider(root, heapBudget(threshold - 1))
    p.getStore(3)
    assert(p.onHeap)
    p.doMaintenance()
    p.close()
    assert(format(root) == 4)
    // a heap copy out of key order (no ordered read keeps its sorted index) stays records: a
    // table file takes its keys in order only
    val unordered = tmp()
    val u = newProvider(unordered, heapBudget(threshold - 1))
    (0 until 3).foreach { v =>
      val s = u.getStore(v)
      (0 until perVersion).foreach(i => s.put(key(name(v, i)), value(i)))
      s.commit()
    }
    u.doMaintenance()
    u.close()
    assert(format(unordered) == 2)
    val model = (0 until 3).flatMap(v => (0 until perVersion).map(i => name(v, i) -> i.toLong)).toMap
    Seq(threshold - 1 -> false, 50000000L -> true).foreach { case (budget, onHeap) =>
      val q = newProvider(root, heapBudget(budget))
      val s = q.getStore(3)
      assert(q.lastRestore.flatMap(_.snapshotVersion).contains(3) && q.onHeap == onHeap, s"budget $budget")
      assert(contents(s) == model && s.metrics.numKeys == model.size, s"budget $budget")
      q.close()
    }
  }

  test("with a heap state budget of 0 the working copy is always RocksDB") {
    val p = newProvider(tmp(), heapBudget(0))
    hundredKeys(p)
    assert(!p.onHeap && p.heapReservedBytes == 0)
    assert(contents(p.getStore(1)).size == 100)
    p.close()
  }

  test("a store on the heap moves to RocksDB before it spills; the other store reads version v") {
    val p = newProvider(tmp(), smallHeap)
    (0 until 4).foreach { v => // versions small enough not to spill
      val s = p.getStore(v)
      (v * 25 until v * 25 + 25).foreach(i => s.put(key(s"k$i"), value(i)))
      s.commit()
    }
    assert(p.onHeap)
    val reader = p.getStore(4)
    val writer = p.getStore(4).asInstanceOf[KStateStore]
    (0 until 3000).foreach(i => writer.put(key(s"n$i"), value(i)))
    assert(writer.counters.spills > 0 && !p.onHeap)
    assert(contents(reader) == (0 until 100).map(i => s"k$i" -> i.toLong).toMap)
    assert(writer.get(key("k7")).getLong(0) == 7 && writer.get(key("n7")).getLong(0) == 7)
    assert(writer.commit() == 5)
    reader.abort()
    assert(contents(p.getStore(5)).size == 3100)
    p.close()
  }

  test("after a spilled version's commit the working copy returns to the heap when it fits") {
    val root = tmp()
    val p = newProvider(root, smallHeap)
    val s = spillingVersion(p)
    assert(s.counters.spills > 0 && !p.onHeap)
    assert(s.commit() == 2)
    // the spill needed RocksDB for the uncommitted changes only; the committed copy fits the heap
    assert(p.onHeap && p.heapReservedBytes > 0)
    val expected = (1 until 100 by 2).map(i => s"k$i" -> i.toLong).toMap ++ (0 until 3000).map(i => s"n$i" -> i.toLong)
    val next = p.getStore(2)
    assert(contents(next) == expected && next.metrics.numKeys == expected.size)
    next.put(key("z"), value(26))
    assert(next.commit() == 3 && p.onHeap)
    p.doMaintenance() // a snapshot from the heap copy
    p.close()
    val q = newProvider(root)
    assert(contents(q.getStore(3)) == expected + ("z" -> 26L))
    q.close()
  }

  test("after a spilled version's commit a copy that does not fit the heap budget stays in RocksDB") {
    val kc = org.apache.spark.sql.kstate.config.KStateConf
    val budget = org.apache.spark.sql.kstate.engine.HeapStateBudget.reserved + (16L << 10)
    val p =
      newProvider(tmp(), conf(extra = Map(kc.MaxWriteSetBytes.key -> "8k", kc.HeapStateBytes.key -> budget.toString)))
    hundredKeys(p)
    assert(p.onHeap)
    val s = p.getStore(1).asInstanceOf[KStateStore]
    (0 until 3000).foreach(i => s.put(key(s"n$i"), value(i)))
    assert(s.counters.spills > 0 && s.commit() == 2)
    assert(!p.onHeap && p.heapReservedBytes == 0) // 3100 keys take more than 16 KB on the heap
    assert(contents(p.getStore(2)).size == 3100)
    p.close()
  }

  test("rows read from the heap working copy do not share bytes with it") {
    val p = newProvider(tmp())
    hundredKeys(p)
    val s = p.getStore(1)
    val got = s.get(key("k5"))
    got.setLong(0, -1L)
    s.iterator().foreach(pair => pair.value.setLong(0, -2L))
    assert(s.get(key("k5")).getLong(0) == 5 && contents(s) == (0 until 100).map(i => s"k$i" -> i.toLong).toMap)
    s.abort()
    p.close()
  }

  test("iterating a plain-key family on the heap: each current entry once, writes while iterating do not show") {
    val root = tmp()
    val p = newProvider(root, conf(snapshotEvery = 2))
    hundredKeys(p)
    val s = p.getStore(1)
    (100 until 110).foreach(i => s.put(key(s"k$i"), value(i)))
    (0 until 10).foreach(i => s.put(key(s"k$i"), value(1000 + i)))
    (10 until 20).foreach(i => s.remove(key(s"k$i")))
    val expected = ((0 until 10).map(i => s"k$i" -> (1000L + i)) ++ (20 until 110).map(i => s"k$i" -> i.toLong)).toMap
    val seen = mutable.ListBuffer.empty[(String, Long)]
    val it = s.iterator()
    while (it.hasNext) {
      val pair = it.next()
      val k = pair.key.getUTF8String(0).toString
      seen += k -> pair.value.getLong(0)
      // as Spark's operators do: remove what was reached; also write keys not yet reached
      if (pair.value.getLong(0) % 2 == 0) s.remove(pair.key)
      s.put(key(s"new-$k"), value(-1))
      s.put(key("k99"), value(-99))
    }
    assert(seen.size == expected.size && seen.toMap == expected)
    val after = expected.filter(_._2 % 2 != 0) ++ expected.keys.map(k => s"new-$k" -> -1L) + ("k99" -> -99L)
    assert(contents(s) == after)
    assert(s.commit() == 2 && p.onHeap)
    p.doMaintenance()
    // versions 2 and 3 were committed without ordered reads (no sort); the snapshot of version 2
    // is in map order, and restores the same state
    assert(contents(p.getStore(2)) == after)
    val s3 = p.getStore(2)
    s3.remove(key("k99"))
    assert(s3.commit() == 3)
    p.close()
    assert(dirFiles(root).contains("2.kstate.snapshot"))
    val q = newProvider(root)
    assert(contents(q.getStore(2)) == after)
    assert(q.lastRestore.get.snapshotVersion == Some(2L))
    assert(contents(q.getStore(3)) == after - "k99")
    q.close()
  }

  // ---- spilling the write set --------------------------------------------------------------

  private val smallHeap = conf(extra = Map(org.apache.spark.sql.kstate.config.KStateConf.MaxWriteSetBytes.key -> "8k"))

  /** All files of the store directory, hidden temporary files included. */
  private def allFiles(root: String): Seq[String] = new File(s"$root/0/0").list().toSeq.sorted

  /** Version 1 with keys k0..k99 = 0..99; returns the provider. */
  private def hundredKeys(p: KStateStoreProvider): Unit = {
    val s = p.getStore(0)
    (0 until 100).foreach(i => s.put(key(s"k$i"), value(i)))
    s.commit()
  }

  /** Version 2 being written on top of [[hundredKeys]]: n0..n2999 put, the even k's removed; it spilled. */
  private def spillingVersion(p: KStateStoreProvider): KStateStore = {
    hundredKeys(p)
    val s = p.getStore(1).asInstanceOf[KStateStore]
    (0 until 3000).foreach(i => s.put(key(s"n$i"), value(i)))
    (0 until 100 by 2).foreach(i => s.remove(key(s"k$i")))
    s
  }

  test("a version over the heap limit spills; reads, scans, numKeys and restores see every change") {
    val root = tmp()
    val p = newProvider(root, smallHeap)
    val s = spillingVersion(p)
    (0 until 3000 by 3).foreach(i => s.put(key(s"n$i"), value(-i))) // overwrite spilled keys
    assert(s.counters.spills > 0)
    assert(s.changes.heapBytes <= 8 * 1024)
    val expected = (1 until 100 by 2).map(i => s"k$i" -> i.toLong).toMap ++
      (0 until 3000).map(i => s"n$i" -> (if (i % 3 == 0) -i else i).toLong)
    assert(s.get(key("n3")).getLong(0) == -3 && s.get(key("k2")) == null)
    assert(contents(s) == expected)
    assert(s.commit() == 2)
    assert(s.metrics.numKeys == expected.size)
    assert(s.metrics.customMetrics.map { case (k, v) => k.name -> v }("kstateStoreSpills") > 0)
    assert(contents(p.getStore(2)) == expected)
    p.close()
    val q = newProvider(root)
    assert(contents(q.getStore(2)) == expected)
    assert(q.getStore(2).metrics.numKeys == expected.size)
  }

  test("abort after a spill: the checkpoint stays at the previous version, the working copy is rebuilt") {
    val root = tmp()
    val p = newProvider(root, smallHeap)
    hundredKeys(p)
    val before = contents(p.getStore(1))
    val s = p.getStore(1).asInstanceOf[KStateStore]
    (0 until 3000).foreach(i => s.put(key(s"n$i"), value(i)))
    assert(s.counters.spills > 0)
    s.abort()
    assert(!allFiles(root).exists(_.contains("2.kstate.changelog")), allFiles(root))
    assert(contents(p.getStore(1)) == before)
    assert(p.lastRestore.get.version == 1)
  }

  test("a spilled store whose task died is never served again; the re-run sees the committed version") {
    val p = newProvider(tmp(), smallHeap)
    hundredKeys(p)
    val dead = p.getStore(1)
    (0 until 3000).foreach(i => dead.put(key(s"n$i"), value(i)))
    val rerun = p.getStore(1) // Spark re-ran the batch without aborting the first attempt
    assert(rerun.get(key("n1")) == null && rerun.get(key("k1")).getLong(0) == 1)
    assert(intercept[IllegalStateException](dead.get(key("k1"))).getMessage.contains("stale"))
    intercept[IllegalStateException](dead.commit())
    rerun.put(key("x"), value(7))
    assert(rerun.commit() == 2)
    assert(contents(p.getStore(2)).size == 101)
  }

  test("while one store spills, another store of the same version reads that version, not the spills") {
    val p = newProvider(tmp(), smallHeap)
    hundredKeys(p)
    val reader = p.getStore(1) // e.g. a session window's restore side, opened first in the task
    val writer = p.getStore(1).asInstanceOf[KStateStore]
    (0 until 3000).foreach(i => writer.put(key(s"k${i % 100}"), value(-i)))
    (0 until 3000).foreach(i => writer.put(key(s"n$i"), value(i)))
    assert(writer.counters.spills > 0)
    assert(reader.get(key("k5")).getLong(0) == 5 && reader.get(key("n5")) == null)
    assert(contents(reader) == (0 until 100).map(i => s"k$i" -> i.toLong).toMap)
    assert(writer.get(key("n5")).getLong(0) == 5)
    intercept[IllegalStateException](reader.commit()) // only the spilling store may commit
    assert(writer.commit() == 2)
    reader.abort()
    assert(contents(p.getStore(2)).size == 3100)
  }

  test("disk full while spilling fails the batch with KSTATE_STATE_SPILL_FAILED; the checkpoint is intact") {
    val root = tmp()
    val p = new DiskFullProvider
    p.init(
      StateStoreId(root, 0, 0),
      keySchema,
      valueSchema,
      NoPrefixKeyStateEncoderSpec(keySchema),
      useColumnFamilies = false,
      smallHeap,
      new org.apache.hadoop.conf.Configuration,
      useMultipleValuesPerKey = false,
      None
    )
    hundredKeys(p)
    val before = contents(p.getStore(1))
    val s = p.getStore(1)
    p.diskFull = true
    val e = intercept[KStateException]((0 until 3000).foreach(i => s.put(key(s"n$i"), value(i))))
    assert(e.errorClass == "KSTATE_STATE_SPILL_FAILED")
    assert(e.getMessage.contains("No space left on device") && e.getMessage.contains("micro-batch 1"))
    s.abort()
    assert(!allFiles(root).exists(_.contains("2.kstate.changelog")), allFiles(root))
    // Space freed: the batch re-runs from the intact version 1 and commits.
    p.diskFull = false
    val t = p.getStore(1)
    assert(contents(t) == before)
    (0 until 3000).foreach(i => t.put(key(s"n$i"), value(i)))
    assert(t.commit() == 2)
    p.close()
    assert(contents(newProvider(root).getStore(2)).size == 3100)
  }
}

/** A provider whose local disk fills up on demand (RocksDB reports a failed write). */
class DiskFullProvider extends KStateStoreProvider {
  @volatile var diskFull = false
  override protected def applyLocally(batch: org.rocksdb.WriteBatch, write: org.rocksdb.WriteBatch => Unit): Unit = {
    if (diskFull) {
      throw new org.rocksdb.RocksDBException("IO error: No space left on device: While appending to file")
    }
    super.applyLocally(batch, write)
  }
}

/** A provider whose next changelog fails as it is made durable (after the heap copy changed). */
class FailingChangelogProvider extends KStateStoreProvider {
  @volatile var failNext = false
  override protected def makeDurable(out: org.apache.spark.sql.kstate.engine.StateFiles.AtomicOutput): Unit = {
    if (failNext) {
      failNext = false
      out.cancel()
      throw new java.io.IOException("injected: the checkpoint file system failed")
    }
    out.commit()
  }
}

/** A provider that runs a test's callback once between writing a snapshot and publishing it. */
class InterleavingProvider extends KStateStoreProvider {
  @volatile var whenSnapshotPrepared: () => Unit = () => ()
  override protected def snapshotPrepared(version: Long): Unit = {
    val f = whenSnapshotPrepared
    whenSnapshotPrepared = () => ()
    f()
  }
}
