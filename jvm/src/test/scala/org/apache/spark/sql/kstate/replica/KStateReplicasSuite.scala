package org.apache.spark.sql.kstate.replica

import java.io.File

import scala.util.Random

import org.apache.hadoop.conf.Configuration
import org.scalatest.BeforeAndAfterEach
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.execution.streaming.state.StateStoreId
import org.apache.spark.sql.kstate.provider.{KStateStoreProvider, ProviderFixture}
import org.apache.spark.sql.kstate.provider.LongRows._
import org.apache.spark.sql.kstate.replica.ReplicaProtocol.Standby

/**
 * Standby copies on one executor, against real checkpoints: a copy follows committed versions,
 * a provider adopts it and replays only what it lacks, and a copy is never served from another
 * lineage or ahead of the version asked for. Every adopted store is compared with the model of
 * what was committed.
 */
class KStateReplicasSuite extends AnyFunSuite with BeforeAndAfterEach {
  private val hadoop = new Configuration

  override def beforeEach(): Unit = KStateReplicas.start()
  override def afterEach(): Unit = KStateReplicas.stop()

  private final class Checkpoint(snapshotEvery: Int = 1000, retain: Int = 1000) {
    val checkpoint: String = ProviderFixture.tmp()
    val root: String = s"$checkpoint/state"
    val store: ReplicaStore = ReplicaStore.of("q1", StateStoreId(root, 0, 0))
    private val conf = ProviderFixture.conf(snapshotEvery, retain)
    private val queryConf = ProviderFixture.conf(
      snapshotEvery,
      retain,
      extraOptions = Map(KStateStoreProvider.QueryIdKey -> "q1")
    )
    var models = Vector(Map.empty[Long, Long])

    /** A provider on another executor (outside any query: it leaves this executor's copies alone). */
    def open(): KStateStoreProvider = ProviderFixture.open(root, keySchema, valueSchema, conf)

    /** A provider of a query's task on this executor. */
    def openHere(): KStateStoreProvider = ProviderFixture.open(root, keySchema, valueSchema, queryConf)

    /** Commits versions up to `v` with random changes, as an active provider elsewhere does. */
    def commitTo(v: Int, rnd: Random): Unit = {
      val p = open()
      try while (models.size <= v) {
          val s = p.getStore(models.size - 1L)
          models :+= randomChanges(s, models.last, rnd, 1 + rnd.nextInt(40), 80)
          s.commit()
        }
      finally p.close()
    }

    /** Rewrites version `v` (a re-run of its micro-batch with other input). */
    def rewrite(v: Int, rnd: Random): Unit = {
      models = models.take(v)
      Thread.sleep(5) // a new modification time even on a coarse clock
      commitTo(v, rnd)
    }

    /** A provider here restoring `v`: what it restored from, and whether its store is right. */
    def restoreHere(v: Long): KStateStoreProvider.RestoreInfo = {
      val p = openHere()
      try {
        val s = p.getStore(v)
        assert(contents(s) == models(v.toInt), s"contents of version $v")
        s.abort()
        p.lastRestore.get
      } finally p.close()
    }
  }

  private def follow(cp: Checkpoint, committed: Long) = KStateReplicas.follow(Seq(Standby(cp.store, committed)), hadoop)

  test("a provider adopts the standby and replays only the versions it lacks") {
    for (seed <- 1 to 10) {
      val rnd = new Random(seed)
      val cp = new Checkpoint()
      cp.commitTo(9, rnd)
      val cold = cp.restoreHere(9) // no standby here: from the checkpoint
      assert(cold.standbyVersion.isEmpty)
      val first = follow(cp, 3)
      assert(first.rebuilt == 1 && first.failed == 0)
      assert(KStateReplicas.holdings == Map(cp.store -> 3L))
      assert(follow(cp, 5).rebuilt == 0, "a copy that keeps up is not rebuilt")
      assert(KStateReplicas.holdings == Map(cp.store -> 5L))
      val info = cp.restoreHere(9)
      assert(info.standbyVersion == Some(5L), s"seed $seed")
      assert(info.snapshotVersion.isEmpty)
      assert(info.recordsReplayed < cold.recordsReplayed, s"seed $seed: $info vs $cold")
      assert(KStateReplicas.holdings.isEmpty, "adopted: no longer a standby")
    }
  }

  test("once the planned micro-batch committed (its commit log entry), the standby holds its version too") {
    val cp = new Checkpoint()
    cp.commitTo(6, new Random(7))
    follow(cp, 5)
    assert(KStateReplicas.holdings == Map(cp.store -> 5L), "batch 5 has not committed: version 6 may be rewritten")
    new File(s"${cp.checkpoint}/commits").mkdirs()
    assert(new File(s"${cp.checkpoint}/commits/5").createNewFile())
    follow(cp, 5)
    assert(KStateReplicas.holdings == Map(cp.store -> 6L))
    assert(cp.restoreHere(6).standbyVersion == Some(6L))
  }

  test("a standby of the version asked for replays nothing") {
    val cp = new Checkpoint()
    cp.commitTo(4, new Random(1))
    follow(cp, 4)
    val info = cp.restoreHere(4)
    assert(info.standbyVersion == Some(4L) && info.recordsReplayed == 0)
  }

  test("a copy ahead of the version asked for is not used") {
    val cp = new Checkpoint()
    cp.commitTo(6, new Random(2))
    follow(cp, 6)
    val info = cp.restoreHere(4)
    assert(info.standbyVersion.isEmpty)
    assert(KStateReplicas.holdings.isEmpty, "the copy was dropped")
  }

  test("a copy whose last version was rewritten (another lineage) is rebuilt, never served") {
    for (seed <- 1 to 5) {
      val rnd = new Random(seed)
      val cp = new Checkpoint()
      cp.commitTo(5, rnd)
      follow(cp, 5)
      cp.rewrite(5, rnd) // version 5 re-run with other changes
      cp.commitTo(7, rnd)
      val info = cp.restoreHere(7) // contents checked against the new lineage
      assert(info.standbyVersion.isEmpty, s"seed $seed")
      // and a follower catching up rebuilds instead of replaying onto the old version 5
      val cp2 = new Checkpoint()
      cp2.commitTo(5, rnd)
      follow(cp2, 5)
      cp2.rewrite(5, rnd)
      cp2.commitTo(6, rnd)
      assert(follow(cp2, 6).rebuilt == 1, s"seed $seed")
      assert(cp2.restoreHere(6).standbyVersion == Some(6L))
    }
  }

  test("a standby behind retention rebuilds from the snapshot") {
    val cp = new Checkpoint(snapshotEvery = 2, retain = 1)
    val rnd = new Random(3)
    cp.commitTo(2, rnd)
    follow(cp, 2)
    cp.commitTo(8, rnd)
    val p = cp.open()
    p.getStore(8).abort()
    p.doMaintenance() // snapshot 8; changelogs up to 8 deleted
    p.close()
    assert(!new File(s"${cp.root}/0/0/2.kstate.changelog").exists())
    val step = follow(cp, 8)
    assert(step.rebuilt == 1 && step.failed == 0)
    val info = cp.restoreHere(8)
    assert(info.standbyVersion == Some(8L))
  }

  test("copies not assigned any more, or of a store active here, are dropped") {
    val a = new Checkpoint()
    val b = new Checkpoint()
    val rnd = new Random(4)
    a.commitTo(2, rnd); b.commitTo(2, rnd)
    KStateReplicas.follow(Seq(Standby(a.store, 2), Standby(b.store, 2)), hadoop)
    assert(KStateReplicas.holdings.keySet == Set(a.store, b.store))
    KStateReplicas.follow(Seq(Standby(b.store, 2)), hadoop)
    assert(KStateReplicas.holdings.keySet == Set(b.store))
    val owner = new Object
    var ownerVersion = 2L
    KStateReplicas.activate(b.store, owner, () => ownerVersion)
    KStateReplicas.follow(Seq(Standby(b.store, 2)), hadoop)
    assert(KStateReplicas.holdings.isEmpty, "no copy of a store active here")
    assert(KStateReplicas.loaded == Map(b.store -> 2L), "its provider's version")
    KStateReplicas.deactivate(b.store, new Object)
    KStateReplicas.follow(Seq(Standby(b.store, 2)), hadoop)
    assert(KStateReplicas.holdings.isEmpty, "only its own provider deactivates it")
    KStateReplicas.deactivate(b.store, owner)
    KStateReplicas.follow(Seq(Standby(b.store, 2)), hadoop)
    assert(KStateReplicas.holdings.keySet == Set(b.store))
  }

  test("a provider left loaded after its store moved away does not keep this executor's copy out") {
    val b = new Checkpoint()
    val rnd = new Random(6)
    b.commitTo(3, rnd)
    val owner = new Object
    var ownerVersion = 3L
    KStateReplicas.activate(b.store, owner, () => ownerVersion)
    KStateReplicas.follow(Seq(Standby(b.store, 3)), hadoop)
    assert(
      KStateReplicas.holdings.isEmpty && KStateReplicas.loaded == Map(b.store -> 3L),
      "the provider holds the committed version: no copy"
    )
    ownerVersion = 2L // it last ran version 2; the store then ran elsewhere and committed 3
    KStateReplicas.follow(Seq(Standby(b.store, 3)), hadoop)
    assert(KStateReplicas.holdings == Map(b.store -> 3L), "a copy, built from the checkpoint")
    assert(KStateReplicas.loaded.isEmpty, "the copy stands for the store")
    KStateReplicas.deactivate(b.store, owner)
  }

  test("a standby that cannot catch up is dropped and counted, not thrown") {
    val cp = new Checkpoint()
    cp.commitTo(2, new Random(5))
    new File(s"${cp.root}/0/0/2.kstate.changelog").delete()
    val step = follow(cp, 2)
    assert(step.failed == 1 && KStateReplicas.holdings.isEmpty)
  }

  test("without a follower in the JVM a provider restores from the checkpoint") {
    val cp = new Checkpoint()
    cp.commitTo(3, new Random(6))
    follow(cp, 3)
    KStateReplicas.stop()
    assert(cp.restoreHere(3).standbyVersion.isEmpty)
  }

  // ---- a provider left loaded at an earlier version (its store ran elsewhere, then came back) ----

  /** `p` commits the versions after its loaded one up to `v` with random changes, as an active provider here does. */
  private def commitHere(
      p: KStateStoreProvider,
      models: Vector[Map[Long, Long]],
      v: Int,
      rnd: Random,
      ids: Vector[Option[String]] = Vector.empty
  ): (Vector[Map[Long, Long]], Vector[Option[String]]) = {
    var (m, i) = (models, ids)
    while (m.size <= v) {
      val s = p.getStore(m.size - 1L, i.lift(m.size - 1).flatten)
      m :+= randomChanges(s, m.last, rnd, 1 + rnd.nextInt(40), 80)
      s.commit()
      if (i.nonEmpty) i :+= s.getStateStoreCheckpointInfo().stateStoreCkptId
    }
    (m, i)
  }

  test("a provider left loaded at an earlier version catches up by replaying only the changelogs after it") {
    // Found on a cluster: a lost executor's partition ran where it had run before, its provider
    // still loaded there at an older version, and restored it from the checkpoint (every
    // changelog since the last snapshot) instead of replaying the few versions it lacked.
    for (seed <- 1 to 5) {
      val rnd = new Random(seed)
      val cp = new Checkpoint()
      val here = cp.openHere()
      try {
        cp.models = commitHere(here, cp.models, 3, rnd)._1 // active here up to version 3
        cp.commitTo(7, rnd) // then on another executor: versions 4..7
        val s = here.getStore(7)
        assert(contents(s) == cp.models(7), s"seed $seed: contents of version 7")
        s.abort()
        val info = here.lastRestore.get
        assert(info.caughtUpFrom == Some(3L) && info.snapshotVersion.isEmpty && info.standbyVersion.isEmpty, info)
        val expected = cp.restoreHere(7).recordsReplayed - cp.restoreHere(3).recordsReplayed
        assert(info.recordsReplayed == expected, s"seed $seed: only the changelogs of versions 4..7")
        // and it commits on from there
        cp.models = commitHere(here, cp.models, 8, rnd)._1
        assert(cp.restoreHere(8).caughtUpFrom.isEmpty)
      } finally here.close()
    }
  }

  test("a provider loaded at a version a re-run rewrote restores from the checkpoint, never replays onto it") {
    for (seed <- 1 to 5) {
      val rnd = new Random(seed)
      val cp = new Checkpoint()
      val here = cp.openHere()
      try {
        cp.models = commitHere(here, cp.models, 3, rnd)._1
        cp.rewrite(3, rnd) // micro-batch 2 re-ran on another executor: version 3 is another write
        cp.commitTo(5, rnd)
        val s = here.getStore(5)
        assert(contents(s) == cp.models(5), s"seed $seed: contents of the rewritten lineage")
        s.abort()
        assert(here.lastRestore.get.caughtUpFrom.isEmpty, s"seed $seed: caught up onto another lineage")
      } finally here.close()
    }
  }

  test("a provider loaded at an earlier version adopts this executor's standby copy rather than catching up") {
    val rnd = new Random(8)
    val cp = new Checkpoint()
    val here = cp.openHere()
    try {
      cp.models = commitHere(here, cp.models, 2, rnd)._1
      cp.commitTo(6, rnd)
      follow(cp, 6) // the provider here holds 2 < 6: this executor keeps a copy of the store
      assert(KStateReplicas.holdings == Map(cp.store -> 6L))
      val s = here.getStore(6)
      assert(contents(s) == cp.models(6))
      s.abort()
      val info = here.lastRestore.get
      assert(info.standbyVersion == Some(6L) && info.caughtUpFrom.isEmpty && info.recordsReplayed == 0, info)
    } finally here.close()
  }

  // ---- checkpoint format v2 -----------------------------------------------------------------

  /**
   * A checkpoint of format v2: versions are committed under ids, and the commit log entries
   * (`commits/<b>`, written as Spark writes them) name the ids Spark recorded, which a follower
   * reads to know which attempt of a version is committed.
   */
  private final class V2Checkpoint(snapshotEvery: Int = 1000) {
    val checkpoint: String = ProviderFixture.tmp()
    val root: String = s"$checkpoint/state"
    val store: ReplicaStore = ReplicaStore.of("q2", StateStoreId(root, 0, 0))
    private val v2 = Map("spark.sql.streaming.stateStore.checkpointFormatVersion" -> "2")
    private val conf = ProviderFixture.conf(snapshotEvery, 1000, extra = v2)
    private val queryConf = ProviderFixture.conf(
      snapshotEvery,
      1000,
      extra = v2,
      extraOptions = Map(KStateStoreProvider.QueryIdKey -> "q2")
    )
    var models = Vector(Map.empty[Long, Long])
    var ids = Vector[Option[String]](None)

    /** Commits versions up to `v` on the current lineage, as an active provider elsewhere does. */
    def commitTo(v: Int, rnd: Random): Unit = {
      val p = ProviderFixture.open(root, keySchema, valueSchema, conf)
      try while (models.size <= v) {
          val s = p.getStore(models.size - 1L, ids.last)
          models :+= randomChanges(s, models.last, rnd, 1 + rnd.nextInt(40), 80)
          s.commit()
          ids :+= s.getStateStoreCheckpointInfo().stateStoreCkptId
        }
      finally p.close()
    }

    /** Commit log entries of micro-batches 0..`batch` (version b + 1 committed with ids(b + 1)). */
    def commitBatches(batch: Int): Unit = {
      val dir = new File(s"$checkpoint/commits")
      dir.mkdirs()
      dir.listFiles().foreach(_.delete())
      for (b <- 0 to batch) {
        java.nio.file.Files.writeString(
          new File(dir, b.toString).toPath,
          "v2\n{\"nextBatchWatermarkMs\":0,\"stateUniqueIds\":{\"0\":[[\"" + ids(b + 1).get + "\"]]}}"
        )
      }
    }

    /** Version `v` re-run with other changes: the lineage from v on is another attempt's. */
    def rerun(v: Int, rnd: Random): Unit = {
      models = models.take(v)
      ids = ids.take(v)
      commitTo(v, rnd)
    }

    /** A provider of a query's task on this executor. */
    def openHere(): KStateStoreProvider = ProviderFixture.open(root, keySchema, valueSchema, queryConf)

    /** A provider here restoring `v` by its id: what it restored from, and whether its store is right. */
    def restoreHere(v: Int): KStateStoreProvider.RestoreInfo = {
      val p = ProviderFixture.open(root, keySchema, valueSchema, queryConf)
      try {
        val s = p.getStore(v.toLong, ids(v))
        assert(contents(s) == models(v), s"contents of version $v")
        s.abort()
        p.lastRestore.get
      } finally p.close()
    }
  }

  test(
    "format v2: a standby follows the ids the commit log names, and a provider adopts it replaying only what it lacks"
  ) {
    val cp = new V2Checkpoint()
    val rnd = new Random(11)
    cp.commitTo(9, rnd)
    cp.commitBatches(3) // batches 0..3 committed: versions 1..4
    val first = KStateReplicas.follow(Seq(Standby(cp.store, 4)), hadoop)
    assert(first.rebuilt == 1 && first.failed == 0 && KStateReplicas.holdings == Map(cp.store -> 4L))
    cp.commitBatches(5) // batch 4 and 5 committed: the follower moves on to version 6 by its id
    assert(KStateReplicas.follow(Seq(Standby(cp.store, 5)), hadoop).rebuilt == 0)
    assert(KStateReplicas.holdings == Map(cp.store -> 6L))
    val info = cp.restoreHere(9)
    assert(info.standbyVersion == Some(6L) && info.snapshotVersion.isEmpty, info)
    val cold = { cp.commitBatches(8); cp.restoreHere(9) }
    assert(cold.standbyVersion.isEmpty && info.recordsReplayed < cold.recordsReplayed, s"$info vs $cold")
  }

  test(
    "format v2: a copy of another attempt of a version is never adopted, and a follower rebuilds it on the committed lineage"
  ) {
    for (seed <- 1 to 3) {
      val rnd = new Random(seed)
      val cp = new V2Checkpoint()
      cp.commitTo(5, rnd)
      cp.commitBatches(4)
      KStateReplicas.follow(Seq(Standby(cp.store, 5)), hadoop)
      assert(KStateReplicas.holdings == Map(cp.store -> 5L))
      // the query is taken back to batch 3 and re-runs batch 4 (version 5) with other input:
      // the committed version 5 is now another attempt's, under another id
      val held = cp.ids(5)
      cp.rerun(5, rnd)
      cp.commitTo(7, rnd)
      assert(cp.ids(5) != held)
      val info = cp.restoreHere(7) // contents checked against the new lineage
      assert(info.standbyVersion.isEmpty, s"seed $seed: adopted a copy of another attempt")
      // a follower catching up rebuilds instead of replaying onto the other attempt's version 5
      val cp2 = new V2Checkpoint()
      cp2.commitTo(5, rnd)
      cp2.commitBatches(4)
      KStateReplicas.follow(Seq(Standby(cp2.store, 5)), hadoop)
      cp2.rerun(5, rnd)
      cp2.commitTo(6, rnd)
      cp2.commitBatches(5)
      assert(KStateReplicas.follow(Seq(Standby(cp2.store, 5)), hadoop).rebuilt == 1, s"seed $seed")
      assert(KStateReplicas.holdings == Map(cp2.store -> 6L))
      assert(cp2.restoreHere(6).standbyVersion == Some(6L))
    }
  }

  test("format v2: a provider left loaded at an earlier version catches up along the committed lineage only") {
    for (seed <- 1 to 3) {
      val rnd = new Random(seed)
      val cp = new V2Checkpoint()
      val here = cp.openHere()
      try {
        val (m, i) = commitHere(here, cp.models, 3, rnd, cp.ids)
        cp.models = m; cp.ids = i
        cp.commitTo(6, rnd)
        val s = here.getStore(6, cp.ids(6))
        assert(contents(s) == cp.models(6), s"seed $seed")
        s.abort()
        val info = here.lastRestore.get
        assert(info.caughtUpFrom == Some(3L) && info.snapshotVersion.isEmpty, info)
        assert(info.recordsReplayed == cp.restoreHere(6).recordsReplayed - cp.restoreHere(3).recordsReplayed)
      } finally here.close()
      // version 3 re-run under another id: the provider that committed the first attempt restores
      val cp2 = new V2Checkpoint()
      val here2 = cp2.openHere()
      try {
        val (m, i) = commitHere(here2, cp2.models, 3, rnd, cp2.ids)
        cp2.models = m; cp2.ids = i
        cp2.rerun(3, rnd)
        cp2.commitTo(5, rnd)
        val s = here2.getStore(5, cp2.ids(5))
        assert(contents(s) == cp2.models(5), s"seed $seed: contents of the re-run's lineage")
        s.abort()
        assert(here2.lastRestore.get.caughtUpFrom.isEmpty, s"seed $seed: caught up onto another attempt")
      } finally here2.close()
    }
  }
}
