package org.apache.spark.sql.kstate.reader

import org.apache.spark.sql.kstate.errors.KStateErrors

import org.apache.spark.{Partition, SparkContext, TaskContext}
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.DateTimeUtils
import org.apache.spark.sql.kstate.shim.SparkShim
import org.apache.spark.sql.types.TimestampNTZType
import org.apache.spark.unsafe.types.UTF8String
import org.apache.spark.util.SerializableConfiguration

/**
 * The implementation behind [[io.kstate.KStateTableReader]]: resolves the table on the driver
 * ([[TableReadTarget.resolve]], where every user error surfaces) and returns a DataFrame over a
 * [[TableReaderRDD]], one task per state partition.
 */
object TableReader {
  def read(spark: SparkSession, checkpointLocation: String, name: String, asOf: Option[Long]): DataFrame = {
    val session = SparkShim.classic(spark)
    val target = TableReadTarget.resolve(session, checkpointLocation, name)
    val hadoopConf = session.sparkContext.broadcast(
      new SerializableConfiguration(session.sessionState.newHadoopConf())
    )
    SparkShim.dataFrameOf(
      session,
      new TableReaderRDD(session.sparkContext, target, asOf, hadoopConf),
      target.schema
    )
  }

  /**
   * As [[read]], as of a timestamp string (`2026-11-24 10:00:00`, `2026-11-24T10:00:00.250Z`,
   * any form Spark's `CAST(... AS TIMESTAMP)` takes): for a TIMESTAMP_NTZ table its wall clock,
   * for other tables in the string's zone, else the session time zone.
   */
  def readAt(spark: SparkSession, checkpointLocation: String, name: String, asOf: String): DataFrame = {
    val session = SparkShim.classic(spark)
    val target = TableReadTarget.resolve(session, checkpointLocation, name)
    val s = UTF8String.fromString(if (asOf == null) "" else asOf.trim)
    val micros =
      if (target.timestampType == TimestampNTZType) DateTimeUtils.stringToTimestampWithoutTimeZone(s)
      else DateTimeUtils.stringToTimestamp(s, DateTimeUtils.getZoneId(session.sessionState.conf.sessionLocalTimeZone))
    val ms = micros.map(m => Math.floorDiv(m, 1000L)).getOrElse(throw KStateErrors.invalidStateRead(
      s"as_of '$asOf' is not a timestamp; use e.g. '2026-11-24 10:00:00' or '2026-11-24T10:00:00Z'"
    ))
    read(spark, checkpointLocation, name, Some(ms))
  }
}

/** One RDD partition per state partition of the table; each task reads its partition's versions. */
final class TableReaderRDD(
    sc: SparkContext,
    target: TableReadTarget,
    asOf: Option[Long],
    hadoopConf: Broadcast[SerializableConfiguration]
) extends RDD[InternalRow](sc, Nil) {

  override protected def getPartitions: Array[Partition] =
    Array.tabulate[Partition](target.state.numPartitions)(StateReaderRDD.StatePartition)

  override def compute(split: Partition, context: TaskContext): Iterator[InternalRow] = {
    val rows = TablePartitionReader.open(target, split.index, asOf, hadoopConf.value.value)
    context.addTaskCompletionListener[Unit](_ => rows.close())
    rows
  }
}
