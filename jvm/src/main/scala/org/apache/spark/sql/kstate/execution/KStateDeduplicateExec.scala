package org.apache.spark.sql.kstate.execution

import java.util.concurrent.TimeUnit.NANOSECONDS

import scala.collection.mutable

import io.kstate.dedup.{DedupCounters, DedupMode, DedupProcessor, InMemoryDedupState}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.plans.physical.{ClusteredDistribution, Distribution, Partitioning}
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.execution.streaming.operators.stateful._
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.kstate.OperatorIdentity
import org.apache.spark.sql.kstate.shim.RunningQuery
import org.apache.spark.sql.kstate.state.{KStateStoreRDD, StateStoreDedupState}
import org.apache.spark.sql.types.{DataType, StructField, StructType}
import org.apache.spark.util.SerializableConfiguration

/**
 * Physical KIP-655 deduplication.
 *
 * Streaming (`stateInfo` set at planning from the running query): per state partition, opens
 * the kstate-chosen state store, restores Kafka task order ([[TaskOrder]]), runs
 * [[DedupProcessor]] record by record, purges expired entries through the time index, commits,
 * and returns the forwarded rows in processing order. Mixes in [[StateStoreWriter]] so Spark's
 * metadata files, watermark propagation, progress and commit handling treat it like a built-in
 * stateful operator.
 *
 * Batch (`stateInfo` None, non-streaming input): the whole input is one batch; state lives on
 * the heap of each task and is discarded.
 *
 * The child is an [[InputPositionExec]] whose last two columns give each row's input position.
 */
case class KStateDeduplicateExec(
    mode: DedupMode,
    intervalMs: Long,
    operatorName: String,
    fingerprint: Map[String, String],
    identity: Seq[Expression],
    timestamp: Expression,
    partitionBy: Seq[Expression],
    output: Seq[Attribute],
    providerClass: String,
    followWatermark: Boolean,
    stateInfo: Option[StatefulOperatorStateInfo],
    child: SparkPlan) extends UnaryExecNode with StateStoreWriter {

  override def shortName: String = "kstate_" + mode.name

  override def outputPartitioning: Partitioning = child.outputPartitioning

  override def requiredChildDistribution: Seq[Distribution] = stateInfo match {
    case Some(info) =>
      StatefulOperatorPartitioning.getCompatibleDistribution(partitionBy, info, conf) :: Nil
    case None => ClusteredDistribution(partitionBy) :: Nil
  }

  private def identitySchema: StructType = StructType(identity.zipWithIndex.map {
    case (e, i) => StructField(s"identity_$i", e.dataType, nullable = true)
  })

  override def validateAndMaybeEvolveStateSchema(
      hadoopConf: Configuration, batchId: Long, stateSchemaVersion: Int)
    : List[StateSchemaValidationResult] = {
    val info = getStateInfo
    OperatorIdentity.checkOrRecordConfig(
      new Path(info.checkpointLocation, info.operatorId.toString), operatorName, fingerprint,
      hadoopConf)
    val schema = List(StateStoreColFamilySchema(StateStore.DEFAULT_COL_FAMILY_NAME, 0,
      identitySchema, 0, StateStoreDedupState.ValueSchema))
    List(StateSchemaCompatibilityChecker.validateAndMaybeEvolveStateSchema(
      info, hadoopConf, schema, session.sessionState, stateSchemaVersion))
  }

  override protected def customStatefulOperatorMetrics: Seq[StatefulOperatorCustomMetric] =
    KStateDeduplicateExec.CustomMetrics.map { case (n, d) => StatefulOperatorCustomSumMetric(n, d) }

  /** Spark's trait builds store metrics from the session's provider; add kstate's provider's. */
  override lazy val metrics: Map[String, SQLMetric] = {
    import org.apache.spark.sql.execution.metric.SQLMetrics._
    val providers = Seq(providerClass, conf.stateStoreProviderClass).distinct
    val storeCustom = providers.flatMap(p => StateStoreProvider.create(p).supportedCustomMetrics)
      .map(m => m.name -> m.createSQLMetric(sparkContext)).toMap
    storeCustom ++ KStateDeduplicateExec.CustomMetrics.map { case (n, d) =>
      n -> createMetric(sparkContext, d) }.toMap ++ Map(
      "numOutputRows" -> createMetric(sparkContext, "number of output rows"),
      "numRowsDroppedByWatermark" -> createMetric(sparkContext, "number of rows dropped by watermark"),
      "numTotalStateRows" -> createMetric(sparkContext, "number of total state rows"),
      "numUpdatedStateRows" -> createMetric(sparkContext, "number of updated state rows"),
      "allUpdatesTimeMs" -> createTimingMetric(sparkContext, "time to update"),
      "numRemovedStateRows" -> createMetric(sparkContext, "number of removed state rows"),
      "allRemovalsTimeMs" -> createTimingMetric(sparkContext, "time to remove"),
      "commitTimeMs" -> createTimingMetric(sparkContext, "time to commit changes"),
      "stateMemory" -> createSizeMetric(sparkContext, "memory used by state"),
      "numStateStoreInstances" -> createMetric(sparkContext, "number of state store instances"))
  }

  override protected def doExecute(): RDD[InternalRow] = {
    metrics // initialise on the driver
    stateInfo match {
      case Some(info) => executeStreaming(info)
      case None => child.execute().mapPartitionsInternal { rows =>
        val state = new InMemoryDedupState[UnsafeRow](_.copy())
        val counters = new DedupCounters
        val out = process(rows, new DedupProcessor(intervalMs, state, counters), None)
        recordCounters(counters, state.numEntries)
        out
      }
    }
  }

  private def executeStreaming(info: StatefulOperatorStateInfo): RDD[InternalRow] = {
    val watermark =
      if (followWatermark) RunningQuery.current(session).map(_.inputWatermarkForEviction(info.operatorId))
      else None
    val storeSqlConf = conf.clone()
    storeSqlConf.setConfString(
      org.apache.spark.sql.internal.SQLConf.STATE_STORE_PROVIDER_CLASS.key, providerClass)
    val storeConf = new StateStoreConf(storeSqlConf, Map.empty)
    val hadoopConf = sparkContext.broadcast(
      new SerializableConfiguration(session.sessionState.newHadoopConf()))
    val schema = identitySchema
    new KStateStoreRDD[InternalRow](
      child.execute(), info, schema, StateStoreDedupState.ValueSchema,
      NoPrefixKeyStateEncoderSpec(schema), useColumnFamilies = true, storeConf, hadoopConf,
      Some(session.streams.stateStoreCoordinator), { (store, rows) =>
        val state = new StateStoreDedupState(store, schema)
        val counters = new DedupCounters
        val out = process(rows, new DedupProcessor(intervalMs, state, counters), watermark)
        longMetric("commitTimeMs") += timeTakenMs { store.commit() }
        longMetric("stateMemory") += store.metrics.memoryUsedBytes
        store.metrics.customMetrics.foreach { case (m, v) =>
          metrics.get(m.name).foreach(_ += v)
        }
        setOperatorMetrics()
        recordCounters(counters, state.numEntries)
        out
      })
  }

  /** Runs every row of the partition through `processor`; returns forwarded rows in order. */
  private def process(
      rows: Iterator[InternalRow],
      processor: DedupProcessor[UnsafeRow],
      watermark: Option[Long]): Iterator[InternalRow] = {
    val in = child.output
    val n = in.length
    val identityProj = UnsafeProjection.create(identity, in)
    val tsProj = UnsafeProjection.create(Seq(timestamp), in)
    val toMs = KStateDeduplicateExec.millisOf(timestamp.dataType)
    val outProj = UnsafeProjection.create(output, in)
    val nIdentity = identity.length
    def tsOf(r: InternalRow): Long = {
      val t = tsProj(r)
      if (t.isNullAt(0)) Long.MinValue else toMs(t)
    }
    val start = System.nanoTime()
    watermark.foreach(processor.advanceStreamTime)
    val out = mutable.ArrayBuffer.empty[InternalRow]
    TaskOrder(rows, n - 2, n - 1, tsOf, mergeByTimestamp = stateInfo.isDefined).foreach { row =>
      val t = tsProj(row)
      val tsNull = t.isNullAt(0)
      val ts = if (tsNull) 0L else toMs(t)
      val id = identityProj(row)
      var idNull = false
      var i = 0
      while (!idNull && i < nIdentity) { idNull = id.isNullAt(i); i += 1 }
      if (processor.process(id, idNull, ts, tsNull)) out += outProj(row).copy()
    }
    longMetric("allUpdatesTimeMs") += NANOSECONDS.toMillis(System.nanoTime() - start)
    longMetric("allRemovalsTimeMs") += timeTakenMs { processor.finish() }
    longMetric("numOutputRows") += out.length
    out.iterator
  }

  private def recordCounters(c: DedupCounters, entries: Long): Unit = {
    longMetric("duplicatesDropped") += c.duplicatesDropped
    longMetric("lateRecordsForwarded") += c.lateForwarded
    longMetric("nullKeysForwarded") += c.nullKeysForwarded
    longMetric("nullTimestampsForwarded") += c.nullTimestampsForwarded
    longMetric("storedEntries") += entries
    longMetric("numTotalStateRows") += entries
    longMetric("numUpdatedStateRows") += c.entriesStored
    longMetric("numRemovedStateRows") += c.entriesPurged
  }

  override protected def withNewChildInternal(newChild: SparkPlan): KStateDeduplicateExec =
    copy(child = newChild)
}

object KStateDeduplicateExec {
  /** Custom metrics: progress `stateOperators[].customMetrics` and the Spark UI. */
  val CustomMetrics: Seq[(String, String)] = Seq(
    "duplicatesDropped" -> "duplicates dropped",
    "lateRecordsForwarded" -> "late records forwarded (no duplicate stored)",
    "nullKeysForwarded" -> "records with a null key/id forwarded",
    "nullTimestampsForwarded" -> "records with a null timestamp forwarded",
    "storedEntries" -> "stored deduplication entries")

  /** Event time in ms from a one-column row of the given timestamp type. */
  def millisOf(dt: DataType): UnsafeRow => Long = {
    import org.apache.spark.sql.types._
    dt match {
      case TimestampType | TimestampNTZType => r => Math.floorDiv(r.getLong(0), 1000L)
      case LongType => _.getLong(0)
      case IntegerType => _.getInt(0).toLong
      case ShortType => _.getShort(0).toLong
      case ByteType => _.getByte(0).toLong
      case other => throw io.kstate.KStateErrors.wrongTimestampType("timestamp", other.sql)
    }
  }
}
