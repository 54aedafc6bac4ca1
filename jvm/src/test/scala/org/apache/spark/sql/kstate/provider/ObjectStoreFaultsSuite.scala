package org.apache.spark.sql.kstate.provider

import java.io.File
import java.nio.file.Files

import io.kstate.KStateException
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, Path, RawLocalFileSystem}
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.execution.streaming.state.{NoPrefixKeyStateEncoderSpec, StateStoreId}

/**
 * What a checkpoint on a remote file system or object store can do to kstate's state files, and
 * what kstate does then (docs/state-store.md, "Checkpoints on HDFS and S3"): the store is reached
 * through Hadoop (a scheme of its own over the local disk, as HDFS and S3A are), with faults
 * injected: a task killed while writing its changelog, stale and partial objects left behind, a
 * listing that misses a file. In every case kstate restores the committed version or fails with a
 * named error; it never restores another version's entries.
 */
class ObjectStoreFaultsSuite extends AnyFunSuite {
  import LongRows._

  private def fresh(): (File, String) = {
    val dir = Files.createTempDirectory("kstate-object-store").toFile
    (dir, s"${FaultyFileSystem.Scheme}://${dir.getAbsolutePath}")
  }

  private def provider(root: String): KStateStoreProvider = {
    val conf = new Configuration
    conf.set(s"fs.${FaultyFileSystem.Scheme}.impl", classOf[FaultyFileSystem].getName)
    conf.setBoolean(s"fs.${FaultyFileSystem.Scheme}.impl.disable.cache", true)
    val p = new KStateStoreProvider
    p.init(
      StateStoreId(root, 0, 0),
      keySchema,
      valueSchema,
      NoPrefixKeyStateEncoderSpec(keySchema),
      true,
      ProviderFixture.conf(snapshotEvery = 2),
      conf,
      useMultipleValuesPerKey = false,
      None
    )
    p
  }

  /** Commits versions 1..n, version v putting key v -> v * 10. */
  private def commit(p: KStateStoreProvider, from: Int, to: Int): Unit =
    (from to to).foreach { v =>
      val s = p.getStore(v - 1)
      s.put(key(v), value(v * 10L))
      s.commit()
    }

  private def expected(n: Int): Map[Long, Long] = (1 to n).map(v => v.toLong -> v * 10L).toMap

  private def storeDir(dir: File): File = new File(dir, "0/0")

  test("a store on a Hadoop file system other than the local one goes through Hadoop and restores") {
    val (_, root) = fresh()
    val p = provider(root)
    commit(p, 1, 3)
    p.close()
    val again = provider(root)
    try assert(contents(again.getStore(3)) == expected(3))
    finally again.close()
  }

  test("a task killed while writing its changelog leaves only a temporary object: ignored, and the re-run commits") {
    val (dir, root) = fresh()
    val p = provider(root)
    commit(p, 1, 2)
    p.close()
    // what a killed writer leaves through Hadoop's atomic create: a hidden temporary file with
    // part of the changelog of version 3, never renamed into place
    val leftover = new File(storeDir(dir), ".3.kstate.changelog.1b2c-killed.tmp")
    Files.write(leftover.toPath, Array[Byte](75, 83, 84, 76, 0, 0))
    val rerun = provider(root)
    try {
      assert(contents(rerun.getStore(2)) == expected(2))
      commit(rerun, 3, 3)
    } finally rerun.close()
    val after = provider(root)
    try assert(contents(after.getStore(3)) == expected(3))
    finally after.close()
  }

  test(
    "a partial object under a future version's name (a store without atomic writes) is replaced by the commit of that version"
  ) {
    val (dir, root) = fresh()
    val p = provider(root)
    commit(p, 1, 2)
    p.close()
    Files.write(new File(storeDir(dir), "3.kstate.changelog").toPath, Array[Byte](75, 83, 84, 76, 0, 0, 0, 2, 1))
    val q = provider(root)
    try {
      assert(contents(q.getStore(2)) == expected(2), "a file above the loaded version is not read")
      commit(q, 3, 3)
    } finally q.close()
    val after = provider(root)
    try assert(contents(after.getStore(3)) == expected(3))
    finally after.close()
  }

  test("a partial or stale object of a committed version is a named error, never another version's entries") {
    val (dir, root) = fresh()
    val p = provider(root)
    commit(p, 1, 3)
    p.close()
    val changelog = new File(storeDir(dir), "3.kstate.changelog")
    val whole = Files.readAllBytes(changelog.toPath)
    Files.write(changelog.toPath, java.util.Arrays.copyOf(whole, whole.length / 2)) // cut short
    val q = provider(root)
    try {
      val e = intercept[KStateException](q.getStore(3))
      assert(e.errorClass == "KSTATE_STATE_FILE_CORRUPT", e.getMessage)
      assert(contents(q.getStore(2)) == expected(2), "older versions still restore")
    } finally q.close()
    // a stale object: version 2's changelog in version 3's place (same store, valid, wrong version)
    Files.copy(
      new File(storeDir(dir), "2.kstate.changelog").toPath,
      changelog.toPath,
      java.nio.file.StandardCopyOption.REPLACE_EXISTING
    )
    val r = provider(root)
    try assert(intercept[KStateException](r.getStore(3)).errorClass == "KSTATE_STATE_FILE_CORRUPT")
    finally r.close()
  }

  test("a listing that misses the newest changelog: a named error, and the next attempt restores the version") {
    val (dir, root) = fresh()
    val p = provider(root)
    commit(p, 1, 3)
    p.close()
    FaultyFileSystem.hideOnce(new File(storeDir(dir), "3.kstate.changelog").getAbsolutePath)
    val q = provider(root)
    try {
      val e = intercept[KStateException](q.getStore(3))
      assert(e.errorClass == "KSTATE_STATE_FILE_MISSING" && e.getMessage.contains("3.kstate.changelog"), e.getMessage)
      assert(contents(q.getStore(3)) == expected(3), "Spark's task retry lists again")
    } finally q.close()
  }

  test("a listing that misses the newest snapshot: the version restores from an older snapshot and the changelogs") {
    val (dir, root) = fresh()
    val p = provider(root)
    commit(p, 1, 5)
    p.getStore(5).abort()
    p.doMaintenance() // snapshot of version 5 (every 2 versions past the last)
    p.close()
    val snapshots = storeDir(dir).list().filter(_.endsWith(".kstate.snapshot")).sorted
    assert(snapshots.nonEmpty)
    FaultyFileSystem.hideOnce(new File(storeDir(dir), snapshots.last).getAbsolutePath)
    val q = provider(root)
    try {
      assert(contents(q.getStore(5)) == expected(5))
      assert(q.lastRestore.exists(r => !r.snapshotVersion.contains(snapshots.last.takeWhile(_ != '.').toLong)))
    } finally q.close()
  }
}

/**
 * The local disk under a scheme of its own, reached through Hadoop as a remote store is, whose
 * listings can miss a file (as an eventually consistent listing, or a listing racing a write).
 */
class FaultyFileSystem extends RawLocalFileSystem {
  override def getUri: java.net.URI = java.net.URI.create(s"${FaultyFileSystem.Scheme}:///")
  override def listStatus(f: Path): Array[FileStatus] =
    super.listStatus(f).filterNot(s => FaultyFileSystem.takeHidden(s.getPath.toUri.getPath))
}

object FaultyFileSystem {
  val Scheme = "kstatefaulty"
  private val hidden = java.util.concurrent.ConcurrentHashMap.newKeySet[String]()

  /** The next listing that would show `path` (an absolute local path) leaves it out. */
  def hideOnce(path: String): Unit = hidden.add(path)
  private def takeHidden(path: String): Boolean = hidden.remove(path)
}
