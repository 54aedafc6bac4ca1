package org.apache.spark.sql.kstate.repartition

import scala.collection.mutable

import org.apache.spark.sql.kstate.errors.KStateErrors
import org.apache.hadoop.fs.{FileSystem, FileUtil, Path}

import org.apache.spark.sql.{functions, DataFrame}
import org.apache.spark.sql.classic.{SparkSession => ClassicSession}
import org.apache.spark.sql.execution.datasources.v2.state.metadata.StateMetadataPartitionReader
import org.apache.spark.sql.execution.streaming.checkpointing.{OffsetSeqLog, OffsetSeqMetadata}
import org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperatorsUtils
import org.apache.spark.sql.execution.streaming.state.{
  OperatorStateMetadata,
  OperatorStateMetadataV2,
  OperatorStateMetadataWriter,
  HDFSBackedStateStoreProvider,
  RocksDBStateStoreProvider,
  StateRewriter,
  StateStoreConf
}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.kstate.config.KStateConf
import org.apache.spark.sql.kstate.engine.StateFile
import org.apache.spark.sql.kstate.reader.CheckpointView
import org.apache.spark.sql.kstate.shim.OffsetLogs
import org.apache.spark.util.SerializableConfiguration

/**
 * Moves the state of Spark's own stateful operators for [[StateRepartition]], when a checkpoint
 * holds them beside kstate operators.
 *
 * Spark's `StateRewriter` (the code behind Spark's `StreamingCheckpointManager.repartition`) does
 * the moving: per store it reads the old partitions with Spark's state data source, repartitions
 * the rows by the operator's partition key (Spark's `StatePartitionKeyExtractorFactory`, the key
 * Spark's own shuffle uses) and writes each new partition with the operator's provider. It takes
 * every operator of the checkpoint it writes to, and fails on kstate's; so it writes here into a
 * staging checkpoint `_kstate/repartition-<R>` that holds only what it reads of Spark's operators
 * (their `_metadata` directories, the offset log entry R, the last commit), reading the state
 * itself from the real checkpoint. [[install]] moves the files it wrote into the real checkpoint
 * with kstate's own snapshots, after the offset log entry R.
 *
 * Life cycle: [[check]] while planning (writes nothing), [[stage]] in step 2 (writes only the
 * staging checkpoint), [[install]] in step 4, [[discard]] on a failure before step 3 and after
 * step 5.
 *
 * On Spark's HDFS provider and on kstate's (as the query-wide provider), which Spark's rewrite
 * refuses, each store is moved by [[SparkStoreRewrite]] into the same staging checkpoint, by
 * Spark's partition key as Spark's rewrite does.
 *
 * Supported: the operators Spark's partition key extractor knows, on Spark's RocksDB provider,
 * on kstate's (any key encoding, session windows' prefix-encoded store included; checkpoint
 * formats 1 and 2), or on Spark's HDFS provider (without row or file checksums). Spark runs no
 * `transformWithState` on providers other than RocksDB, so no such state is on the other two.
 */
private[repartition] final class SparkOperatorsRewrite private (
    view: CheckpointView,
    lastCommitted: Long,
    batchId: Long,
    numPartitions: Int,
    operators: Seq[OperatorStateMetadata],
    formatVersion: Int,
    target: Option[SparkStoreRewrite.Target],
    recordedConf: SQLConf
) {

  /** The staging checkpoint. */
  val staging: Path = new Path(new Path(view.root, SparkOperatorsRewrite.StagingDir), s"repartition-$batchId")

  def operatorIds: Seq[Long] = operators.map(_.operatorInfo.operatorId)

  private val fs: FileSystem = view.root.getFileSystem(view.hadoopConf)

  /** Files copied into the staging checkpoint (relative paths): what [[install]] must not move. */
  private val copied = mutable.Set.empty[String]

  /**
   * Writes every Spark operator's new partitions into the staging checkpoint; returns, on a
   * checkpoint of state checkpoint format 2, their new checkpoint ids (operator -> partition ->
   * store).
   */
  def stage(session: ClassicSession): Option[Map[Long, Array[Array[String]]]] = {
    discard()
    target.fold(stageWithSparksRewrite(session))(stageStores(session, _))
  }

  /**
   * Spark's HDFS provider or kstate's: each store moved by [[SparkStoreRewrite]]; in checkpoint
   * format v2 (kstate's provider), the new snapshots' ids per operator, partition and store (in
   * the operator metadata's store order, as Spark's rewrite gives them).
   */
  private def stageStores(
      session: ClassicSession,
      to: SparkStoreRewrite.Target
  ): Option[Map[Long, Array[Array[String]]]] = {
    val storeConf = StateStoreConf(recordedConf)
    val joinFormat = recordedConf.getConf(SQLConf.STREAMING_JOIN_STATE_FORMAT_VERSION)
    val hadoopConf = SerializableConfiguration.broadcast(session.sparkContext, view.hadoopConf)
    val ids = operators.map { op =>
      val name = op.operatorInfo.operatorName
      val perStore = op.stateStoresMetadata.map { store =>
        SparkStoreRewrite.stage(
          session,
          view.root.toString,
          lastCommitted,
          name,
          op.operatorInfo.operatorId,
          store,
          if (name == StatefulOperatorsUtils.SYMMETRIC_HASH_JOIN_EXEC_OP_NAME) Some(joinFormat) else None,
          numPartitions,
          new Path(staging, "state").toString,
          storeConf,
          hadoopConf,
          to
        )
      }
      // partition -> one id per store
      op.operatorInfo.operatorId -> Array.tabulate(numPartitions)(p => perStore.map(_(p)).toArray)
    }
    if (formatVersion < 2) None
    else Some(ids.map { case (op, byPartition) =>
      op -> byPartition.map(_.map(_.getOrElse(
        throw new IllegalStateException(s"operator $op: a new store committed without a checkpoint id")
      )))
    }.toMap)
  }

  /** Spark's RocksDB provider or kstate's: Spark's own rewrite. */
  private def stageWithSparksRewrite(session: ClassicSession): Option[Map[Long, Array[Array[String]]]] = {
    val conf = view.hadoopConf
    copy(new Path(view.root, "metadata"))
    copy(new Path(new Path(view.root, "offsets"), lastCommitted.toString))
    copy(new Path(new Path(view.root, "commits"), lastCommitted.toString))
    val offsets = new OffsetSeqLog(session, new Path(staging, "offsets").toString)
    OffsetLogs.addWithPartitions(offsets, lastCommitted, batchId, numPartitions)
    operators.foreach { op =>
      val dir = new Path(view.stateRoot, op.operatorInfo.operatorId.toString)
      // the operator's metadata, and the schema files Spark's providers keep under partition 0
      copyTree(new Path(dir, "_metadata"))
      metadataDirs(new Path(dir, "0")).foreach(copyTree)
    }
    val n = numPartitions
    val byPartitionKey: DataFrame => DataFrame = _.repartition(n, functions.col("partition_key"))
    // StateRewriter checks the session's checkpoint format against the checkpoint's and derives
    // the new checkpoint ids from it: the repartition follows the checkpoint, whatever the session says
    val key = SQLConf.STATE_STORE_CHECKPOINT_FORMAT_VERSION.key
    val before = session.conf.getOption(key)
    session.conf.set(key, formatVersion.toString)
    val ids =
      try new StateRewriter(
          session,
          lastCommitted,
          batchId,
          staging.toString,
          conf,
          Some(view.root.toString),
          Some(byPartitionKey),
          None
        ).run()
      finally before match {
          case Some(v) => session.conf.set(key, v)
          case None => session.conf.unset(key)
        }
    // the operators' metadata in format 2 records the number of partitions per micro-batch
    operators.foreach {
      case m: OperatorStateMetadataV2 =>
        val updated = m.copy(stateStoreInfo = m.stateStoreInfo.map(_.copy(numPartitions = n)))
        OperatorStateMetadataWriter
          .createWriter(
            new Path(new Path(staging, "state"), m.operatorInfo.operatorId.toString),
            conf,
            updated.version,
            Some(batchId)
          )
          .write(updated)
      case _ =>
    }
    ids.map(_.filter { case (op, _) => operatorIds.contains(op) })
  }

  /** Moves every file the rewrite wrote under the staging checkpoint's `state` into the real one. */
  def install(): Unit = {
    val stagedState = new Path(staging, "state")
    val it = fs.listFiles(stagedState, true)
    val base = stagedState.toUri.getPath.stripSuffix("/") + "/"
    val moves = mutable.ArrayBuffer.empty[(Path, Path)]
    while (it.hasNext) {
      val f = it.next().getPath
      val rel = f.toUri.getPath.stripPrefix(base)
      target match {
        case Some(SparkStoreRewrite.NewHdfsStore) =>
          if (f.getName == SparkStoreRewrite.StagedHdfsFile) {
            moves += f -> SparkStoreRewrite.hdfsTarget(new Path(view.stateRoot, rel).getParent, batchId + 1)
          }
        case Some(SparkStoreRewrite.EmptyAt(_)) =>
          if (f.getName.endsWith(StateFile.Snapshot.suffix)) moves += f -> new Path(view.stateRoot, rel)
        case None => if (!copied.contains(s"state/$rel")) moves += f -> new Path(view.stateRoot, rel)
      }
    }
    moves.foreach { case (from, to) =>
      fs.mkdirs(to.getParent)
      if (fs.exists(to)) fs.delete(to, false)
      if (!fs.rename(from, to)) throw new java.io.IOException(s"could not move $from to $to")
    }
  }

  /** Removes the staging checkpoint (and `_kstate` when nothing else is in it). */
  def discard(): Unit = {
    if (fs.exists(staging)) fs.delete(staging, true)
    val parent = staging.getParent
    if (fs.exists(parent) && fs.listStatus(parent).isEmpty) fs.delete(parent, false)
  }

  private def relative(p: Path): String =
    p.toUri.getPath.stripPrefix(view.root.toUri.getPath.stripSuffix("/") + "/")

  private def copy(file: Path): Unit = if (fs.exists(file)) {
    val rel = relative(file)
    val to = new Path(staging, rel)
    if (!FileUtil.copy(fs, file, fs, to, false, view.hadoopConf)) {
      throw new java.io.IOException(s"could not copy $file to $to")
    }
    copied += rel
  }

  private def copyTree(dir: Path): Unit = if (fs.exists(dir)) {
    val it = fs.listFiles(dir, true)
    while (it.hasNext) copy(it.next().getPath)
  }

  /** The `_metadata` directories under `dir`, at any depth (one per store of partition 0). */
  private def metadataDirs(dir: Path): Seq[Path] =
    if (!fs.exists(dir)) Nil
    else fs.listStatus(dir).toSeq.filter(_.isDirectory).flatMap { s =>
      if (s.getPath.getName == "_metadata") Seq(s.getPath) else metadataDirs(s.getPath)
    }
}

private[repartition] object SparkOperatorsRewrite {

  /** The checkpoint's directory for kstate's staging checkpoints (ignored by Spark). */
  val StagingDir = "_kstate"

  private val Rocks = classOf[RocksDBStateStoreProvider].getName
  private val Hdfs = classOf[HDFSBackedStateStoreProvider].getName

  /** kstate's provider by its public name (`io.kstate.KStateStoreProvider`). */
  private val KStateProvider = KStateConf.StateStoreProvider.default

  /** Spark's operators its repartition moves (those its partition key extractor knows). */
  private lazy val movable: Set[String] = {
    val u = StatefulOperatorsUtils
    (Seq(
      u.STATE_STORE_SAVE_EXEC_OP_NAME,
      u.DEDUPLICATE_EXEC_OP_NAME,
      u.DEDUPLICATE_WITHIN_WATERMARK_EXEC_OP_NAME,
      u.SESSION_WINDOW_STATE_STORE_SAVE_EXEC_OP_NAME,
      u.SYMMETRIC_HASH_JOIN_EXEC_OP_NAME
    ) ++ u.FLAT_MAP_GROUPS_OP_NAMES ++ u.TRANSFORM_WITH_STATE_OP_NAMES).toSet
  }

  /** The SQL configuration micro-batch `batchId` ran with (the session's, then the offset log's). */
  private def recordedConf(session: ClassicSession, view: CheckpointView, batchId: Long): SQLConf = {
    val sqlConf = session.sessionState.conf.clone()
    new OffsetSeqLog(session, new Path(view.root, "offsets").toString).get(batchId).flatMap(_.metadataOpt)
      .foreach(m => OffsetSeqMetadata.setSessionConf(m, sqlConf))
    sqlConf
  }

  /**
   * Checks, writing nothing, that Spark's operators `ids` of the checkpoint can be moved from
   * micro-batch `lastCommitted`'s state; the rewrite that will move them in micro-batch `batchId`.
   */
  def check(
      session: ClassicSession,
      view: CheckpointView,
      ids: Seq[Long],
      lastCommitted: Long,
      batchId: Long,
      numPartitions: Int
  ): SparkOperatorsRewrite = {
    val conf = view.recordedConf(lastCommitted)
    val provider = conf.getOrElse(
      SQLConf.STATE_STORE_PROVIDER_CLASS.key,
      SQLConf.STATE_STORE_PROVIDER_CLASS.defaultValueString
    )
    val metadata = new StateMetadataPartitionReader(
      view.root.toString,
      new SerializableConfiguration(view.hadoopConf),
      lastCommitted
    ).allOperatorStateMetadata.map(m => m.operatorInfo.operatorId -> m).toMap
    val operators = ids.map { id =>
      val m = metadata.getOrElse(
        id,
        throw KStateErrors.repartitionUnsupportedState(
          s"with operator id $id",
          s"it is one of Spark's own stateful operators and records no operator metadata " +
            s"(state/$id/_metadata) for micro-batch $lastCommitted, which moving its state needs"
        )
      )
      val name = m.operatorInfo.operatorName
      val what = s"$name (Spark's own, operator id $id)"
      if (!movable.contains(name)) {
        throw KStateErrors.repartitionUnsupportedState(what, "Spark's repartition does not move this operator's state")
      }
      if (provider != Rocks && provider != Hdfs && provider != KStateProvider) {
        throw KStateErrors.repartitionUnsupportedState(
          what,
          s"its state is kept by $provider (the query's spark.sql.streaming.stateStore.providerClass); " +
            s"kstate moves Spark's own operators' state on $Rocks (with Spark's own repartition code), " +
            s"on $Hdfs and on $KStateProvider only"
        )
      }
      m
    }
    val format = view.commitFormatVersion(lastCommitted).getOrElse(1)
    val target =
      if (provider == Hdfs) Some(SparkStoreRewrite.NewHdfsStore)
      else if (provider == KStateProvider) Some(SparkStoreRewrite.EmptyAt(batchId))
      else None
    val recorded = recordedConf(session, view, lastCommitted)
    if (provider == Hdfs) {
      // the moved files are written without Spark's per-file and per-row checksums
      val storeConf = StateStoreConf(recorded)
      Seq(
        SQLConf.STREAMING_CHECKPOINT_FILE_CHECKSUM_ENABLED.key -> storeConf.checkpointFileChecksumEnabled,
        SQLConf.STATE_STORE_ROW_CHECKSUM_ENABLED.key -> storeConf.rowChecksumEnabled
      ).collect { case (key, true) =>
        throw KStateErrors.repartitionUnsupportedState(
          s"Spark's own operators ${ids.mkString(", ")}",
          s"their state on $Hdfs was written with $key=true, which kstate's move of that " +
            "provider's state does not write"
        )
      }
    }
    new SparkOperatorsRewrite(view, lastCommitted, batchId, numPartitions, operators, format, target, recorded)
  }
}
