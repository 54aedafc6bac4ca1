package org.apache.spark.sql.kstate.state

import java.io.File

import scala.util.Random

import org.apache.hadoop.conf.Configuration

import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.kstate.state.store.StateFile
import org.apache.spark.sql.types.StructType

/**
 * Spark's own state store conformance suite, `StateStoreSuiteBase` from the Spark 4.2 `spark-sql`
 * tests jar (build.sbt, project `spark42`), run against kstate's provider
 * (`io.kstate.KStateStoreProvider`). Spark's tests, not ours: this class only tells the suite
 * how to open a kstate provider and read a version back, the way Spark's own provider suites do.
 * Spark 4.2 only (the 4.3 tests jar is not on Maven Central).
 *
 * Each test of Spark's that kstate fails on purpose is excluded by name below, with the
 * difference it meets; docs/state-store.md, "Spark's StateStoreSuiteBase", shows each with its
 * example. Excluded tests are reported as ignored, never silently dropped.
 */
class SparkStateStoreSuiteBaseSuite extends StateStoreSuiteBase[io.kstate.KStateStoreProvider] {
  import StateStoreTestsHelper._

  /** Spark's tests that meet a deliberate kstate difference (name -> the difference). */
  private def deliberateDifferences: Map[String, String] = SparkStateStoreSuiteBaseSuite.Excluded

  override def excluded: Seq[String] = deliberateDifferences.keys.toSeq

  override def newStoreProvider(): io.kstate.KStateStoreProvider =
    open(freshStoreId())

  override def newStoreProvider(storeId: StateStoreId): io.kstate.KStateStoreProvider =
    open(storeId)

  override def newStoreProvider(storeId: StateStoreId, useColumnFamilies: Boolean): io.kstate.KStateStoreProvider =
    open(storeId, useColumnFamilies = useColumnFamilies)

  override def newStoreProvider(storeId: StateStoreId, conf: Configuration): io.kstate.KStateStoreProvider =
    open(storeId, hadoopConf = conf)

  override def newStoreProvider(minDeltasForSnapshot: Int, numOfVersToRetainInMemory: Int): io.kstate.KStateStoreProvider =
    open(freshStoreId(), sql = getDefaultSQLConf(minDeltasForSnapshot, numOfVersToRetainInMemory))

  override def newStoreProvider(keySchema: StructType, keyStateEncoderSpec: KeyStateEncoderSpec,
      useColumnFamilies: Boolean): io.kstate.KStateStoreProvider =
    open(freshStoreId(), keySchema = keySchema, keySpec = keyStateEncoderSpec,
      useColumnFamilies = useColumnFamilies)

  override def newStoreProvider(useColumnFamilies: Boolean): io.kstate.KStateStoreProvider =
    open(freshStoreId(), useColumnFamilies = useColumnFamilies)

  override def newStoreProviderWithClonedConf(storeId: StateStoreId): io.kstate.KStateStoreProvider =
    open(storeId, sql = cloneSQLConf())

  override def newStoreProviderNoInit(): io.kstate.KStateStoreProvider = new io.kstate.KStateStoreProvider

  override def getDefaultSQLConf(minDeltasForSnapshot: Int, numOfVersToRetainInMemory: Int): SQLConf = {
    val conf = new SQLConf
    conf.setConf(SQLConf.STATE_STORE_MIN_DELTAS_FOR_SNAPSHOT, minDeltasForSnapshot)
    conf.setConf(SQLConf.MAX_BATCHES_TO_RETAIN_IN_MEMORY, numOfVersToRetainInMemory)
    conf.setConf(SQLConf.MIN_BATCHES_TO_RETAIN, 2)
    conf
  }

  override def getLatestData(provider: io.kstate.KStateStoreProvider,
      useColumnFamilies: Boolean): Set[((String, Int), Int)] =
    getData(provider, -1, useColumnFamilies)

  /** Version `version` (the newest committed one if negative) as a fresh provider reads it back. */
  override def getData(provider: io.kstate.KStateStoreProvider, version: Int,
      useColumnFamilies: Boolean): Set[((String, Int), Int)] =
    tryWithProviderResource(open(provider.stateStoreId, useColumnFamilies = useColumnFamilies)) { reread =>
      val v = if (version >= 0) version.toLong else newestVersion(provider.stateStoreId)
      val store = reread.getStore(v)
      try store.iterator().map(rowPairToDataPair).toSet
      finally if (!store.hasCommitted) store.abort()
    }

  private def freshStoreId(): StateStoreId = StateStoreId(newDir(), Random.nextInt(), 0)

  private def open(id: StateStoreId, keySchema: StructType = keySchema,
      keySpec: KeyStateEncoderSpec = null, useColumnFamilies: Boolean = false,
      sql: SQLConf = getDefaultSQLConf(
        SQLConf.STATE_STORE_MIN_DELTAS_FOR_SNAPSHOT.defaultValue.get,
        SQLConf.MAX_BATCHES_TO_RETAIN_IN_MEMORY.defaultValue.get),
      hadoopConf: Configuration = new Configuration): io.kstate.KStateStoreProvider = {
    val p = new io.kstate.KStateStoreProvider
    p.init(id, keySchema, valueSchema, Option(keySpec).getOrElse(NoPrefixKeyStateEncoderSpec(keySchema)),
      useColumnFamilies, new StateStoreConf(sql), hadoopConf, useMultipleValuesPerKey = false, None)
    p
  }

  /** The newest version the store's checkpoint directory has a file for (0: none). */
  private def newestVersion(id: StateStoreId): Long = {
    val suffixes = Seq(StateFile.Changelog, StateFile.Snapshot).map("." + _.suffix)
    val names = Option(new File(id.storeCheckpointLocation().toUri).list()).toSeq.flatten
    names.flatMap(n => suffixes.find(n.endsWith).flatMap(s => n.stripSuffix(s).toLongOption))
      .maxOption.getOrElse(0L)
  }

  override def afterAll(): Unit = try StateStore.stop() finally super.afterAll()
}

object SparkStateStoreSuiteBaseSuite {
  /** Filled in from the first run; each entry is documented in docs/state-store.md. */
  val Excluded: Map[String, String] = Map.empty
}
