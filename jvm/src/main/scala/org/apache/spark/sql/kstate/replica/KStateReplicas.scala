package org.apache.spark.sql.kstate.replica

import java.util.concurrent.ConcurrentHashMap

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration

import org.apache.spark.internal.Logging
import org.apache.spark.sql.kstate.provider.KStateStoreProvider
import org.apache.spark.sql.kstate.provider.{CheckpointFiles, Restore, WorkingCopy}
import org.apache.spark.sql.kstate.replica.ReplicaProtocol.Standby
import org.apache.spark.sql.kstate.engine.{HeapStateBudget, LocalDb, StateFileIdentity}

/**
 * This executor's standby copies (docs/replicas.md, "Where a standby lives"), outside Spark's
 * state store registry so that Spark's maintenance never unloads them, and the stores whose
 * active provider is on this executor (no standby of those is kept here).
 *
 * Life of a copy: created and kept current by [[follow]] (the follower thread) while the
 * coordinator assigns it here (a standby, or a warm-up before a move); dropped when it no longer
 * does, or when a provider of the same store becomes active here; taken whole by [[adopt]] when
 * a task of its store runs here.
 *
 * A provider that stays loaded here after its store moved to another executor (Spark unloads it
 * at its next maintenance) no longer counts as active once the coordinator's committed version
 * passed the version it holds: the coordinator never places a copy on a store's active
 * executor, so a copy assigned here means the store moved away, and this executor keeps it.
 *
 * Threading: the maps are concurrent; a copy's contents change only under its own lock
 * ([[StandbyCopy]]). A provider calls [[activate]] before [[adopt]], so the follower, which
 * checks the active stores before it creates a copy, does not rebuild what was just adopted.
 */
private[kstate] object KStateReplicas extends Logging {
  private val copies = new ConcurrentHashMap[ReplicaStore, StandbyCopy]()
  private val active = new ConcurrentHashMap[ReplicaStore, Active]()
  @volatile private var following = false

  /** Whether a follower runs in this JVM (kstate's plugin on this executor). */
  def enabled: Boolean = following

  private[kstate] def start(): Unit = following = true

  /** The follower stopped: every copy is dropped. */
  private[kstate] def stop(): Unit = {
    following = false
    copies.keySet().asScala.toList.foreach(drop)
  }

  /** Whether this executor keeps a standby copy of `store` (holding a version or not yet). */
  def holds(store: ReplicaStore): Boolean = copies.containsKey(store)

  /** The committed version each copy holds (copies that hold none yet are left out). */
  def holdings: Map[ReplicaStore, Long] =
    copies.values().asScala.map(c => c.store -> c.version).filter(_._2 >= 0).toMap

  /**
   * The version each provider loaded here holds, for the stores with no copy here. Spark hands a
   * loaded provider to its store's next task on this executor, which reuses it only when it holds
   * exactly the version the task starts from (else it restores), so the coordinator may move a
   * store here on it only at that version.
   */
  def loaded: Map[ReplicaStore, Long] =
    active.asScala.iterator.filterNot { case (s, _) => copies.containsKey(s) }
      .map { case (s, a) => s -> a.version() }.filter(_._2 >= 0).toMap

  /**
   * A provider of `store` is active on this executor from now (before it restores and
   * [[adopt]]s): the follower keeps no copy of it here while the provider is current.
   *
   * @param version the version the provider holds or is restoring
   */
  def activate(store: ReplicaStore, provider: AnyRef, version: () => Long): Unit =
    active.put(store, new Active(provider, version))

  /** `provider` is no longer active here (closed). */
  def deactivate(store: ReplicaStore, provider: AnyRef): Unit =
    active.computeIfPresent(store, (_, a) => if (a.provider eq provider) null else a)

  /**
   * The standby copy of `store`, brought to `version`, for a provider restoring `version`; None
   * when there is none here or it cannot serve `version` (the provider then restores from the
   * checkpoint). A failure to bring it up to date is logged, never thrown.
   *
   * @param checkpointId checkpoint format v2: Some(the id of `version`) (None inside for version
   *                     0); the copy is adopted only when it holds a version on that id's lineage.
   *                     None: format v1.
   */
  def adopt(
      store: ReplicaStore,
      version: Long,
      countRows: Boolean,
      checkpointId: Option[Option[String]] = None
  ): Option[(WorkingCopy, Restore)] =
    Option(copies.remove(store)) match {
      case None =>
        if (following && version > 0) logInfo(s"no standby of $store on this executor to adopt at version $version " +
          s"(copies here: ${copies.keySet().asScala.map(_.partition).toSeq.sorted.mkString(",")})")
        None
      case Some(c) =>
        val held = c.version
        try {
          val r =
            c.take(version, countRows, checkpointId.fold[StandbyCopy.Wanted](StandbyCopy.FormatV1)(StandbyCopy.WithId))
          if (r.isEmpty) logInfo(s"the standby of $store (at version $held) cannot serve version $version" +
            checkpointId.flatten.fold("")(i => s" with checkpoint id $i") +
            " (ahead of it, or of another lineage); restoring from the checkpoint")
          r
        } catch {
          case NonFatal(e) =>
            logWarning(
              s"the standby of $store could not be adopted at version $version; restoring from the checkpoint",
              e
            )
            None
        }
    }

  /**
   * Makes this executor's copies what the coordinator `assigned`: drops the others, creates the
   * missing ones and brings each to its newest committed version (the assigned one, or the
   * next when the query's commit log shows that batch committed: [[CommitLogView]]). A copy that fails is dropped and
   * counted, never thrown: a standby never fails a query.
   */
  def follow(assigned: Seq[Standby], hadoopConf: Configuration): FollowStep = {
    val wanted = assigned.filterNot(a => Option(active.get(a.store)).exists(_.version() >= a.committedVersion))
    val keep = wanted.map(_.store).toSet
    copies.keySet().asScala.toList.filterNot(keep).foreach(drop)
    var step = FollowStep.None
    // one commit log lookup per query and version, not per store: every store of a query
    // shares the answer
    val newest = scala.collection.mutable.Map.empty[(String, Long), Long]
    val ids = scala.collection.mutable.Map.empty[(String, Long), Option[CommitLogView.CheckpointIds]]
    wanted.foreach { a =>
      val c = copies.computeIfAbsent(a.store, s => newCopy(s, hadoopConf))
      try {
        val target = newest.getOrElseUpdate(
          (a.store.stateRoot, a.committedVersion),
          CommitLogView.newest(a.store, a.committedVersion, hadoopConf)
        )
        // checkpoint format v2: the id the commit log recorded for that version
        val id =
          ids.getOrElseUpdate((a.store.stateRoot, target), CommitLogView.checkpointIds(a.store, target, hadoopConf))
            .flatMap(_.of(a.store))
        val r = c.catchUp(target, id)
        step = step.add(r.rebuilt, r.recordsReplayed, failed = false)
      } catch {
        case NonFatal(e) =>
          logWarning(s"the standby of ${a.store} could not catch up to version ${a.committedVersion}; dropped", e)
          copies.remove(a.store, c)
          c.close()
          step = step.add(rebuilt = false, 0L, failed = true)
      }
    }
    step
  }

  private final class Active(val provider: AnyRef, val version: () => Long)

  private def drop(store: ReplicaStore): Unit = Option(copies.remove(store)).foreach(_.close())

  private def newCopy(store: ReplicaStore, hadoopConf: Configuration): StandbyCopy = {
    val id = store.storeId
    val files = new CheckpointFiles(id.storeCheckpointLocation(), hadoopConf, StateFileIdentity.of(id))
    val limit = HeapStateBudget.defaultLimit
    new StandbyCopy(
      store,
      files,
      () =>
        new WorkingCopy(
          limit > 0,
          limit,
          () => KStateStoreProvider.localRoot,
          (db: LocalDb, b) => db.writeBatch(b),
          s"standby of $store"
        ),
      countRows = false
    )
  }

  /** What one [[follow]] did: copies rebuilt from the checkpoint, records replayed, failures. */
  final case class FollowStep(rebuilt: Int, recordsReplayed: Long, failed: Int) {
    def add(rebuilt: Boolean, records: Long, failed: Boolean): FollowStep =
      FollowStep(
        this.rebuilt + (if (rebuilt) 1 else 0),
        recordsReplayed + records,
        this.failed + (if (failed) 1 else 0)
      )
  }

  object FollowStep { val None: FollowStep = FollowStep(0, 0L, 0) }
}
