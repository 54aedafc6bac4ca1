package org.apache.spark.sql.kstate.execution

import java.util.concurrent.TimeUnit.NANOSECONDS

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.plans.physical.{ClusteredDistribution, Distribution, Partitioning}
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.execution.streaming.operators.stateful._
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.internal.SQLConf
import io.kstate.ProcessingOrder
import org.apache.spark.sql.kstate.config.KStateConf
import org.apache.spark.sql.kstate.errors.KStateErrors

import org.apache.spark.sql.kstate.planning.OperatorIdentity
import org.apache.spark.sql.kstate.evolution.{StateEvolution, StateMigration}
import org.apache.spark.sql.kstate.processor.{Counters, Metric, MetricKind, MetricSet}
import org.apache.spark.sql.kstate.shim.{OrderedLog, RunningQuery, StateOperatorProgressSnapshotMetrics}
import org.apache.spark.sql.streaming.StateOperatorProgress
import org.apache.spark.sql.execution.streaming.runtime.StreamExecution
import org.apache.spark.sql.kstate.provider.KStateStoreProvider
import org.apache.spark.sql.kstate.execution.KStateStoreRDD
import org.apache.spark.sql.kstate.replica.ReplicaCoordinator
import org.apache.spark.sql.types.{DataType, StructType}
import org.apache.spark.util.SerializableConfiguration

/**
 * The work of one kstate operator on one state partition for one micro-batch (or for the whole
 * input of a batch query). Created per task; not thread-safe.
 *
 * Life cycle: `advanceStreamTime` at most once (watermark option), then `process` for every
 * row in task order, then `finish` once; `metrics` after `finish`. Rows `finish` produces
 * (results of windows that closed, updates collected over the batch) are copies, returned
 * after the store committed.
 */
trait KStateTask {
  def advanceStreamTime(t: Long): Unit

  /**
   * Processes one input row (child output incl. position columns) with its event time in ms
   * (`Long.MinValue` = null). Output goes to `emit`; an emitted row may be reused after the
   * next `process` call, so an operator emitting several rows from one call copies them (or
   * emits rows it does not reuse).
   */
  def process(row: InternalRow, ts: Long, emit: InternalRow => Unit): Unit

  /** Ends the batch: purges expired state and persists stream time. */
  def finish(): Unit

  /** Output rows produced by `finish` (copies), returned after the input's rows. */
  def finishOutput: Iterator[InternalRow] = Iterator.empty

  /** The operator's reported metrics (its exec's `metricSet`) plus state row counts. */
  def metrics: KStateTask.Metrics

  /**
   * After `finish`: the smallest event time a row this task's operator emits in later
   * micro-batches can have (`Long.MinValue`: any). Only for operators with
   * [[KStateStatefulExec.tracksOutputTime]].
   */
  def outputTimeFloor: Long = Long.MinValue
}

object KStateTask {
  final case class Metrics(
      custom: Map[String, Long],
      totalStateRows: Long,
      updatedStateRows: Long,
      removedStateRows: Long
  )

  object Metrics {

    /** The reported metrics of `counters`, and the state row counts. */
    def of(counters: Counters, totalStateRows: Long, updatedStateRows: Long, removedStateRows: Long): Metrics =
      Metrics(counters.reported, totalStateRows, updatedStateRows, removedStateRows)
  }
}

/**
 * Shared machinery of kstate's stateful physical operators.
 *
 * Streaming (`stateInfo` set at planning from the running query): per state partition, opens
 * the kstate-chosen state store (independent of the session's provider), puts the micro-batch's
 * rows in the operator's processing order ([[InputOrder]]), runs the operator's [[KStateTask]],
 * commits, and returns the output in processing order. Mixes in [[StateStoreWriter]] so Spark's operator metadata, schema files,
 * watermark propagation, progress reporting and restart checks treat it like a built-in
 * stateful operator.
 *
 * Batch (`stateInfo` None): the whole input is one batch (in DataFrame order unless the
 * operator's processing order says otherwise); state lives on the task's heap and is discarded.
 *
 * The child is an [[InputPositionExec]]; its last two columns give each row's input position.
 */
trait KStateStatefulExec extends UnaryExecNode with StateStoreWriter {
  def operatorName: String
  def fingerprint: Map[String, String]
  def partitionBy: Seq[Expression]
  def timestamp: Expression
  def providerClass: String
  def followWatermark: Boolean

  /** The processing order asked for (the operator's own, else the session's). */
  def processingOrder: ProcessingOrder

  /**
   * What the operator needs from its state store provider. Checked once per micro-batch when
   * it is planned, against the class of `spark.kstate.stateStore.providerClass`: a provider
   * that lacks one fails there with `KSTATE_UNSUPPORTED_STATE_PROVIDER`, before any task runs.
   * Static DataFrames keep state on the heap and need none.
   */
  def storeCapabilities: Set[StoreCapability]

  /** Schema of the state store's default column family (recorded for Spark's schema checks). */
  protected def stateKeySchema: StructType
  protected def stateValueSchema: StructType

  /**
   * The operator's custom metrics, declared once: the processor counts with their handles, and
   * Spark's SQL metrics and progress are built from the same declarations.
   */
  protected def metricSet: MetricSet

  /** A task over `store` (streaming) or over heap state (`None`, batch). */
  protected def newTask(store: Option[StateStore]): KStateTask

  override def outputPartitioning: Partitioning = child.outputPartitioning

  override def requiredChildDistribution: Seq[Distribution] = stateInfo match {
    case Some(info) =>
      StatefulOperatorPartitioning.getCompatibleDistribution(partitionBy, info, conf) :: Nil
    case None => ClusteredDistribution(partitionBy) :: Nil
  }

  override def validateAndMaybeEvolveStateSchema(
      hadoopConf: Configuration,
      batchId: Long,
      stateSchemaVersion: Int
  )
      : List[StateSchemaValidationResult] = {
    val info = getStateInfo
    // The provider is part of the recorded configuration: state written by one provider cannot
    // be read by another, so changing it on an existing checkpoint is a named error.
    val evolution = OperatorIdentity.checkOrRecordConfig(
      new Path(info.checkpointLocation, info.operatorId.toString),
      operatorName,
      fingerprint + (OperatorIdentity.ProviderKey -> providerClass),
      hadoopConf,
      batchId
    )
    KStateStatefulExec.Evolutions.put(KStateStatefulExec.evolutionKey(info), evolution)
    val schema = List(StateStoreColFamilySchema(
      StateStore.DEFAULT_COL_FAMILY_NAME,
      0,
      stateKeySchema,
      0,
      stateValueSchema
    ))
    // an accepted schema change: the default family's recorded value schema is the new one (the
    // task converts the rows), so Spark's check compares with it, not with the old one
    if (evolution.isDefined) KStateStatefulExec.rewriteSchemaFile(info, hadoopConf, schema, stateSchemaVersion)
    List(StateSchemaCompatibilityChecker.validateAndMaybeEvolveStateSchema(
      info,
      hadoopConf,
      schema,
      session.sessionState,
      stateSchemaVersion
    ))
  }

  /**
   * The schema change this run's micro-batches convert rows for, if any (driver side): what
   * [[validateAndMaybeEvolveStateSchema]] decided for this run, else read from the recorded
   * configuration (a tasks converts only when its store's version precedes the change's).
   */
  private def pendingEvolution(info: StatefulOperatorStateInfo): Option[StateEvolution] =
    KStateStatefulExec.Evolutions.computeIfAbsent(
      KStateStatefulExec.evolutionKey(info),
      _ =>
        OperatorIdentity.readConfig(
          new Path(info.checkpointLocation, info.operatorId.toString),
          session.sessionState.newHadoopConf()
        ).flatMap(StateEvolution.pendingAt(_, info.storeVersion))
    )

  /**
   * Whether the operator's output has an event-time column whose future values it can bound
   * (window ends), so that it reports an output watermark to Spark operators downstream; see
   * [[produceOutputWatermark]]. Operators that do not track it report none that lets rows pass
   * as on time when they may not be.
   */
  protected def tracksOutputTime: Boolean = false

  /**
   * Whether the operator holds rows back and emits them later with their own event times (a
   * suppression buffer) without tracking how old they can be: it then reports no progress of its
   * output to operators downstream. Operators that emit each row as it arrives (deduplication)
   * pass the input watermark on, as Spark's own do.
   */
  protected def delaysOutput: Boolean = false

  /** Minimum over the state partitions of their tasks' `outputTimeFloor` (driver side). */
  private lazy val outputTimeFloors: MinAccumulator = {
    val a = new MinAccumulator
    sparkContext.register(a, s"kstate output time floor ($operatorName)")
    a
  }

  /**
   * The watermark Spark propagates to stateful operators downstream: never later than an event
   * time this operator may still emit, so nothing it emits is dropped downstream as late. For an
   * operator that tracks its output time: the smallest window end a later row can have, minus 1
   * (Spark treats an event time at the watermark as late), as its partitions reported at the end
   * of the last micro-batch, capped at the input watermark; before any micro-batch of this run
   * ended, and for operators that delay rows untracked, `Long.MinValue` (Spark then uses 0:
   * nothing is late, downstream windows wait); other operators pass the input watermark on. With
   * Kafka's per-partition stream time an idle or empty partition holds this back;
   * `spark.kstate.streamTime.followWatermark` raises every partition to the input watermark, so
   * it follows the input watermark minus the grace.
   */
  override def produceOutputWatermark(inputWatermarkMs: Long): Option[Long] =
    if (tracksOutputTime) {
      Some(stateInfo.flatMap(i => OutputWatermarks.floor(i.queryRunId, i.operatorId)) match {
        case Some(f) if f != Long.MinValue => math.min(inputWatermarkMs, f - 1)
        case _ => Long.MinValue
      })
    } else if (delaysOutput) Some(Long.MinValue)
    else super.produceOutputWatermark(inputWatermarkMs)

  /**
   * The operator's custom metrics and those every kstate operator has. A [[MetricKind.Max]]
   * metric holds a largest value: each task reports its own and the query's value (progress) is
   * the largest, not their sum (in the Spark UI it shows as a timing, so the max over tasks is
   * listed). Averages ([[MetricSet.averages]]) are reported in progress only, total / count over
   * the whole micro-batch.
   */
  private def allCustomMetrics: Seq[Metric] = metricSet.reported ++ KStateStatefulExec.CommonMetrics.reported

  override protected def customStatefulOperatorMetrics: Seq[StatefulOperatorCustomMetric] =
    allCustomMetrics.map(m => StatefulOperatorCustomSumMetric(m.name, m.description))

  /** Spark's trait builds store metrics from the session's provider; add kstate's provider's. */
  override lazy val metrics: Map[String, SQLMetric] = {
    import SQLMetrics._
    val providers = Seq(providerClass, conf.stateStoreProviderClass).distinct
    val storeCustom = providers.flatMap(p => StateStoreProvider.create(p).supportedCustomMetrics)
      .map(m => m.name -> m.createSQLMetric(sparkContext)).toMap
    storeCustom ++ allCustomMetrics.map { m =>
      m.name -> (if (m.kind == MetricKind.Max) MaxMetric(sparkContext, m.description)
                 else createMetric(sparkContext, m.description))
    }.toMap ++ Map(
      "numOutputRows" -> createMetric(sparkContext, "number of output rows"),
      "numRowsDroppedByWatermark" -> createMetric(sparkContext, "number of rows dropped by watermark"),
      "numTotalStateRows" -> createMetric(sparkContext, "number of total state rows"),
      "numUpdatedStateRows" -> createMetric(sparkContext, "number of updated state rows"),
      "allUpdatesTimeMs" -> createTimingMetric(sparkContext, "time to update"),
      "numRemovedStateRows" -> createMetric(sparkContext, "number of removed state rows"),
      "allRemovalsTimeMs" -> createTimingMetric(sparkContext, "time to remove"),
      "commitTimeMs" -> createTimingMetric(sparkContext, "time to commit changes"),
      "stateMemory" -> createSizeMetric(sparkContext, "memory used by state"),
      "numStateStoreInstances" -> createMetric(sparkContext, "number of state store instances")
    )
  }

  /**
   * Spark's progress reports the session provider's custom metrics; a kstate operator reports
   * its own metrics and those of the provider kstate chose for it.
   */
  override def getProgress(): StateOperatorProgress = {
    val custom = new java.util.HashMap[String, java.lang.Long]()
    val names = allCustomMetrics.map(_.name) ++
      StateStoreProvider.create(providerClass).supportedCustomMetrics.map(_.name)
    names.foreach(n => custom.put(n, java.lang.Long.valueOf(longMetric(n).value)))
    metricSet.averages.foreach { a =>
      val c = longMetric(a.count.name).value
      custom.put(a.name, java.lang.Long.valueOf(if (c == 0) 0L else longMetric(a.total.name).value / c))
    }
    if (tracksOutputTime && !outputTimeFloors.isZero) {
      stateInfo.foreach(i => OutputWatermarks.record(i.queryRunId, i.operatorId, outputTimeFloors.value))
    }
    StateOperatorProgressSnapshotMetrics.withCustomMetrics(super.getProgress(), custom)
  }

  override protected def doExecute(): RDD[InternalRow] = {
    metrics // initialise on the driver
    if (tracksOutputTime) outputTimeFloors.reset()
    stateInfo match {
      case Some(info) => executeStreaming(info)
      case None =>
        val order = resolvedOrder(streaming = false)
        val spillBytes = KStateConf.OrderSpillThreshold.get(conf)
        child.execute().mapPartitionsInternal { rows =>
          val task = newTask(None)
          run(task, rows, None, order, spillBytes, () => recordTaskMetrics(task.metrics))
        }
    }
  }

  /**
   * Whether the operator emits on stream time alone (windows closing, timers), so that a
   * watermark that moved on should run a micro-batch even without new data.
   */
  protected def emitsOnTime: Boolean = false

  /** The watermark this micro-batch raised stream time to (driver side, streaming only). */
  @transient private var watermarkUsed: Option[Long] = None

  /**
   * With `spark.kstate.streamTime.followWatermark`, an operator that emits on time asks Spark for
   * a no-data micro-batch when the watermark moved past the one its last batch used: idle
   * partitions then close their windows and fire their timers without waiting for new records.
   */
  override def shouldRunAnotherBatch(newInputWatermarkMs: Long): Boolean =
    followWatermark && emitsOnTime && watermarkUsed.exists(newInputWatermarkMs > _)

  /**
   * The order this plan processes rows in: `auto` becomes Kafka task order when the operator's
   * input is an ordered log ([[OrderedLog]]), event-time order for other streaming input, and
   * the DataFrame's own order for a static DataFrame.
   */
  private[kstate] def resolvedOrder(streaming: Boolean): InputOrder.Resolved = processingOrder match {
    case ProcessingOrder.Task => InputOrder.KafkaTask
    case ProcessingOrder.EventTime => InputOrder.EventTime
    case ProcessingOrder.Auto if !streaming => InputOrder.Listed
    case ProcessingOrder.Auto =>
      val input = child.collectFirst { case p: InputPositionExec => p.child }
      if (input.exists(OrderedLog(_))) InputOrder.KafkaTask else InputOrder.EventTime
  }

  /** Shows the policy and, for `auto`, what it resolved to (e.g. `order=auto(event_time)`). */
  override def simpleString(maxFields: Int): String = super.simpleString(maxFields) + " order=" +
    (if (processingOrder == ProcessingOrder.Auto) s"auto(${resolvedOrder(stateInfo.isDefined)})" else processingOrder)

  /**
   * What this micro-batch wants of the replica coordinator (`spark.kstate.standbyReplicas`,
   * `maxWarmupReplicas`, `acceptableRecoveryLag`), read at planning; standbys need kstate's
   * plugin, which keeps them.
   */
  private def replicasWanted(): ReplicaCoordinator.Wanted = {
    val n = KStateConf.StandbyReplicas.get(conf)
    if (n > 0 && ReplicaCoordinator.current.isEmpty)
      throw KStateErrors.standbyReplicasNeedPlugin(s"spark.kstate.standbyReplicas is $n")
    ReplicaCoordinator.Wanted(n, KStateConf.MaxWarmupReplicas.get(conf), KStateConf.AcceptableRecoveryLag.get(conf))
  }

  private def executeStreaming(info: StatefulOperatorStateInfo): RDD[InternalRow] = {
    // Spark's state checkpoint format v2: each task reports the checkpoint id its commit made
    // (Spark records them in the commit log and hands them back as `info`'s ids next batch)
    val reportIds = StatefulOperatorStateInfo.enableStateStoreCheckpointIds(conf)
    if (!reportIds && info.stateStoreCkptIds.isDefined) {
      // Spark 4.2 only (4.3 takes the format from the commit log): a format-v2 checkpoint
      // restarted with format 1 would write format-v1 files after the v2 ones
      throw KStateErrors.checkpointFormatChanged(
        s"kstate operator '$operatorName'",
        info.storeVersion,
        written = 2,
        asked = 1
      )
    }
    val order = resolvedOrder(streaming = true)
    val spillBytes = KStateConf.OrderSpillThreshold.get(conf)
    val watermark = if (followWatermark) {
      RunningQuery.current(session).map(_.inputWatermarkForEviction(info.operatorId))
    } else None
    watermarkUsed = watermark
    val storeSqlConf = conf.clone()
    storeSqlConf.setConfString(SQLConf.STATE_STORE_PROVIDER_CLASS.key, providerClass)
    KStateConf.StoreDefaults.foreach { case (k, v) =>
      if (!conf.contains(k)) storeSqlConf.setConfString(k, v)
    }
    val queryId = Option(sparkContext.getLocalProperty(StreamExecution.QUERY_ID_KEY))
    val standbys = queryId.map(id => KStateStoreRDD.Standbys(id, replicasWanted()))
    val storeConf = new StateStoreConf(
      storeSqlConf,
      queryId.map(KStateStoreProvider.QueryIdKey -> _).toMap
    )
    val hadoopConf = sparkContext.broadcast(
      new SerializableConfiguration(session.sessionState.newHadoopConf())
    )
    val (keySchema, valueSchema) = (stateKeySchema, stateValueSchema)
    val evolution = pendingEvolution(info)
    val windowsDescribe = fingerprint.getOrElse("windows", "")
    val rdd = new KStateStoreRDD[InternalRow](
      child.execute(),
      info,
      keySchema,
      valueSchema,
      NoPrefixKeyStateEncoderSpec(keySchema),
      useColumnFamilies = true,
      storeConf,
      hadoopConf,
      Some(session.streams.stateStoreCoordinator),
      standbys,
      { (store, rows) =>
        // the first micro-batch after a compatible schema change converts the stored rows first
        evolution.filter(store.version < _.fromVersion).foreach(StateMigration(_, operatorName, store, windowsDescribe))
        val task = newTask(Some(store))
        run(
          task,
          rows,
          watermark,
          order,
          spillBytes,
          () => {
            longMetric("commitTimeMs") += timeTakenMs { store.commit() }
            if (reportIds) {
              // exactly one entry per state partition and task: the store's one id (kstate keeps
              // one store per operator and partition), its new version and the id it was opened at
              val i = store.getStateStoreCheckpointInfo()
              checkpointInfoAccumulator.add(StatefulOpStateStoreCheckpointInfo(
                i.partitionId,
                i.batchVersion,
                i.stateStoreCkptId.map(Array(_)),
                i.baseStateStoreCkptId.map(Array(_))
              ))
            }
            val storeMetrics = store.metrics
            longMetric("stateMemory") += storeMetrics.memoryUsedBytes
            storeMetrics.customMetrics.foreach { case (m, v) => metrics.get(m.name).foreach(_ += v) }
            setOperatorMetrics()
            recordTaskMetrics(task.metrics)
            if (tracksOutputTime) outputTimeFloors.add(task.outputTimeFloor)
          }
        )
      }
    )
    for (sb <- standbys if sb.wanted.any; rc <- ReplicaCoordinator.current) {
      rdd.partitions // plans this micro-batch's standbys, moves and warm-ups
      val summary = rc.summary(sb.queryId, info.checkpointLocation, info.operatorId)
      import KStateStatefulExec.CommonMetrics._
      longMetric(Standbys.name).set(summary.standbys)
      longMetric(StandbyLagVersions.name).set(summary.maxLagVersions)
      longMetric(Warmups.name).set(summary.warmups)
      longMetric(OwnershipMoves.name).set(summary.ownershipMoves)
    }
    rdd
  }

  /**
   * Runs the partition's rows through `task` in processing order, lazily: output rows are produced as
   * the consumer pulls them (no copies), and when the input is exhausted the task finishes and
   * `onDone` runs (commit, metrics) before the iterator reports its end.
   */
  private def run(
      task: KStateTask,
      rows: Iterator[InternalRow],
      watermark: Option[Long],
      order: InputOrder.Resolved,
      spillBytes: Long,
      onDone: () => Unit
  ): Iterator[InternalRow] = {
    val n = child.output.length
    val tsOf = KStateStatefulExec.eventTimeOf(timestamp, child.output)
    val numOutput = longMetric("numOutputRows")
    val updatesTime = longMetric("allUpdatesTimeMs")
    watermark.foreach(task.advanceStreamTime)
    val start = System.nanoTime()
    val ordered = InputOrder(rows, n, n - 2, n - 1, tsOf, order, spillBytes)
    new Iterator[InternalRow] {
      // rows emitted by the last `process` call (most calls emit none or one)
      private val pending = new java.util.ArrayDeque[InternalRow]()
      private var done = false
      private var tail: Iterator[InternalRow] = Iterator.empty
      private val emit: InternalRow => Unit = r => pending.add(r)
      override def hasNext: Boolean = {
        while (pending.isEmpty && !done) {
          if (ordered.hasNext) {
            ordered.advance()
            task.process(ordered.row, ordered.ts, emit)
          } else {
            updatesTime += NANOSECONDS.toMillis(System.nanoTime() - start)
            longMetric(KStateStatefulExec.CommonMetrics.InputSpilledBytes.name) += ordered.spilledBytes
            longMetric("allRemovalsTimeMs") += timeTakenMs { task.finish() }
            onDone()
            tail = task.finishOutput
            done = true
          }
        }
        if (pending.isEmpty && tail.hasNext) pending.add(tail.next())
        !pending.isEmpty
      }
      override def next(): InternalRow = {
        if (!hasNext) throw new NoSuchElementException
        numOutput += 1
        pending.poll()
      }
    }
  }

  private def recordTaskMetrics(m: KStateTask.Metrics): Unit = {
    m.custom.foreach { case (k, v) => longMetric(k) += v }
    longMetric("numTotalStateRows") += m.totalStateRows
    longMetric("numUpdatedStateRows") += m.updatedStateRows
    longMetric("numRemovedStateRows") += m.removedStateRows
  }
}

object KStateStatefulExec {

  /**
   * The schema change each running operator's tasks convert for (driver side), by checkpoint,
   * operator and query run; see `pendingEvolution`.
   */
  private val Evolutions =
    new java.util.concurrent.ConcurrentHashMap[(String, Long, java.util.UUID), Option[StateEvolution]]()

  private def evolutionKey(info: StatefulOperatorStateInfo) =
    (info.checkpointLocation, info.operatorId, info.queryRunId)

  /** Replaces the store's recorded state schema (Spark's schema file) with `schema`. */
  private def rewriteSchemaFile(
      info: StatefulOperatorStateInfo,
      hadoopConf: Configuration,
      schema: List[StateStoreColFamilySchema],
      version: Int
  ): Unit = {
    val storeId = StateStoreId(info.checkpointLocation, info.operatorId, StateStore.PARTITION_ID_TO_CHECK_SCHEMA)
    val file = StateSchemaCompatibilityChecker.schemaFile(storeId.storeCheckpointLocation())
    val fm =
      org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager.create(file.getParent, hadoopConf)
    if (fm.exists(file)) fm.delete(file)
    new StateSchemaCompatibilityChecker(StateStoreProviderId(storeId, info.queryRunId), hadoopConf)
      .createSchemaFile(schema, SchemaHelper.SchemaWriter.createSchemaWriter(version))
  }

  /** Custom metrics every kstate operator reports, counted by the exec (not a processor). */
  object CommonMetrics extends MetricSet {
    val InputSpilledBytes: Metric =
      sum("inputSpilledBytes", "bytes of input spilled to disk while ordering micro-batches")

    /** Set on the driver when the micro-batch is planned (standby replicas, docs/replicas.md). */
    val Standbys: Metric =
      sum(
        "kstateStandbys",
        "standby copies of the operator's stores on live executors, when the micro-batch was planned"
      )
    val StandbyLagVersions: Metric =
      sum(
        "kstateStandbyLagVersions",
        "versions the least current store's warmest standby lagged behind the committed version, when the micro-batch was planned"
      )
    val Warmups: Metric =
      sum(
        "kstateWarmups",
        "warm-up copies of the operator's stores on live executors (stores waiting to move there), when the micro-batch was planned"
      )
    val OwnershipMoves: Metric =
      sum(
        "kstateOwnershipMoves",
        "stores whose executor changed in the previous micro-batch (a warm-up move or a failover), as seen when this one was planned"
      )
  }

  /**
   * Event time in ms of a row, [[NullTime]] when null: TIMESTAMP / TIMESTAMP_NTZ (micros,
   * floored to ms) or integral epoch milliseconds; a BIGINT `Long.MinValue` therefore counts as
   * null. Not thread-safe (reuses a projection).
   */
  def eventTimeOf(timestamp: Expression, input: Seq[Attribute]): InternalRow => Long = {
    val proj = UnsafeProjection.create(Seq(timestamp), input)
    val toMs = millisOf(timestamp.dataType)
    r => {
      val t = proj(r)
      if (t.isNullAt(0)) NullTime else toMs(t)
    }
  }

  /** A null event time (also what a BIGINT timestamp of `Long.MinValue` means). */
  val NullTime: Long = Long.MinValue

  def millisOf(dt: DataType): UnsafeRow => Long = {
    import org.apache.spark.sql.types._
    dt match {
      case TimestampType | TimestampNTZType => r => Math.floorDiv(r.getLong(0), 1000L)
      case LongType => _.getLong(0)
      case IntegerType => _.getInt(0).toLong
      case ShortType => _.getShort(0).toLong
      case ByteType => _.getByte(0).toLong
      case other => throw org.apache.spark.sql.kstate.errors.KStateErrors.wrongTimestampType("timestamp", other.sql)
    }
  }

  /** The inverse of [[millisOf]]: an event time in ms as a value of type `dt` (TIMESTAMPs in micros). */
  def millisTo(dt: DataType): Long => Any = {
    import org.apache.spark.sql.types._
    dt match {
      case TimestampType | TimestampNTZType => ms => Math.multiplyExact(ms, 1000L)
      case LongType => ms => ms
      case IntegerType => ms => ms.toInt
      case ShortType => ms => ms.toShort
      case ByteType => ms => ms.toByte
      case other => throw org.apache.spark.sql.kstate.errors.KStateErrors.wrongTimestampType("timestamp", other.sql)
    }
  }
}
