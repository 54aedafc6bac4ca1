package org.apache.spark.sql.kstate.reader

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.kstate.shim.SparkShim
import org.apache.spark.sql.types.{IntegerType, StructField, StructType}
import org.apache.spark.util.SerializableConfiguration

/**
 * The implementation behind [[io.kstate.KStateStateReader]]: resolves the request on the driver
 * ([[StateReadTarget.resolve]], where every user error surfaces) and returns a DataFrame over a
 * [[StateReaderRDD]].
 */
object StateReader {
  def read(
      spark: SparkSession,
      checkpointLocation: String,
      operator: OperatorSelector,
      batchId: Option[Long],
      storeName: String
  ): DataFrame = {
    val session = SparkShim.classic(spark)
    val target = StateReadTarget.resolve(session, checkpointLocation, operator, batchId, storeName)
    val hadoopConf = session.sparkContext.broadcast(
      new SerializableConfiguration(session.sessionState.newHadoopConf())
    )
    SparkShim.dataFrameOf(
      session,
      new StateReaderRDD(session.sparkContext, target, hadoopConf),
      schema(target)
    )
  }

  /** The schema of Spark's `statestore` source: key and value structs, then the partition. */
  def schema(target: StateReadTarget): StructType = StructType(Seq(
    StructField("key", target.keySchema),
    StructField("value", target.valueSchema),
    StructField("partition_id", IntegerType)
  ))
}
