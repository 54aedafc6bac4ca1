package org.apache.spark.sql.kstate.provider

import java.nio.ByteBuffer
import java.nio.file.{Files, Paths}
import java.util.concurrent.{CountDownLatch, TimeUnit}

import scala.collection.mutable

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreConf}
import org.apache.spark.sql.kstate.config.KStateConf
import org.apache.spark.sql.kstate.engine.HeapStateBudget
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

/**
 * A cold restore of a large state bound for the heap: it lands in RocksDB (the snapshot's table
 * ingested whole), serves from there, and moves to the heap copy built in the background
 * ([[HeapRebuild]]) at the first load or commit after it is ready, with every version committed
 * meanwhile in it.
 */
class HeapRebuildSuite extends AnyFunSuite {
  import ProviderFixture.tmp

  private val keySchema = StructType(Seq(StructField("k", StringType)))
  private val valueSchema = StructType(Seq(StructField("v", LongType)))
  private val keyProj = UnsafeProjection.create(keySchema)
  private val valueProj = UnsafeProjection.create(valueSchema)
  private def key(s: String): UnsafeRow = keyProj(InternalRow(UTF8String.fromString(s))).copy()
  private def value(v: Long): UnsafeRow = valueProj(InternalRow(v)).copy()

  /** Background restore above 100 entries, a generous heap budget unless given. */
  private def conf(
      above: Long = 100,
      budget: Long = 50000000L,
      snapshotEvery: Int = 100,
      extra: Map[String, String] = Map.empty
  ): StateStoreConf =
    ProviderFixture.conf(
      snapshotEvery = snapshotEvery,
      extra = Map(
        KStateConf.BackgroundHeapRestoreAbove.key -> above.toString,
        KStateConf.HeapStateBytes.key -> (HeapStateBudget.reserved + budget).toString
      ) ++ extra
    )

  /** A checkpoint of [[checkpoint]], restored into a provider of `c` while the builder thread is held. */
  private case class HeldRestore(
      root: String,
      model: mutable.Map[String, Long],
      version: Long,
      release: CountDownLatch,
      provider: KStateStoreProvider,
      store: StateStore,
      build: HeapRebuild
  )

  private def restoreWithBuildHeld(c: => StateStoreConf = conf()): HeldRestore = {
    val root = tmp()
    val model = mutable.Map.empty[String, Long]
    val v = checkpoint(root, model)
    val release = holdBuilder()
    val q = open(root, c)
    val next = restoreThenCommit(q, v, model)
    val s = q.getStore(next)
    HeldRestore(root, model, next, release, q, s, q.heapRebuild.getOrElse(fail("no heap copy being built")))
  }

  /**
   * The restore of `v` into `q` lands in RocksDB and starts no build; the restoring store's
   * commit starts it. Returns the version committed.
   */
  private def restoreThenCommit(q: KStateStoreProvider, v: Long, model: mutable.Map[String, Long]): Long = {
    val restoring = q.getStore(v)
    assert(!q.onHeap && q.heapRebuild.isEmpty, "the build started before the restoring micro-batch's commit")
    assert(contents(restoring) == model.toMap)
    val next = writeVersion(restoring, v, 5, model)
    assert(q.heapRebuild.isDefined, "no build started at the restoring store's commit")
    next
  }

  private def open(root: String, c: StateStoreConf): KStateStoreProvider =
    ProviderFixture.open(root, keySchema, valueSchema, c, useColumnFamilies = false)

  private def contents(s: StateStore): Map[String, Long] =
    s.iterator().map(p => p.key.getUTF8String(0).toString -> p.value.getLong(0)).toMap

  /**
   * One version on `s`: puts `n` keys of this version (hash-scattered names, so the heap copy's
   * keys are out of key order) and deletes every 7th key of the version before; returns the new
   * version.
   */
  private def writeVersion(s: StateStore, v: Long, n: Int, model: mutable.Map[String, Long]): Long = {
    (0 until n).foreach { i =>
      val k = s"${(i * 7919) % 1000}-v$v-$i"
      s.put(key(k), value(v * 1000 + i)); model(k) = v * 1000 + i
    }
    if (v > 0) (0 until n by 7).foreach { i =>
      val k = s"${(i * 7919) % 1000}-v${v - 1}-$i"
      s.remove(key(k)); model -= k
    }
    s.commit()
  }

  /** A checkpoint of 3 versions of 200 keys each on the heap, and a snapshot of version 3. */
  private def checkpoint(root: String, model: mutable.Map[String, Long]): Long = {
    val p = open(root, conf(snapshotEvery = 1))
    var v = 0L
    while (v < 3) v = writeVersion(p.getStore(v), v, 200, model)
    assert(p.onHeap)
    p.doMaintenance()
    p.close()
    v
  }

  private def snapshotFormat(root: String, v: Long): Int =
    ByteBuffer.wrap(Files.readAllBytes(Paths.get(s"$root/0/0/$v.kstate.snapshot"))).getInt(4)

  /** Holds the JVM's builder thread until the returned latch is released. */
  private def holdBuilder(): CountDownLatch = {
    val release = new CountDownLatch(1)
    val holding = new CountDownLatch(1)
    HeapRebuild.onBuilderThread(() => { holding.countDown(); release.await(60, TimeUnit.SECONDS) })
    assert(holding.await(60, TimeUnit.SECONDS))
    release
  }

  private def awaitOver(b: HeapRebuild): Unit = {
    val deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60)
    while (!b.over && System.nanoTime() < deadline) Thread.sleep(5)
    assert(b.over, s"$b did not finish")
  }

  test("a heap copy above the threshold, out of key order, snapshots a table in key order; restored exactly") {
    val root = tmp()
    val model = mutable.Map.empty[String, Long]
    val v = checkpoint(root, model)
    assert(Set(4, 5)(snapshotFormat(root, v)), "a table file")
    // restored into RocksDB (then the heap in the background), and straight onto the heap with -1
    Seq(100L -> false, -1L -> true).foreach { case (above, onHeap) =>
      val q = open(root, conf(above))
      val s = q.getStore(v)
      assert(q.lastRestore.flatMap(_.snapshotVersion).contains(v))
      assert(q.onHeap == onHeap, s"above=$above")
      assert(contents(s) == model.toMap && s.metrics.numKeys == model.size, s"above=$above")
      q.close()
    }
  }

  test("a forced snapshot of a large heap copy is a table, as maintenance's, written off the task thread") {
    val root = tmp()
    val model = mutable.Map.empty[String, Long]
    val p = open(root, conf())
    var v = 0L
    while (v < 3) v = writeVersion(p.getStore(v), v, 200, model)
    ProviderFixture.withForcedSnapshotWriterHeld {
      v = writeVersion(p.getStore(v, None, forceSnapshotOnCommit = true, loadEmpty = false), v, 10, model)
      assert(p.onHeap && !Files.exists(Paths.get(s"$root/0/0/$v.kstate.snapshot")), "written by the committing task")
    }
    assert(Set(4, 5)(snapshotFormat(root, v)), "the forced snapshot: a table")
    p.close()
    val q = open(root, conf())
    assert(contents(q.getStore(v)) == model.toMap && q.lastRestore.flatMap(_.snapshotVersion).contains(v))
    q.close()
  }

  test("below the threshold, or with -1, a heap copy snapshots records and restores onto the heap") {
    Seq(1000L, -1L).foreach { above =>
      val root = tmp()
      val model = mutable.Map.empty[String, Long]
      val p = open(root, conf(above, snapshotEvery = 1))
      var v = 0L
      while (v < 3) v = writeVersion(p.getStore(v), v, 200, model)
      p.doMaintenance()
      p.close()
      assert(Set(2, 3)(snapshotFormat(root, v)), s"records (above=$above)")
      val q = open(root, conf(above))
      assert(contents(q.getStore(v)) == model.toMap && q.onHeap && q.heapRebuild.isEmpty, s"above=$above")
      q.close()
    }
  }

  test("versions committed while the heap copy is built are in it when the store moves to the heap") {
    val HeldRestore(root, model, v0, release, q, s, build) = restoreWithBuildHeld()
    var v = v0
    assert(!q.onHeap && contents(s) == model.toMap)
    // two versions while the build waits: puts, overwrites and deletes, all logged
    (0 until 2).foreach { _ =>
      val st = q.getStore(v)
      v = writeVersion(st, v, 150, model)
      assert(!q.onHeap)
    }
    assert(build.current == HeapRebuild.Queued)
    release.countDown()
    awaitOver(build)
    assert(build.current == HeapRebuild.Ready)
    val next = q.getStore(v) // the load moves it
    assert(q.onHeap && q.heapRebuild.isEmpty)
    assert(contents(next) == model.toMap && next.metrics.numKeys == model.size)
    assert(q.heapReservedBytes > 0)
    // and it goes on from there on the heap, restorable as ever
    v = writeVersion(next, v, 50, model)
    assert(q.onHeap)
    q.close()
    val again = open(root, conf(-1))
    assert(contents(again.getStore(v)) == model.toMap)
    again.close()
  }

  test("a commit moves the store to the heap copy once it is ready") {
    val HeldRestore(_, model, v0, release, q, s, build) = restoreWithBuildHeld()
    var v = v0
    release.countDown()
    awaitOver(build)
    v = writeVersion(s, v, 100, model) // its changes applied to RocksDB, then to the ready copy
    assert(q.onHeap)
    assert(contents(q.getStore(v)) == model.toMap)
    q.close()
  }

  test("a build that no longer fits the heap state budget leaves the store in RocksDB, budget released") {
    val before = HeapStateBudget.reserved
    val HeldRestore(_, model, v, release, q, s, build) = restoreWithBuildHeld(conf(budget = 2000000L))
    // another store takes the budget meanwhile
    assert(HeapStateBudget.tryReserve(2000000L - 1000L, HeapStateBudget.reserved + 2000000L))
    try {
      release.countDown()
      awaitOver(build)
      assert(build.current == HeapRebuild.NoRoom)
      assert(contents(q.getStore(v)) == model.toMap && !q.onHeap && q.heapRebuild.isEmpty)
    } finally HeapStateBudget.release(2000000L - 1000L)
    q.close()
    assert(HeapStateBudget.reserved == before)
    assert(s.version == v)
  }

  test("closing the provider cancels its build and releases what it reserved") {
    val root = tmp()
    val model = mutable.Map.empty[String, Long]
    val v = checkpoint(root, model)
    val before = HeapStateBudget.reserved
    // cancelled while queued
    val release = holdBuilder()
    val q = open(root, conf())
    restoreThenCommit(q, v, model.clone())
    val queued = q.heapRebuild.get
    q.close()
    release.countDown()
    awaitOver(queued)
    assert(queued.current == HeapRebuild.Cancelled && HeapStateBudget.reserved == before)
    // cancelled once ready, before a load or commit took it
    val r = open(root, conf())
    restoreThenCommit(r, v, model.clone())
    val ready = r.heapRebuild.get
    awaitOver(ready)
    r.close()
    assert(ready.current == HeapRebuild.Cancelled && HeapStateBudget.reserved == before)
  }

  test("a restoring store that does not commit: the build starts at the next load") {
    val root = tmp()
    val model = mutable.Map.empty[String, Long]
    val v = checkpoint(root, model)
    val q = open(root, conf())
    val restoring = q.getStore(v)
    restoring.put(key("x"), value(1))
    restoring.abort()
    assert(q.heapRebuild.isEmpty)
    val again = q.getStore(v)
    val build = q.heapRebuild.getOrElse(fail("no build started at the next load"))
    awaitOver(build)
    val next = writeVersion(again, v, 10, model)
    assert(q.onHeap && contents(q.getStore(next)) == model.toMap)
    q.close()
  }

  test("a spill in the restoring micro-batch: no build starts; the store returns to the heap at that commit") {
    val root = tmp()
    val model = mutable.Map.empty[String, Long]
    val v = checkpoint(root, model)
    val q = open(root, conf(extra = Map(KStateConf.MaxWriteSetBytes.key -> "2000")))
    val next = writeVersion(q.getStore(v), v, 300, model) // past 2000 bytes of changes: spills
    assert(q.heapRebuild.isEmpty)
    assert(contents(q.getStore(next)) == model.toMap)
    q.close()
  }

  test("a spill while the heap copy is built cancels the build; the spilled version commits exactly") {
    val HeldRestore(root, model, v0, release, q, s, build) =
      restoreWithBuildHeld(conf(extra = Map(KStateConf.MaxWriteSetBytes.key -> "2000")))
    var v = v0
    v = writeVersion(s, v, 300, model) // past 2000 bytes of changes: spills
    release.countDown()
    awaitOver(build)
    assert(build.current == HeapRebuild.Cancelled)
    assert(contents(q.getStore(v)) == model.toMap)
    q.close()
    val again = open(root, conf(-1))
    assert(contents(again.getStore(v)) == model.toMap)
    again.close()
  }
}
