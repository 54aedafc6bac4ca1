package org.apache.spark.sql.kstate.shim

import org.apache.spark.sql.execution.streaming.checkpointing.{OffsetMap, OffsetSeq, OffsetSeqLog}
import org.apache.spark.sql.internal.SQLConf

/**
 * The offset log's entries as state repartitioning reads and writes them (Spark 4.3: an entry is
 * an `OffsetSeq`, or an `OffsetMap` in offset log format 2).
 */
private[kstate] object OffsetLogs {

  /** The number of state partitions micro-batch `batchId` ran (or runs) with, if recorded. */
  def shufflePartitions(log: OffsetSeqLog, batchId: Long): Option[Int] =
    log.get(batchId).flatMap(_.metadataOpt).flatMap(_.conf.get(SQLConf.SHUFFLE_PARTITIONS.key)).flatMap(_.toIntOption)

  /**
   * Adds entry `batchId`: entry `from`'s offsets and metadata with `numPartitions` state
   * partitions. False when the entry exists already (another writer).
   */
  def addWithPartitions(log: OffsetSeqLog, from: Long, batchId: Long, numPartitions: Int): Boolean = {
    val key = SQLConf.SHUFFLE_PARTITIONS.key -> numPartitions.toString
    val entry = log.get(from).getOrElse(throw new IllegalStateException(s"no offset log entry $from"))
    val copy = entry match {
      case s: OffsetSeq =>
        val m = s.metadataOpt.getOrElse(throw new IllegalStateException(s"offset log entry $from has no metadata"))
        s.copy(metadataOpt = Some(m.copy(conf = m.conf + key)))
      case s: OffsetMap => s.copy(metadata = s.metadata.copy(conf = s.metadata.conf + key))
      case other => throw new IllegalStateException(s"unknown offset log entry ${other.getClass.getName}")
    }
    log.add(batchId, copy)
  }
}
