package org.apache.spark.sql.kstate.provider

import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.kstate.provider.StoreCounters

/**
 * The custom metrics of kstate's provider, reported per store version (progress
 * `customMetrics` and SQL metrics), and the one place that assembles them.
 */
private[kstate] object ProviderMetrics {
  private val declared = scala.collection.mutable.ArrayBuffer.empty[StateStoreCustomMetric]

  /** Declares a metric: it is reported (in [[All]], declaration order) because it is declared. */
  private def declare[M <: StateStoreCustomMetric](m: M): M = { declared += m; m }

  val DbGets = declare(StateStoreCustomSumMetric(
    "kstateStoreDbGets",
    "kstate store: lookups that reached the working copy (heap or local RocksDB)"
  ))
  val CommitMs = declare(StateStoreCustomTimingMetric(
    "kstateStoreCommitMs",
    "kstate store: time to write the changelog and apply it locally"
  ))
  val ChangelogBytes = declare(StateStoreCustomSizeMetric(
    "kstateStoreChangelogBytes",
    "kstate store: changelog bytes written"
  ))
  val ChangelogRecords = declare(StateStoreCustomSumMetric(
    "kstateStoreChangelogRecords",
    "kstate store: changelog records written"
  ))
  val SnapshotMs = declare(StateStoreCustomTimingMetric(
    "kstateStoreSnapshotMs",
    "kstate store: time to write snapshots"
  ))
  val SnapshotsWritten = declare(StateStoreCustomSumMetric(
    "kstateStoreSnapshotsWritten",
    "kstate store: snapshots written"
  ))

  /** Spark's name for it (its HDFS provider's; RocksDB's is `rocksdbForceSnapshotCount`). */
  val ForcedSnapshots = declare(StateStoreCustomSumMetric(
    "forceSnapshotCount",
    "kstate store: snapshots a commit froze because Spark asked for one (getStore's forceSnapshotOnCommit); written by kstate's snapshot thread"
  ))
  val RestoreMs = declare(StateStoreCustomTimingMetric(
    "kstateStoreRestoreMs",
    "kstate store: time to restore state from the checkpoint"
  ))
  val RestoreRecords = declare(StateStoreCustomSumMetric(
    "kstateStoreRestoreRecordsReplayed",
    "kstate store: changelog records replayed during restore"
  ))
  val RestoredFromSnapshot = declare(StateStoreCustomSumMetric(
    "kstateStoreRestoredFromSnapshot",
    "kstate store: restores that started from a snapshot"
  ))
  val RestoredFromStandby = declare(StateStoreCustomSumMetric(
    "kstateStoreRestoredFromStandby",
    "kstate store: restores that adopted a standby copy on the executor (replaying only the versions it lacked)"
  ))
  val Spills = declare(StateStoreCustomSumMetric(
    "kstateStoreSpills",
    "kstate store: times uncommitted changes were spilled from the heap to local disk"
  ))
  val SpilledRecords = declare(StateStoreCustomSumMetric(
    "kstateStoreSpilledRecords",
    "kstate store: changelog records written by spills"
  ))
  val HeapBytes = declare(StateStoreCustomSizeMetric(
    "kstateStoreHeapBytes",
    "kstate store: heap bytes (estimated) of the committed state kept on the heap"
  ))
  val DbBytes = declare(StateStoreCustomSizeMetric(
    "kstateStoreDbBytes",
    "kstate store: bytes in its local RocksDB, the disk tier (files and memtables: state off the heap, spilled changes)"
  ))

  /** Every declared metric (Spark's `supportedCustomMetrics`). */
  val All: Seq[StateStoreCustomMetric] = declared.toSeq

  /** Snapshots written since a store last reported them; `forced` of them at a commit Spark asked to snapshot. */
  final case class SnapshotWork(written: Long, nanos: Long, forced: Long = 0L) {
    def +(o: SnapshotWork): SnapshotWork = SnapshotWork(written + o.written, nanos + o.nanos, forced + o.forced)
  }
  val NoSnapshots: SnapshotWork = SnapshotWork(0, 0)

  /**
   * Everything a store version reports: its own counters, the restore and the snapshots not yet
   * reported by an earlier version, and where the working copy (if any) lives.
   */
  def of(
      c: StoreCounters,
      restore: Option[RestoreInfo],
      snapshots: SnapshotWork,
      copy: Option[WorkingCopy],
      numKeys: Long
  ): StateStoreMetrics = {
    val custom: Map[StateStoreCustomMetric, Long] = Map(
      DbGets -> c.dbGets,
      CommitMs -> c.commitNanos / 1000000,
      ChangelogBytes -> c.changelogBytes,
      ChangelogRecords -> c.changelogRecords,
      SnapshotMs -> snapshots.nanos / 1000000,
      SnapshotsWritten -> snapshots.written,
      ForcedSnapshots -> snapshots.forced,
      RestoreMs -> restore.map(_.millis).getOrElse(0L),
      RestoreRecords -> restore.map(_.recordsReplayed).getOrElse(0L),
      RestoredFromSnapshot -> restore.count(_.snapshotVersion.isDefined).toLong,
      RestoredFromStandby -> restore.count(_.standbyVersion.isDefined).toLong,
      Spills -> c.spills,
      SpilledRecords -> c.spilledRecords,
      HeapBytes -> copy.map(_.heapBytes).getOrElse(0L),
      DbBytes -> copy.map(_.dbBytes).getOrElse(0L)
    )
    StateStoreMetrics(numKeys, copy.map(_.memoryBytes).getOrElse(0L), custom)
  }
}
