package org.apache.spark.sql.kstate.repartition

import java.util.UUID

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
import org.apache.spark.sql.types.{BinaryType, StructField, StructType}
import org.apache.spark.util.SerializableConfiguration

/**
 * Moves one store of one of Spark's own operators to n partitions, for [[SparkOperatorsRewrite]],
 * when the store is kept by a provider Spark's own rewrite refuses: Spark's HDFS provider (it
 * cannot open an empty store at a version), or kstate's provider as the query-wide one (Spark's
 * state data source reads all of a store's column families at once from RocksDB's only).
 *
 * The store's entries as of the last committed micro-batch are read with Spark's state data
 * source, sent to the partition Spark's own shuffle sends their partition key to (Spark's
 * `StatePartitionKeyExtractorFactory`, then `repartition(n, partition_key)`, as Spark's
 * repartition does), and each new partition's entries are put into an empty store of the
 * operator's provider in the staging checkpoint, with the store's key encoding, and committed:
 *  - HDFS: a new store's version 1, one delta file of puts only, which
 *    [[SparkOperatorsRewrite.install]] moves into place as the snapshot of version R + 1 (a delta
 *    of puts only and a snapshot are the same file to the HDFS provider: key length, key, value
 *    length, value, ..., -1, compressed with the store's codec);
 *  - kstate: `getStore(R, loadEmpty = true)`, whose commit writes the snapshot of R + 1 alone (in
 *    checkpoint format v2 under a fresh id, returned for the commit log), moved into place as is.
 * Spark's state data source reading the moved state back checks it (`test_repartition_mixed.py`).
 */
private[repartition] object SparkStoreRewrite {

  /** The file an empty HDFS store's first commit writes, in the staging checkpoint. */
  val StagedHdfsFile = "1.delta"

  /** How a new partition's store is opened empty. */
  sealed trait Target

  /** Spark's HDFS provider: a new store, version 0 (commits version 1). */
  case object NewHdfsStore extends Target

  /** kstate's provider: empty at the last committed version R (commits R + 1). */
  final case class EmptyAt(version: Long) extends Target

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
      target: Target
  ): Array[Option[String]] = {
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
    val written = session.internalCreateDataFrame(keyed, schema, isStreaming = false)
      .repartition(numPartitions, functions.col("partition_key"))
      .queryExecution.toRdd
      .mapPartitions { rows =>
        val partition = TaskContext.getPartitionId()
        val id = StateStoreId(stagingStateRoot, operatorId, partition, storeName)
        val entries = rows.map(r => (r.getBinary(1), r.getBinary(2)))
        Iterator(partition -> write(
          id,
          entries,
          keySchema,
          valueSchema,
          spec,
          storeConf,
          hadoopConf.value.value,
          target
        ))
      }
      .collect()
      .toMap
    Array.tabulate(numPartitions)(p => written.getOrElse(p, None))
  }

  /** Puts `entries` into an empty store of the query's provider; the checkpoint id its commit got. */
  private def write(
      id: StateStoreId,
      entries: Iterator[(Array[Byte], Array[Byte])],
      keySchema: StructType,
      valueSchema: StructType,
      spec: org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec,
      storeConf: StateStoreConf,
      conf: org.apache.hadoop.conf.Configuration,
      target: Target
  ): Option[String] = {
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
      val s = target match {
        case NewHdfsStore => provider.getStore(0L)
        case EmptyAt(v) => provider.getStore(v, None, forceSnapshotOnCommit = false, loadEmpty = true)
      }
      try {
        entries.foreach { case (kb, vb) =>
          val k = new UnsafeRow(keySchema.length)
          k.pointTo(kb, kb.length)
          val v = new UnsafeRow(valueSchema.length)
          v.pointTo(vb, vb.length)
          s.put(k, v)
        }
        s.commit()
        s.getStateStoreCheckpointInfo().stateStoreCkptId
      } finally if (!s.hasCommitted) s.abort()
    } finally provider.close()
  }

  /** Where a staged HDFS file goes: the same directory under the real `state`, as version `version`'s snapshot. */
  def hdfsTarget(realDir: Path, version: Long): Path = new Path(realDir, s"$version.snapshot")
}
