package org.apache.spark.sql.kstate.provider

import scala.util.Random

import org.apache.hadoop.conf.Configuration
import org.scalactic.source.Position
import org.scalatest.{BeforeAndAfter, Tag}

import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.kstate.engine.StateFile
import org.apache.spark.sql.types.StructType

/**
 * Spark's own state store conformance suite, `StateStoreSuiteBase` from the Spark 4.2 `spark-sql`
 * tests jar (build.sbt, project `spark42`), run against kstate's provider
 * (`io.kstate.KStateStoreProvider`). Spark's tests, not ours: this class only tells the suite
 * how to open a kstate provider and read a version back, the way Spark's own provider suites do.
 * Spark 4.2 only (the 4.3 tests jar is not on Maven Central).
 *
 * Each test of Spark's that kstate fails on purpose is excluded by name
 * ([[SparkStateStoreSuiteBaseSuite.Excluded]]), with the difference it meets; docs/state-store.md,
 * "Spark's own StateStoreSuiteBase (Spark 4.2)", shows each with its example. An excluded test is
 * reported as ignored with its reason in its name, never silently dropped.
 */
class SparkStateStoreSuiteBaseSuite extends StateStoreSuiteBase[io.kstate.KStateStoreProvider]
    with BeforeAndAfter {
  import StateStoreTestsHelper._

  // Spark's test names, exact or with the codec / column-family variant Spark appends.
  override protected def test(testName: String, testTags: Tag*)(testFun: => Any)(
      implicit pos: Position): Unit =
    SparkStateStoreSuiteBaseSuite.exclusionOf(testName) match {
      case Some(reason) => ignore(s"$testName (excluded: $reason)", testTags: _*)(testFun)
      case None => super.test(testName, testTags: _*)(testFun)
    }

  // As Spark's own provider suites do: no maintenance thread or loaded provider left from another test.
  before(StateStore.stop())
  after(StateStore.stop())

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
    val dir = id.storeCheckpointLocation()
    val fs = dir.getFileSystem(new Configuration)
    val names = if (fs.exists(dir)) fs.listStatus(dir).toSeq.map(_.getPath.getName) else Nil
    names.flatMap(n => suffixes.find(n.endsWith).flatMap(s => n.stripSuffix(s).toLongOption))
      .maxOption.getOrElse(0L)
  }

  override def afterAll(): Unit = try StateStore.stop() finally super.afterAll()
}

object SparkStateStoreSuiteBaseSuite {
  /**
   * Spark's tests that meet a kstate difference: test name -> the difference. Each one is in
   * docs/state-store.md with its example.
   */
  val Excluded: Map[String, String] = Map(
    "get, put, remove, commit, and all data iterator" ->
      "a missing version is kstate's KSTATE_STATE_FILE_MISSING (KStateException), not a SparkException",
    "getStore with invalid versions" ->
      ("a negative version is an IllegalArgumentException and a missing one KSTATE_STATE_FILE_MISSING, " +
        "not Spark's CANNOT_LOAD_STATE_STORE error conditions"),
    "SPARK-18342: commit fails when rename fails" ->
      ("the commit fails with the file system's error (FAILED_RENAME_TEMP_FILE), not Spark's " +
        "CANNOT_WRITE_STATE_STORE.CANNOT_COMMIT naming HDFSStateStore"),
    "SPARK-38320 - state store iterator behavior differences" ->
      ("an iterator sees the store as it was when created (RocksDB's behaviour); " +
        "Spark expects that only from classes named RocksDBStateStore"))

  /** The reason `testName` (Spark's name, possibly with a codec variant appended) is excluded. */
  def exclusionOf(testName: String): Option[String] =
    Excluded.collectFirst { case (name, reason) if testName == name || testName.startsWith(name + " - with codec ") => reason }
}
