package org.apache.spark.sql.kstate.replica

import java.nio.charset.StandardCharsets

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.json4s._
import org.json4s.jackson.JsonMethods.parse

/**
 * What a follower reads of a query's commit log (`<checkpoint>/commits/<batchId>`, beside the
 * state directory `<checkpoint>/state`): whether a micro-batch committed. The coordinator knows
 * the version each micro-batch starts from when it is planned; the batch's own version (that
 * plus one) is final once its commit log entry exists, which the driver writes after every task
 * committed and before it plans the next batch. Reading it lets a standby hold the newest
 * version instead of the one before.
 *
 * Threading: stateless; the follower thread only.
 */
private[kstate] object CommitLogView {

  /**
   * The newest committed version of `store`, given that `planned` (the version the latest
   * planned micro-batch started from) is committed: `planned + 1` once batch `planned`
   * committed, else `planned`.
   */
  def newest(store: ReplicaStore, planned: Long, hadoopConf: Configuration): Long = {
    val commits = new Path(new Path(store.stateRoot).getParent, "commits")
    val entry = new Path(commits, planned.toString)
    if (entry.getFileSystem(hadoopConf).exists(entry)) planned + 1 else planned
  }

  /**
   * Checkpoint format v2: the checkpoint ids the query committed `version` with, from the commit
   * log entry of the micro-batch that made it (`commits/<version - 1>`, its `stateUniqueIds`:
   * operator id -> partition -> one id per store name). None for version 0, when the entry is
   * not there, and for a checkpoint of format v1 (no `stateUniqueIds`).
   */
  def checkpointIds(store: ReplicaStore, version: Long, hadoopConf: Configuration): Option[CheckpointIds] =
    if (version <= 0) None
    else {
      val entry = new Path(new Path(new Path(store.stateRoot).getParent, "commits"), (version - 1).toString)
      val fs = entry.getFileSystem(hadoopConf)
      if (!fs.exists(entry)) None
      else {
        val in = fs.open(entry)
        val text =
          try new String(in.readAllBytes(), StandardCharsets.UTF_8)
          finally in.close()
        parseIds(text)
      }
    }

  /** The `stateUniqueIds` of a commit log entry's text (a version line, then the JSON). */
  private[kstate] def parseIds(text: String): Option[CheckpointIds] = {
    val json = text.linesIterator.dropWhile(l => l.trim.isEmpty || l.startsWith("v")).mkString("\n")
    // an entry that is not JSON (none of Spark's) is read as one without ids
    val parsed = scala.util.Try(parse(json)).getOrElse(JNothing)
    parsed \ "stateUniqueIds" match {
      case JObject(ops) =>
        Some(CheckpointIds(ops.flatMap { case (op, parts) =>
          op.toLongOption.map(_ -> (parts match {
            case JArray(ps) => ps.map {
                case JArray(stores) => stores.collect { case JString(s) => s }.toVector
                case _ => Vector.empty[String]
              }.toVector
            case _ => Vector.empty[Vector[String]]
          }))
        }.toMap))
      case _ => None
    }
  }

  /** A commit log entry's checkpoint ids: operator id -> partition -> one id per store name. */
  final case class CheckpointIds(byOperator: Map[Long, Vector[Vector[String]]]) {

    /** The id of `store`'s partition (its first store: kstate's stores are `default`). */
    def of(store: ReplicaStore): Option[String] =
      byOperator.get(store.operatorId).flatMap(_.lift(store.partition)).flatMap(_.headOption)
  }
}
