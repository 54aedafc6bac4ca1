package org.apache.spark.sql.kstate.repartition

import scala.util.control.NonFatal

import io.kstate.KStateException
import org.apache.spark.sql.kstate.config.KStateConf
import org.apache.spark.sql.kstate.errors.KStateErrors
import org.apache.hadoop.fs.{FileSystem, Path}

import org.apache.spark.SparkException
import org.apache.spark.internal.Logging
import org.apache.spark.sql.classic.{SparkSession => ClassicSession}
import org.apache.spark.sql.execution.streaming.checkpointing.{CommitLog, OffsetSeqLog}
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.planning.OperatorIdentity
import org.apache.spark.sql.kstate.reader.{CheckpointView, OperatorSelector, StateReadTarget}
import org.apache.spark.sql.kstate.shim.OffsetLogs
import org.apache.spark.sql.kstate.provider.CheckpointFiles
import org.apache.spark.sql.kstate.engine.StateFile
import org.apache.spark.util.SerializableConfiguration

/**
 * Offline repartitioning of a stopped query's state: kstate's counterpart of Spark's
 * `StreamingCheckpointManager.repartition`, for checkpoints holding kstate operators (Spark's
 * cannot move them: it knows the state layout of its own operators only). Spark's own operators
 * in the same checkpoint are moved by Spark's own rewrite ([[SparkOperatorsRewrite]]).
 *
 * As Spark's does, it adds a micro-batch R that reads no input: its offset log entry is the last
 * committed batch's with `spark.sql.shuffle.partitions` = M, its state (version R + 1) is every
 * operator's state as of the last committed batch, moved to M partitions, and its commit log
 * entry the last committed batch's. The query then restarts from R with M state partitions.
 *
 * Steps, in this order (docs/operators.md, "Rescaling state"):
 *  1. Checks, writing nothing: the arguments; a committed micro-batch exists and none is planned
 *     but uncommitted (unless it is an unfinished repartition to the same M, which is resumed);
 *     M differs from the current number; every kstate operator is on kstate's provider with a
 *     recorded configuration and state schema; Spark's own operators are ones Spark's rewrite
 *     moves ([[SparkOperatorsRewrite.check]]).
 *  2. Per operator, a Spark job reads every old partition's store and writes each new
 *     partition's snapshot into a staging directory (`state/<op>/_kstate/repartition-<R>`);
 *     a family it cannot move fails it here, before anything outside staging is written. Then
 *     Spark's own operators, into their staging checkpoint ([[SparkOperatorsRewrite.stage]]).
 *  3. The offset log entry R (from here on the checkpoint has an unfinished repartition: the
 *     query refuses to start until this call is repeated with M, as with Spark's own).
 *  4. Each staged snapshot moved to `state/<op>/<p>/<R+1>.kstate.snapshot`; Spark's operators'
 *     staged files moved into `state/` ([[SparkOperatorsRewrite.install]]).
 *  5. The commit log entry R; the staging directories are removed.
 * On a checkpoint of Spark's state checkpoint format v2 the old stores are read by the ids of
 * the last committed batch's commit log entry, each new snapshot gets a fresh checkpoint id (it
 * is `<R+1>_<id>.kstate.snapshot`, state file format 3) and the commit log entry R carries those
 * ids as its `stateUniqueIds`, for every operator and new partition: the restarted query asks
 * for exactly these snapshots.
 *
 * A failure in step 1 or 2 leaves the checkpoint as it was (the staging directory is removed;
 * one left by a crash is ignored by everything and replaced by the next attempt). A failure
 * after step 3 leaves an unfinished repartition, finished by calling again with M.
 */
object StateRepartition extends Logging {

  /** Repartitions the checkpoint's state to `numPartitions`; returns the repartition batch id. */
  def run(session: ClassicSession, checkpointLocation: String, numPartitions: Int): Long = {
    if (checkpointLocation == null || checkpointLocation.trim.isEmpty) {
      throw KStateErrors.invalidRepartition("the checkpoint location is empty")
    }
    if (numPartitions <= 0) {
      throw KStateErrors.invalidRepartition(s"the number of partitions must be positive, got $numPartitions")
    }
    val plan = Plan.of(session, checkpointLocation, numPartitions)
    // checkpoint format v2: the new snapshots' ids, per operator and new partition
    val newIds: Map[Long, Seq[String]] = plan.operators.collect {
      case (t, _) if t.checkpointIds.isDefined =>
        t.operatorId -> Seq.fill(numPartitions)(java.util.UUID.randomUUID().toString)
    }.toMap
    val hadoopConf = SerializableConfiguration.broadcast(session.sparkContext, plan.view.hadoopConf)
    val fs = plan.view.stateRoot.getFileSystem(plan.view.hadoopConf)
    // 2. staged snapshots
    try {
      plan.operators.foreach { case (target, layout) =>
        val staging = plan.staging(target.operatorId)
        if (fs.exists(staging)) fs.delete(staging, true)
        session.sparkContext.setJobDescription(
          s"kstate: repartition ${layout.operator.describe} to $numPartitions partitions"
        )
        try RepartitionJob.run(
            session.sparkContext,
            target,
            layout,
            numPartitions,
            plan.newVersion,
            staging.toString,
            hadoopConf,
            newIds.get(target.operatorId)
          )
        catch { case e: SparkException => throw kstateCause(e).getOrElse(e) }
        finally session.sparkContext.setJobDescription(null)
      }
    } catch {
      case NonFatal(e) =>
        plan.operators.foreach { case (t, _) => deleteQuietly(fs, plan.staging(t.operatorId), e) }
        throw e
    }
    // 2b. Spark's own operators, staged by Spark's rewrite (their new checkpoint ids in format v2)
    val sparkIds: Map[Long, Array[Array[String]]] =
      try plan.spark.fold(Map.empty[Long, Array[Array[String]]]) { rewrite =>
          session.sparkContext.setJobDescription(
            s"kstate: repartition Spark's stateful operators ${rewrite.operatorIds.mkString(", ")} " +
              s"to $numPartitions partitions"
          )
          try rewrite.stage(session).getOrElse(Map.empty)
          finally session.sparkContext.setJobDescription(null)
        }
      catch {
        case NonFatal(e) =>
          plan.operators.foreach { case (t, _) => deleteQuietly(fs, plan.staging(t.operatorId), e) }
          plan.spark.foreach(r => discardQuietly(r, e))
          throw e
      }
    // 3. the offset log entry
    if (
      !plan.resuming && !OffsetLogs.addWithPartitions(plan.offsets, plan.lastCommitted, plan.batchId, numPartitions)
    ) {
      throw KStateErrors.invalidRepartition(s"micro-batch ${plan.batchId} appeared in the offset log " +
        "while repartitioning: is the query running, or another repartition?")
    }
    // 4. snapshots into place
    plan.operators.foreach { case (target, _) =>
      (0 until numPartitions).foreach { p =>
        val staged = RepartitionJob.stagedFile(plan.staging(target.operatorId), p)
        val dir = target.storeId(p).storeCheckpointLocation()
        val dest = new Path(
          dir,
          CheckpointFiles.fileName(
            StateFile.Snapshot,
            plan.newVersion,
            newIds.get(target.operatorId).map(_(p))
          )
        )
        fs.mkdirs(dir)
        if (fs.exists(dest)) fs.delete(dest, false)
        if (!fs.rename(staged, dest)) throw new java.io.IOException(s"could not move $staged to $dest")
      }
    }
    plan.spark.foreach(_.install())
    // 5. the commit log entry
    val last = plan.commits.get(plan.lastCommitted).get
    // format v2: the new snapshots' ids for every operator and new partition (one per store)
    val committed = if (newIds.isEmpty && sparkIds.isEmpty) last
    else last.withStateUniqueIds(Some(
      last.stateUniqueIds.getOrElse(Map.empty[Long, Array[Array[String]]]) ++
        newIds.map { case (op, ids) => op -> ids.map(Array(_)).toArray } ++ sparkIds
    ))
    if (!plan.commits.add(plan.batchId, committed)) {
      throw KStateErrors.invalidRepartition(s"micro-batch ${plan.batchId} appeared in the commit log " +
        "while repartitioning: is the query running?")
    }
    plan.operators.foreach { case (t, _) => deleteQuietly(fs, plan.staging(t.operatorId), null) }
    plan.spark.foreach(r => discardQuietly(r, null))
    logInfo(s"Repartitioned the state of ${plan.view.root} from ${plan.oldPartitions} to $numPartitions " +
      s"partitions in micro-batch ${plan.batchId} (${plan.operators.size} kstate operators, " +
      s"${plan.spark.fold(0)(_.operatorIds.size)} of Spark's)")
    plan.batchId
  }

  /** See [[io.kstate.KStateRepartition.checkSparkRepartition]]. */
  def checkSparkRepartition(session: ClassicSession, checkpointLocation: String): Unit = {
    if (checkpointLocation == null || checkpointLocation.trim.isEmpty) return // Spark's own error
    val view = new CheckpointView(session, checkpointLocation)
    val operators = view.kstateOperators
    if (operators.nonEmpty) {
      throw KStateErrors.repartitionNeedsKState(view.root.toString, operators.map(_.describe))
    }
    // Spark's own operators on kstate's provider: Spark's rewrite reads from RocksDB's only
    val sparkOperators = view.sparkOperatorIds
    if (sparkOperators.nonEmpty && view.keptByKStateProvider) {
      throw KStateErrors.repartitionProviderNeedsKState(
        view.root.toString,
        KStateConf.StateStoreProvider.default,
        sparkOperators.map(_.toString)
      )
    }
  }

  /** What a repartition will do, resolved and checked without writing anything. */
  private final case class Plan(
      view: CheckpointView,
      offsets: OffsetSeqLog,
      commits: CommitLog,
      lastCommitted: Long,
      batchId: Long,
      resuming: Boolean,
      oldPartitions: Int,
      operators: Seq[(StateReadTarget, OperatorLayout)],
      spark: Option[SparkOperatorsRewrite]
  ) {

    /** The state version the repartition batch commits. */
    def newVersion: Long = batchId + 1
    def staging(operatorId: Long): Path =
      new Path(
        new Path(new Path(view.stateRoot, operatorId.toString), OperatorIdentity.ConfigDir),
        s"repartition-$batchId"
      )
  }

  private object Plan {
    def of(session: ClassicSession, checkpointLocation: String, numPartitions: Int): Plan = {
      val view = new CheckpointView(session, checkpointLocation)
      val root = view.root.toString
      val fs = view.root.getFileSystem(view.hadoopConf)
      if (!fs.exists(view.root)) throw KStateErrors.checkpointNotFound(root)
      val offsets = new OffsetSeqLog(session, new Path(view.root, "offsets").toString)
      val commits = new CommitLog(session, new Path(view.root, "commits").toString)
      val lastCommitted = commits.getLatestBatchId().getOrElse(throw KStateErrors.invalidRepartition(
        s"checkpoint $root has no committed micro-batch: run the query until it commits one"
      ))
      val lastPlanned = offsets.getLatestBatchId().getOrElse(lastCommitted)
      val oldPartitions = OffsetLogs.shufflePartitions(offsets, lastCommitted).getOrElse(
        throw KStateErrors.invalidRepartition(
          s"micro-batch $lastCommitted of $root records no number of state partitions"
        )
      )
      val (batchId, resuming) =
        if (lastPlanned == lastCommitted) (lastCommitted + 1, false)
        else OffsetLogs.shufflePartitions(offsets, lastPlanned) match {
          case Some(n) if lastPlanned == lastCommitted + 1 && n != oldPartitions =>
            if (n != numPartitions) throw KStateErrors.repartitionUnfinished(root, lastPlanned, n, numPartitions)
            (lastPlanned, true)
          case _ => throw KStateErrors.repartitionUncommittedBatch(root, lastPlanned, lastCommitted)
        }
      if (!resuming && numPartitions == oldPartitions) {
        throw KStateErrors.repartitionNotNeeded(root, lastCommitted, numPartitions)
      }
      val sparkIds = view.sparkOperatorIds
      val spark =
        if (sparkIds.isEmpty) None
        else Some(SparkOperatorsRewrite.check(session, view, sparkIds, lastCommitted, batchId, numPartitions))
      val operators = view.kstateOperators.map { op =>
        if (op.config.isEmpty) {
          throw KStateErrors.repartitionUnsupportedState(
            op.describe,
            s"its configuration record (state/${op.id}/${OperatorIdentity.ConfigDir}) is missing"
          )
        }
        if (op.providerClass != KStateConf.StateStoreProvider.default) {
          throw KStateErrors.repartitionUnsupportedState(
            op.describe,
            s"its state is kept by ${op.providerClass}; " +
              s"kstate moves state kept by its own provider (${KStateConf.StateStoreProvider.default}) only"
          )
        }
        val target = StateReadTarget.resolve(
          session,
          checkpointLocation,
          OperatorSelector.ById(op.id),
          Some(lastCommitted),
          StateStore.DEFAULT_COL_FAMILY_NAME
        )
        if (target.numPartitions != oldPartitions) {
          throw KStateErrors.repartitionUnsupportedState(
            op.describe,
            s"it has ${target.numPartitions} state partitions where the query has $oldPartitions"
          )
        }
        target -> OperatorLayout(op, target.keySchema, target.valueSchema)
      }
      Plan(view, offsets, commits, lastCommitted, batchId, resuming, oldPartitions, operators, spark)
    }
  }

  /** The kstate error that failed a task of the job, if one did. */
  private def kstateCause(e: Throwable): Option[KStateException] =
    Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).collectFirst { case k: KStateException => k }

  private def discardQuietly(rewrite: SparkOperatorsRewrite, failure: Throwable): Unit =
    quietly(rewrite.staging, failure)(rewrite.discard())

  private def deleteQuietly(fs: FileSystem, dir: Path, failure: Throwable): Unit =
    quietly(dir, failure)(fs.delete(dir, true))

  /** Removes `dir` by `remove`; a failure is added to `failure` (or logged when there is none). */
  private def quietly(dir: Path, failure: Throwable)(remove: => Unit): Unit =
    try remove
    catch {
      case NonFatal(c) => if (failure != null) failure.addSuppressed(c) else logWarning(s"could not delete $dir", c)
    }
}
