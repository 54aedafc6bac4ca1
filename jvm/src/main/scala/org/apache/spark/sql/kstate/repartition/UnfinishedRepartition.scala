package org.apache.spark.sql.kstate.repartition

import org.apache.spark.sql.kstate.errors.KStateErrors
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}

import org.apache.spark.internal.Logging
import org.apache.spark.sql.classic.{SparkSession => ClassicSession}
import org.apache.spark.sql.execution.streaming.checkpointing.{CommitLog, OffsetSeqLog}
import org.apache.spark.sql.execution.streaming.state.OperatorStateMetadataV2
import org.apache.spark.sql.kstate.planning.OperatorIdentity
import org.apache.spark.sql.kstate.reader.CheckpointView
import org.apache.spark.sql.kstate.shim.OffsetLogs

/**
 * A repartition that started and did not finish, in a checkpoint holding kstate operators or
 * kept by kstate's provider, and how it is undone.
 *
 * Spark's `StreamingCheckpointManager.repartition` writes its micro-batch's offset log entry
 * before it finds it cannot move an operator's state (kstate's operators, or any operator on a
 * provider other than Spark's RocksDB one, kstate's among them); from then on Spark refuses to start the query
 * (`STREAMING_UNFINISHED_REPARTITION_DETECTED`) until a repartition to the same number finishes,
 * which Spark's own cannot do for these operators. kstate therefore undoes such a repartition
 * when the query is started ([[org.apache.spark.sql.kstate.shim.StreamStartCheck]]): the query
 * restarts with its old number of partitions, as if the call had not been made. The same applies
 * to a `kstate.repartition_state` that failed after writing its offset log entry.
 *
 * Undoing micro-batch R (planned, not committed, with another number of state partitions than
 * R - 1, which is committed): every state file of version R + 1 (the version only R would have
 * committed) in every operator's partition directories is deleted, with any format-2 operator
 * metadata file of R, then kstate's staging directories of R, then the offset log entry R. Nothing else is touched: files of other
 * versions, and operators whose state never saw R.
 */
object UnfinishedRepartition extends Logging {

  /**
   * The unfinished repartition batch of the checkpoint at `root`, if it has one and kstate
   * operators or kstate's provider as the query-wide one.
   */
  def find(session: ClassicSession, root: Path, conf: Configuration): Option[Long] = {
    val fs = root.getFileSystem(conf)
    val stateRoot = new Path(root, "state")
    if (!fs.exists(new Path(root, "offsets")) || !fs.exists(stateRoot)) return None
    val view = new CheckpointView(session, root.toString)
    if (!view.operatorIds.exists(OperatorIdentity.isKStateOperatorId) && !view.keptByKStateProvider) return None
    val offsets = new OffsetSeqLog(session, new Path(root, "offsets").toString)
    val commits = new CommitLog(session, new Path(root, "commits").toString)
    for {
      last <- offsets.getLatestBatchId()
      committed <- commits.getLatestBatchId()
      if last == committed + 1
      n <- OffsetLogs.shufflePartitions(offsets, last)
      before <- OffsetLogs.shufflePartitions(offsets, committed)
      if n != before
    } yield last
  }

  /** Undoes the unfinished repartition of the checkpoint at `location`, if any; returns its batch. */
  def undo(session: ClassicSession, location: String): Option[Long] = {
    val conf = session.sessionState.newHadoopConf()
    val root = {
      val p = new Path(location)
      p.getFileSystem(conf).makeQualified(p)
    }
    find(session, root, conf).map { batch =>
      val fs = root.getFileSystem(conf)
      val stateRoot = new Path(root, "state")
      val version = batch + 1
      fs.listStatus(stateRoot).filter(_.isDirectory).foreach { op =>
        fs.listStatus(op.getPath).filter(_.isDirectory).foreach { dir =>
          dir.getPath.getName match {
            case OperatorIdentity.ConfigDir =>
              fs.listStatus(dir.getPath).filter(_.getPath.getName == s"repartition-$batch")
                .foreach(s => fs.delete(s.getPath, true))
            case name if name.toIntOption.isDefined => deleteVersion(fs, dir.getPath, version)
            case _ =>
          }
        }
        // format-2 operator metadata naming the new number of partitions from R on
        val meta = OperatorStateMetadataV2.metadataFilePath(op.getPath, batch)
        if (fs.exists(meta)) fs.delete(meta, false)
      }
      // the staging checkpoint of Spark's own operators (SparkOperatorsRewrite)
      val staging = new Path(new Path(root, SparkOperatorsRewrite.StagingDir), s"repartition-$batch")
      if (fs.exists(staging)) fs.delete(staging, true)
      if (!fs.delete(new Path(new Path(root, "offsets"), batch.toString), false)) {
        throw KStateErrors.invalidRepartition(s"could not delete offset log entry $batch of $root")
      }
      fs.delete(new Path(new Path(root, "offsets"), s".$batch.crc"), false)
      logWarning(s"Undid the unfinished state repartition of $root (micro-batch $batch, left by a " +
        "repartition that failed: Spark's StreamingCheckpointManager.repartition cannot move kstate " +
        "operators' state, nor state on kstate's provider; use kstate.repartition_state). The query restarts with its previous number " +
        "of state partitions.")
      batch
    }
  }

  /** Deletes the files of state version `version` in a partition directory and its store directories. */
  private def deleteVersion(fs: FileSystem, dir: Path, version: Long): Unit =
    fs.listStatus(dir).foreach { s =>
      val name = s.getPath.getName.stripPrefix(".")
      if (s.isDirectory) {
        if (!name.startsWith("_")) deleteVersion(fs, s.getPath, version)
      } else if (name.startsWith(s"$version.") || name.startsWith(s"${version}_")) {
        fs.delete(s.getPath, false)
      }
    }
}
