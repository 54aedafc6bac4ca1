package org.apache.spark.sql.kstate.reader

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.classic.{SparkSession => ClassicSession}
import org.apache.spark.sql.execution.streaming.checkpointing.{CheckpointFileManager, CommitLog, OffsetSeqLog}
import org.apache.spark.sql.kstate.config.KStateConf
import org.apache.spark.sql.kstate.planning.OperatorIdentity

/**
 * A read-only view of a streaming query's checkpoint directory: which micro-batches committed,
 * the SQL configuration the offset log recorded for a batch, and which kstate operators keep
 * state under `state/`.
 *
 * Contract:
 *  - Nothing here creates, changes or deletes anything in the checkpoint (Spark's metadata logs
 *    are opened read-only); a missing directory reads as empty.
 *  - `root` is qualified (scheme and authority), so state paths derived from it are the ones
 *    the query used.
 */
final class CheckpointView(session: ClassicSession, location: String) {
  val hadoopConf: Configuration = session.sessionState.newHadoopConf()

  val root: Path = {
    val p = new Path(location)
    p.getFileSystem(hadoopConf).makeQualified(p)
  }

  /** `<root>/state`: the root of every operator's state (a StateStoreId's checkpoint root). */
  val stateRoot: Path = new Path(root, "state")

  private val fm = CheckpointFileManager.create(root, hadoopConf)
  private val commitsDir = new Path(root, "commits")
  private val offsetsDir = new Path(root, "offsets")

  private lazy val commitLog: Option[CommitLog] =
    if (fm.exists(commitsDir)) Some(new CommitLog(session, commitsDir.toString, true)) else None

  /**
   * Ids of the committed micro-batches still in the commit log, ascending: its files named by
   * a batch id (written atomically, so a listed file is complete).
   */
  lazy val committedBatches: Seq[Long] =
    if (commitLog.isEmpty) Nil
    else fm.list(commitsDir).filter(_.isFile).flatMap(_.getPath.getName.toLongOption).toSeq.sorted

  def isCommitted(batchId: Long): Boolean = commitLog.exists(_.get(batchId).isDefined)

  /**
   * The checkpoint ids micro-batch `batchId` committed (Spark's state checkpoint format v2: the
   * commit log entry's `stateUniqueIds`, operator id -> partition -> one id per store name), or
   * None for a checkpoint of format v1 (or an entry that is not there).
   */
  def checkpointIds(batchId: Long): Option[Map[Long, Array[Array[String]]]] =
    commitLog.flatMap(_.get(batchId)).flatMap(_.stateUniqueIds)
      .map(_.iterator.map { case (op, ids) => op.toString.toLong -> ids }.toMap)

  /** The state checkpoint format version micro-batch `batchId` committed with, if committed. */
  def commitFormatVersion(batchId: Long): Option[Int] = commitLog.flatMap(_.get(batchId)).map(_.version)

  /** The SQL configuration the offset log recorded for `batchId` (empty if none). */
  def recordedConf(batchId: Long): Map[String, String] =
    if (!fm.exists(offsetsDir)) Map.empty
    else new OffsetSeqLog(session, offsetsDir.toString, true)
      .offsetSeqMetadataForBatchId(batchId).map(_.conf).getOrElse(Map.empty)

  /** Every operator with a state directory under `state/`, by operator id. */
  def operatorIds: Seq[Long] = childNames(stateRoot).flatMap(_.toLongOption).sorted

  /** kstate operators with a state directory under `state/`, by operator id. */
  def kstateOperators: Seq[RecordedOperator] =
    operatorIds.filter(OperatorIdentity.isKStateOperatorId).map { id =>
      val config = OperatorIdentity.readConfig(new Path(stateRoot, id.toString), hadoopConf)
      RecordedOperator(id, config.getOrElse(Map.empty))
    }

  /** Spark's own stateful operators with a state directory under `state/`, by operator id. */
  def sparkOperatorIds: Seq[Long] = operatorIds.filterNot(OperatorIdentity.isKStateOperatorId)

  /** Whether the last committed micro-batch ran with kstate's provider as the query-wide one. */
  def keptByKStateProvider: Boolean =
    committedBatches.lastOption.flatMap(b => recordedConf(b).get(SQLConf.STATE_STORE_PROVIDER_CLASS.key))
      .contains(KStateConf.StateStoreProvider.default)

  /** Partition directories of an operator's state: the highest partition number + 1. */
  def partitionDirectories(operatorId: Long): Int = {
    val parts = childNames(new Path(stateRoot, operatorId.toString)).flatMap(_.toIntOption)
    if (parts.isEmpty) 0 else parts.max + 1
  }

  private def childNames(dir: Path): Seq[String] =
    if (!fm.exists(dir)) Nil else fm.list(dir).filter(_.isDirectory).map(_.getPath.getName).toSeq
}
