package org.apache.spark.sql.kstate.repartition

import java.util.UUID

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path

import org.apache.spark.TaskContext
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.classic.{SparkSession => ClassicSession}
import org.apache.spark.sql.execution.streaming.operators.stateful.StatePartitionKeyExtractorFactory
import org.apache.spark.sql.execution.streaming.state.{
  NoPrefixKeyStateEncoderSpec,
  PrefixKeyScanStateEncoderSpec,
  StateStore,
  StateStoreConf,
  StateStoreId,
  StateStoreMetadata,
  StateStoreProvider,
  StateStoreProviderId
}
import org.apache.spark.sql.functions
import org.apache.spark.sql.kstate.engine.{Bytes, FamilyCodec, StateFile, StateFileIdentity, StateFiles}
import org.apache.spark.sql.kstate.provider.CheckpointFiles
import org.apache.spark.sql.types.{BinaryType, StructField, StructType}
import org.apache.spark.util.SerializableConfiguration

/**
 * Moves one store of one of Spark's own operators to n partitions, for [[SparkOperatorsRewrite]],
 * when the store is kept by a provider Spark's own rewrite refuses (it cannot open an empty store
 * at a version, or read all its column families): Spark's HDFS provider, or kstate's provider as
 * the query-wide one.
 *
 * The store's entries as of the last committed micro-batch are read with Spark's state data
 * source, sent to the partition Spark's own shuffle sends their partition key to (Spark's
 * `StatePartitionKeyExtractorFactory`, then `repartition(n, partition_key)`, as Spark's
 * repartition does), and each new partition's entries are written into the staging checkpoint
 * as the provider's own file of one complete version:
 *  - HDFS: put into an empty HDFS store and committed: its version 1, one delta file of puts
 *    only, which [[SparkOperatorsRewrite.install]] moves into place as the snapshot of version
 *    R + 1 (a delta of puts only and a snapshot are the same file to the HDFS provider: key
 *    length, key, value length, value, ..., -1, compressed with the store's codec);
 *  - kstate: a snapshot of version R + 1, written directly (the default column family only, keys
 *    as their UnsafeRow bytes: stores with a plain key encoding).
 * Spark's state data source reading the moved state back checks it (`test_repartition_mixed.py`).
 */
private[repartition] object SparkStoreRewrite {

  /** The provider whose files a move writes. */
  sealed trait Target
  case object Hdfs extends Target
  case object KState extends Target

  /** The file an empty HDFS store's first commit writes, in the staging checkpoint. */
  val StagedHdfsFile = "1.delta"

  def stage(
      session: ClassicSession,
      checkpoint: String,
      lastCommitted: Long,
      operatorName: String,
      operatorId: Long,
      store: StateStoreMetadata,
      joinStateFormat: Option[Int],
      numPartitions: Int,
      stagingStateRoot: String,
      storeConf: StateStoreConf,
      hadoopConf: Broadcast[SerializableConfiguration],
      target: Target,
      newVersion: Long
  ): Unit = {
    val state = session.read.format("statestore")
      .option("path", checkpoint)
      .option("batchId", lastCommitted)
      .option("operatorId", operatorId)
      .option("storeName", store.storeName)
      .load()
      .select("key", "value")
    val keySchema = state.schema("key").dataType.asInstanceOf[StructType]
    val valueSchema = state.schema("value").dataType.asInstanceOf[StructType]
    val storeName = store.storeName
    def extractor = StatePartitionKeyExtractorFactory.create(
      operatorName,
      keySchema,
      storeName,
      StateStore.DEFAULT_COL_FAMILY_NAME,
      joinStateFormat,
      None
    )
    val keyed = state.queryExecution.toRdd.mapPartitions { rows =>
      val partitionKey = extractor
      val keyRow = UnsafeProjection.create(keySchema)
      val valueRow = UnsafeProjection.create(valueSchema)
      rows.map { r =>
        val k = keyRow(r.getStruct(0, keySchema.length))
        val v = valueRow(r.getStruct(1, valueSchema.length))
        InternalRow(partitionKey.partitionKey(k).copy(), k.getBytes, v.getBytes)
      }
    }
    val schema = StructType(Seq(
      StructField("partition_key", extractor.partitionKeySchema),
      StructField("k", BinaryType),
      StructField("v", BinaryType)
    ))
    val spec =
      if (store.numColsPrefixKey > 0) PrefixKeyScanStateEncoderSpec(keySchema, store.numColsPrefixKey)
      else NoPrefixKeyStateEncoderSpec(keySchema)
    session.internalCreateDataFrame(keyed, schema, isStreaming = false)
      .repartition(numPartitions, functions.col("partition_key"))
      .queryExecution.toRdd
      .foreachPartition { rows =>
        val id = StateStoreId(stagingStateRoot, operatorId, TaskContext.getPartitionId(), storeName)
        val entries = rows.map(r => (r.getBinary(1), r.getBinary(2)))
        target match {
          case Hdfs => writeHdfs(id, entries, keySchema, valueSchema, spec, storeConf, hadoopConf.value.value)
          case KState => writeKState(id, entries, newVersion, hadoopConf.value.value)
        }
      }
  }

  private def writeHdfs(
      id: StateStoreId,
      entries: Iterator[(Array[Byte], Array[Byte])],
      keySchema: StructType,
      valueSchema: StructType,
      spec: org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec,
      storeConf: StateStoreConf,
      conf: org.apache.hadoop.conf.Configuration
  ): Unit = {
    val provider = StateStoreProvider.createAndInit(
      StateStoreProviderId(id, UUID.randomUUID()),
      keySchema,
      valueSchema,
      spec,
      useColumnFamilies = false,
      storeConf,
      conf,
      useMultipleValuesPerKey = false,
      stateSchemaProvider = None
    )
    try {
      val s = provider.getStore(0L)
      try {
        entries.foreach { case (kb, vb) =>
          val k = new UnsafeRow(keySchema.length)
          k.pointTo(kb, kb.length)
          val v = new UnsafeRow(valueSchema.length)
          v.pointTo(vb, vb.length)
          s.put(k, v)
        }
        s.commit()
      } finally if (!s.hasCommitted) s.abort()
    } finally provider.close()
  }

  /** A kstate snapshot of `version` with the entries, in key order, in `id`'s store directory. */
  private def writeKState(
      id: StateStoreId,
      entries: Iterator[(Array[Byte], Array[Byte])],
      version: Long,
      conf: org.apache.hadoop.conf.Configuration
  ): Unit = {
    val sorted = entries.toArray.sortWith((a, b) => Bytes.Order.compare(a._1, b._1) < 0)
    val dir = new Path(id.storeCheckpointLocation().toString)
    val files = StateFiles(dir, conf)
    val out = files.create(new Path(dir, CheckpointFiles.fileName(StateFile.Snapshot, version, None)))
    try {
      val w = new StateFile.Writer(out.stream, StateFile.Snapshot, version, StateFileIdentity.of(id), None)
      w.family(0, StateStore.DEFAULT_COL_FAMILY_NAME)
      val prefix = FamilyCodec.prefixOf(0)
      sorted.foreach { case (k, v) => w.put(Bytes.concat(prefix, k), v) }
      w.finish(sorted.length.toLong)
      out.commit()
    } catch {
      case NonFatal(e) =>
        try out.cancel()
        catch { case NonFatal(c) => e.addSuppressed(c) }
        throw e
    }
  }

  /** Where a staged HDFS file goes: the same directory under the real `state`, as version `version`'s snapshot. */
  def hdfsTarget(realDir: Path, version: Long): Path = new Path(realDir, s"$version.snapshot")
}
