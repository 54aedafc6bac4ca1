package org.apache.spark.sql.kstate.provider

import scala.collection.immutable.TreeMap

/**
 * kstate's provider against the StateStore conformance cases. Unguarded on purpose: if the
 * provider class is missing, every case fails (class not found) instead of being skipped.
 */
class KStateConformanceSuite extends StateStoreConformanceSuite {
  import StateStoreConformanceSuite._

  override def providerClassName: String = "org.apache.spark.sql.kstate.provider.KStateStoreProvider"

  // Everything is expected; narrow this (and say why in a comment) for any feature kstate's
  // provider deliberately rejects: the suite then checks that it is rejected loudly.
  override def supports(feature: StoreFeature): Boolean = true

  // kstate honours spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows like Spark's
  // RocksDB provider: numKeys is -1 when counting is off.
  override protected def numKeysWhenRowCountUntracked: Option[Long] = Some(-1L)

  // A never-committed version is kstate's named error, which names the missing file and batch.
  override protected def assertCannotLoad(e: Throwable): Unit = e match {
    case k: io.kstate.KStateException => assert(k.errorClass == "KSTATE_STATE_FILE_MISSING", k.getMessage)
    case other => fail(s"expected KSTATE_STATE_FILE_MISSING, got $other", other)
  }

  // Spark's RocksDB provider does not adjust its tracked count on deleteRange; kstate's should.
  override protected def numKeysExactAfterDeleteRange: Boolean = true

  test("public alias io.kstate.KStateStoreProvider reads and writes the same state") {
    withStoreDir { dir =>
      val alias = new ProviderFactory("io.kstate.KStateStoreProvider", dir.root, baseConf ++ extraConf)
      val viaAlias = alias.create(plain)
      try {
        assert(viaAlias.getClass.getName == "io.kstate.KStateStoreProvider" ||
          viaAlias.getClass.getName == providerClassName)
        val s = viaAlias.getStore(0)
        s.put(key(1), value((1L, "alias")))
        assert(s.commit() == 1)
      } finally viaAlias.close()
      val p = dir.provider(plain)
      val s1 = dir.open(p, 1)
      assert(contents(s1) == TreeMap(1 -> ((1L, "alias"))))
      s1.put(key(2), value((2L, "internal")))
      assert(s1.commit() == 2)
      val back = alias.create(plain)
      try readVersion(back, 2)(r => assert(contents(r) == TreeMap(1 -> ((1L, "alias")), 2 -> ((2L, "internal")))))
      finally back.close()
    }
  }
}

/** kstate's provider with its working copy always in RocksDB (no heap state). */
class KStateDbConformanceSuite extends KStateConformanceSuite {
  override protected def extraConf: Map[String, String] =
    Map(org.apache.spark.sql.kstate.config.KStateConf.HeapStateBytes.key -> "0")
}

/**
 * kstate's provider with a heap state budget so small that stores start on the heap and move to
 * RocksDB as they grow, within restores and at commits.
 */
class KStateHeapToDbConformanceSuite extends KStateConformanceSuite {
  // 600 bytes free in the executor-wide budget (earlier suites may hold some of it).
  override protected def extraConf: Map[String, String] =
    Map(org.apache.spark.sql.kstate.config.KStateConf.HeapStateBytes.key ->
      (org.apache.spark.sql.kstate.engine.HeapStateBudget.reserved + 600).toString)
}
