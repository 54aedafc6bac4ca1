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
 * Moves one store of one of Spark's own operators kept by Spark's HDFS provider to n partitions,
 * for [[SparkOperatorsRewrite]] (Spark's own rewrite refuses that provider: it cannot open an
 * HDFS store empty at a version).
 *
 * The store's entries as of the last committed micro-batch are read with Spark's state data
 * source, sent to the partition Spark's own shuffle sends their partition key to (Spark's
 * `StatePartitionKeyExtractorFactory`, then `repartition(n, partition_key)`, as Spark's
 * repartition does), and each new partition's entries are put into an empty HDFS store of the
 * staging checkpoint and committed: its version 1, one delta file of puts only, which
 * [[SparkOperatorsRewrite.install]] moves into place as the snapshot of version R + 1. A delta of
 * puts only and a snapshot are the same file to the HDFS provider (key length, key, value
 * length, value, ..., -1; compressed with the store's codec); Spark's state data source reading
 * the moved state back checks it (`test_repartition_mixed.py`).
 */
private[repartition] object HdfsStoreRewrite {

  /** The file an empty store's first commit writes, in the staging checkpoint. */
  val StagedFile = "1.delta"

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
      hadoopConf: Broadcast[SerializableConfiguration]
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
        val provider = StateStoreProvider.createAndInit(
          StateStoreProviderId(id, UUID.randomUUID()),
          keySchema,
          valueSchema,
          spec,
          useColumnFamilies = false,
          storeConf,
          hadoopConf.value.value,
          useMultipleValuesPerKey = false,
          stateSchemaProvider = None
        )
        try {
          val s = provider.getStore(0L)
          try {
            rows.foreach { r =>
              val (kb, vb) = (r.getBinary(1), r.getBinary(2))
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
  }

  /** Where a staged file goes: the same directory under the real `state`, as version `version`'s snapshot. */
  def target(realDir: Path, version: Long): Path = new Path(realDir, s"$version.snapshot")
}
