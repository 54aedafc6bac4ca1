package org.apache.spark.sql.kstate.provider

import java.nio.file.Files

import org.apache.hadoop.conf.Configuration

import org.apache.spark.sql.execution.streaming.state.{NoPrefixKeyStateEncoderSpec, StateStoreConf, StateStoreId}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.StructType

/** Opens kstate providers on a fresh checkpoint directory, outside any query. */
object ProviderFixture {
  def conf(
      snapshotEvery: Int = 3,
      retain: Int = 4,
      extra: Map[String, String] = Map.empty,
      extraOptions: Map[String, String] = Map.empty
  ): StateStoreConf = {
    val sql = new SQLConf
    extra.foreach { case (k, v) => sql.setConfString(k, v) }
    sql.setConfString("spark.sql.streaming.stateStore.minDeltasForSnapshot", snapshotEvery.toString)
    sql.setConfString("spark.sql.streaming.minBatchesToRetain", retain.toString)
    new StateStoreConf(sql, extraOptions)
  }

  def tmp(): String = Files.createTempDirectory("kstate-provider").toFile.getAbsolutePath

  /**
   * Runs `body` while the JVM's forced snapshot writer ([[ForcedSnapshots]]) is busy, so that
   * nothing it is asked for meanwhile is written yet; then lets it go and waits until it has
   * written all of it.
   */
  def withForcedSnapshotWriterHeld[T](body: => T): T = {
    val hold = new java.util.concurrent.CountDownLatch(1)
    ForcedSnapshots.submit(() => hold.await())
    try body
    finally {
      hold.countDown()
      ForcedSnapshots.awaitQueued()
    }
  }

  /** A provider of store `id` (default: operator 0, partition 0, store "default") under `root`. */
  def open(
      root: String,
      keySchema: StructType,
      valueSchema: StructType,
      c: StateStoreConf = conf(),
      useColumnFamilies: Boolean = true,
      id: String => StateStoreId = StateStoreId(_, 0, 0)
  ): KStateStoreProvider = {
    val p = new KStateStoreProvider
    p.init(
      id(root),
      keySchema,
      valueSchema,
      NoPrefixKeyStateEncoderSpec(keySchema),
      useColumnFamilies,
      c,
      new Configuration,
      useMultipleValuesPerKey = false,
      None
    )
    p
  }
}
