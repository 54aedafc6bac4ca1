package org.apache.spark.sql.kstate.provider

import java.io.File
import java.util.UUID
import java.util.concurrent.ConcurrentHashMap

import scala.util.control.NonFatal

import org.apache.spark.sql.kstate.config.KStateConf
import org.apache.spark.sql.kstate.errors.KStateErrors
import org.apache.hadoop.conf.Configuration
import org.rocksdb.WriteBatch

import org.apache.spark.{SparkEnv, TaskContext}
import org.apache.spark.internal.Logging
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.kstate.shim.SplitMaintenance

import org.apache.spark.sql.kstate.provider.ProviderState._
import org.apache.spark.sql.kstate.replica.{KStateReplicas, ReplicaStore}
import org.apache.spark.sql.kstate.engine._
import org.apache.spark.sql.kstate.engine.StateFile.LineageEntry
import org.apache.spark.sql.types.StructType
import org.apache.spark.util.Utils

/**
 * kstate's state store provider: a working copy per store ([[WorkingCopy]]: on the heap while it
 * fits the executor's heap state budget, else a local RocksDB), made durable by a changelog per
 * committed version and snapshots written by maintenance, in the store's checkpoint directory
 * ([[CheckpointFiles]]). Its life cycle is a [[ProviderState]] (CREATED, EMPTY, LOADED(v),
 * SPILLED(v, store), CLOSED) changed only by [[ProviderLifecycle.moveTo]].
 *
 * Both of Spark's state checkpoint formats: v1 names a version by its number; v2
 * (`checkpointIds`) by its number and the checkpoint id of the commit that made it, files
 * `<v>_<id>` with the changelog's lineage, restored by (version, id) from the files alone
 * ([[CheckpointLineage]]) and cleaned up along the committed chain
 * ([[RetentionRule.deleteWithIds]]); docs/state-store.md, "Checkpoint format v2".
 *
 * Set it query-wide with `spark.sql.streaming.stateStore.providerClass=io.kstate.KStateStoreProvider`
 * (it then serves Spark's own operators too); kstate operators use it through
 * `spark.kstate.stateStore.providerClass`.
 *
 * Threading model (docs/state-store.md, "Threading"). These threads touch a provider:
 *  - the '''task thread''' of the micro-batch that owns the partition: `getStore`, a store's reads
 *    and writes, `commit`, `abort`, spills (and `close` for providers a reader opens itself);
 *  - Spark's '''maintenance thread''': `doMaintenance` (snapshot, then delete obsolete files; Spark
 *    4.2, and 4.3 when it unloads a provider), or its two halves `doSnapshotMaintenance` and
 *    `doCleanupMaintenance` (Spark 4.3's periodic maintenance, possibly on two threads at once:
 *    [[SplitMaintenance]]; kstate runs one maintenance step of a provider at a time), and
 *    `close` of a provider Spark unloads;
 *  - the '''forced snapshot writer''' ([[ForcedSnapshots]]): writes the snapshot Spark asked a
 *    commit for (`forceSnapshotOnCommit`) from a view the committing task froze, like
 *    maintenance's snapshot half;
 *  - later, a '''replica follower thread''' that reads new changelogs and applies them
 *    to a standby's working copy: it will change the working copy only through the same lock and
 *    life cycle as a commit (a transition LOADED(v) -> LOADED(v + 1)), and read files only
 *    through [[CheckpointFiles]].
 * The rules:
 *  - Set once by `init`, before Spark shares the provider, then only read (any thread):
 *    `storeId`, `storeConf`, `hadoopConf`, `files`, `tiering`'s limit, `countsRows`,
 *    `maxWriteSetBytes`, `keySchema`-derived codecs (`codecs` is a concurrent map: stores
 *    register families).
 *  - Guarded by the provider's lock (`this`): every life-cycle transition (checked:
 *    [[ProviderLifecycle.moveTo]] throws outside the lock), and `registry`, `numKeys`,
 *    `lastSnapshotVersion`, `usableSnapshots`, `staleSnapshots`, `restores`, `snapshotting`,
 *    `unreportedSnapshots`, `unreportedRestore`, the tiering bound. `getStore`, `commit`,
 *    `spill`, `abandon`, `boundHeap`, `close` run entirely under it.
 *  - The working copy's contents change only on the task thread under the lock (restore,
 *    commit, spill); the task thread reads them without the lock (gets and scans of its store:
 *    `state` is volatile). Another thread reads a working copy only through a frozen view
 *    ([[WorkingCopy.frozen]]) taken under the lock.
 *  - Maintenance (and the forced snapshot writer) holds the lock only to take that view (the
 *    writer's is taken by the committing task), to publish the snapshot (an atomic
 *    rename) and to delete obsolete files; it writes the snapshot and verifies files without
 *    it. So a commit waits at most for a view (a copy of the heap copy's hash slots, or a
 *    RocksDB snapshot), a rename or a few deletes, never for a snapshot being written.
 */
class KStateStoreProvider extends StateStoreProvider with SplitMaintenance with Logging {
  import KStateStoreProvider._

  // ---- set once by init --------------------------------------------------------------------
  @volatile private var storeId: StateStoreId = _
  private var storeConf: StateStoreConf = _
  private var hadoopConf: Configuration = _
  private var files: CheckpointFiles = _
  private[kstate] var countsRows: Boolean = true

  /**
   * Spark's state checkpoint format v2 (`spark.sql.streaming.stateStore.checkpointFormatVersion`
   * 2): every version is a (version, checkpoint id) pair, files are named by both, and a commit
   * reports its id ([[KStateStore.getStateStoreCheckpointInfo]]); docs/state-store.md.
   */
  private[kstate] var checkpointIds: Boolean = false
  private[kstate] var maxWriteSetBytes: Long = KStateConf.MaxWriteSetBytes.default

  /** Whether snapshots may be table files ([[KStateConf.TableSnapshots]]). */
  private var tableSnapshots: Boolean = KStateConf.TableSnapshots.default

  /** Entries above which a restore builds the heap copy in the background ([[KStateConf.BackgroundHeapRestoreAbove]]). */
  private var backgroundHeapRestoreAbove: Long = KStateConf.BackgroundHeapRestoreAbove.default
  private var tiering = new TieringPolicy(HeapStateBudget.defaultLimit)
  private val codecs = new ConcurrentHashMap[String, FamilyCodec]()

  // ---- guarded by this ---------------------------------------------------------------------
  private val lifecycle = new ProviderLifecycle(this)
  private var registry: FamilyRegistry = _
  private var numKeys: Long = 0

  /** The newest snapshot this provider restored from or wrote. */
  private var lastSnapshotVersion: Long = 0

  /** Snapshots known to read whole (restored from or written here): retention may rely on them. */
  private var usableSnapshots: Set[Long] = Set.empty

  /** Snapshots above the restored version: a re-run is rewriting those versions (see commit). */
  private var staleSnapshots: Set[Long] = Set.empty

  /** Restores so far: a snapshot taken before a restore is not published after it. */
  private var restores: Long = 0
  // format v2 only:
  /** The checkpoint id of the version the working copy holds (None: version 0, or format v1). */
  private var loadedId: Option[String] = None

  /**
   * The (version, id) of the loaded version and the versions below it, back to where its restore
   * started (or to the base retention kept, at most [[MaxChain]] entries): what the next commit's
   * changelog records as its lineage, and where retention looks for its base snapshot.
   */
  private var chain: Vector[LineageEntry] = Vector.empty

  /**
   * The newest version Spark asked for by its id (`getStore(v, Some(id))`): Spark hands out only
   * committed ids, so it and its chain are committed; the versions this provider committed after
   * it may not be (another attempt may be the one Spark records).
   */
  private var committedTip: Option[LineageEntry] = None

  /** Snapshots known to read whole (restored from or written here), by (version, id). */
  private var usableIdSnapshots: Set[LineageEntry] = Set.empty
  private var snapshotting = false
  private var unreportedSnapshots = ProviderMetrics.NoSnapshots
  private var unreportedRestore: Option[RestoreInfo] = None
  @volatile private var lastRestoreInfo: Option[RestoreInfo] = None

  /** Entries in the last committed version's write set: the next one's initial capacity. */
  @volatile private[kstate] var writeSetSizeHint: Int = 0

  /** This store as standby replicas know it: only in a query (its operators pass the query id). */
  private var replicaStore: Option[ReplicaStore] = None

  /** The version this provider holds or is restoring, for [[KStateReplicas]] (-1: none yet). */
  @volatile private var replicaVersion: Long = -1L

  /**
   * The `loadEmpty` store whose writes the working copy holds until it commits (the copy is not
   * a committed version meanwhile: any other store reloads); null when none.
   */
  private var emptyVersionStore: KStateStore = null

  /**
   * Format v1: the checksum of the changelog of the loaded version when this provider committed
   * it (None after a restore): tells whether that changelog on disk is still this write, i.e.
   * whether the checkpoint's later versions continue this working copy ([[catchUp]]).
   */
  private var committedChangelog: Option[Int] = None

  override def init(
      stateStoreId: StateStoreId,
      keySchema: StructType,
      valueSchema: StructType,
      keyStateEncoderSpec: KeyStateEncoderSpec,
      useColumnFamilies: Boolean,
      storeConfs: StateStoreConf,
      hadoopConf: Configuration,
      useMultipleValuesPerKey: Boolean,
      stateSchemaProvider: Option[StateSchemaProvider]
  ): Unit = synchronized {
    this.checkpointIds = storeConfs.enableStateStoreCheckpointIds
    this.storeId = stateStoreId
    this.storeConf = storeConfs
    this.hadoopConf = hadoopConf
    this.countsRows = setting(TrackRowsKey).forall(_.trim.toBoolean)
    this.maxWriteSetBytes = setting(KStateConf.MaxWriteSetBytes.key)
      .map(KStateConf.MaxWriteSetBytes.parse).getOrElse(KStateConf.MaxWriteSetBytes.default)
    this.tiering = new TieringPolicy(setting(KStateConf.HeapStateBytes.key)
      .map(KStateConf.HeapStateBytes.parse).filter(_ >= 0).getOrElse(HeapStateBudget.defaultLimit))
    this.tableSnapshots = setting(KStateConf.TableSnapshots.key)
      .map(KStateConf.TableSnapshots.parse).getOrElse(KStateConf.TableSnapshots.default)
    this.backgroundHeapRestoreAbove = setting(KStateConf.BackgroundHeapRestoreAbove.key)
      .map(KStateConf.BackgroundHeapRestoreAbove.parse).getOrElse(KStateConf.BackgroundHeapRestoreAbove.default)
    this.files = new CheckpointFiles(
      stateStoreId.storeCheckpointLocation(),
      hadoopConf,
      StateFileIdentity.of(stateStoreId)
    )
    registerCodec(new FamilyCodec(
      0,
      StateStore.DEFAULT_COL_FAMILY_NAME,
      keySchema,
      valueSchema,
      keyStateEncoderSpec,
      useMultipleValuesPerKey
    ))
    this.replicaStore = setting(QueryIdKey).map(ReplicaStore.of(_, stateStoreId))
    lifecycle.moveTo(Empty)
  }

  override def stateStoreId: StateStoreId = storeId

  private[kstate] def hadoopConfiguration: Configuration = hadoopConf

  /** The life-cycle state (any thread; for stores' error messages and tests). */
  private[kstate] def state: ProviderState = lifecycle.current

  /**
   * The store at `version`. Spark's third and fourth arguments (the same in Spark 4.2 and 4.3):
   * `forceSnapshotOnCommit`, the store's commit also writes the new version's snapshot (counted
   * in `forceSnapshotCount`); `loadEmpty`: an empty store at `version`, whatever the checkpoint
   * holds (Spark's state rewrite, behind its checkpoint repartition, writes a partition's whole
   * new state into it): its commit writes version + 1 as a snapshot and nothing else, a file that
   * depends on no earlier one ([[commitFromEmpty]]).
   *
   * `uniqueId`, checkpoint format v2: the checkpoint id of the commit that made `version` (Spark
   * passes the one its commit log recorded; None for version 0). Exactly that attempt's state
   * is loaded. An id with format v1 is the Spark 4.2 case of a format-v2 checkpoint restarted
   * with format 1: `KSTATE_UNSUPPORTED_CHECKPOINT_FORMAT`.
   */
  override def getStore(
      version: Long,
      uniqueId: Option[String],
      forceSnapshotOnCommit: Boolean,
      loadEmpty: Boolean
  ): KStateStore = synchronized {
    if (uniqueId.isDefined && !checkpointIds) {
      throw KStateErrors.checkpointFormatChanged(s"the state store at ${files.dir}", version, written = 2, asked = 1)
    }
    if (version < 0) throw new IllegalArgumentException(s"version cannot be negative: $version")
    if (loadEmpty) return emptyStore(version)
    if (emptyVersionStore != null) discard() // the working copy holds a loadEmpty store's writes
    ensureLoaded(version, uniqueId)
    if (uniqueId.isDefined) committedTip = Some(LineageEntry(version, uniqueId.get))
    val store = new KStateStore(this, version, registry)
    store.baseId = loadedId
    store.forceSnapshotOnCommit = forceSnapshotOnCommit
    store
  }

  /** `loadEmpty`: EMPTY at `version` -> LOADED(version) with an empty working copy, no lineage. */
  private def emptyStore(version: Long): KStateStore = {
    requireOpen()
    discard()
    restores += 1 // a snapshot being written of what was loaded must not be published
    val copy = newWorkingCopy()
    registry = FamilyRegistry.initial(StateStore.DEFAULT_COL_FAMILY_NAME)
    numKeys = 0L
    loadedId = None
    chain = Vector.empty
    committedChangelog = None
    staleSnapshots = Set.empty
    lifecycle.moveTo(Loaded(version, copy))
    val store = new KStateStore(this, version, registry)
    store.fromEmpty = true
    emptyVersionStore = store
    store
  }

  override def close(): Unit = synchronized {
    if (lifecycle.current != Closed) {
      discard()
      // a snapshot still being written or queued (ForcedSnapshots) is not published once closed:
      // a re-run of its version by the provider that opens the checkpoint next must not meet it
      restores += 1
      lifecycle.moveTo(Closed)
      replicaStore.foreach(KStateReplicas.deactivate(_, this))
    }
  }

  override def toString: String = s"KStateStoreProvider[$storeId]"

  // ---- restore -----------------------------------------------------------------------------

  /** Whether `copy` on the heap fits the executor's heap state budget and the store's own bound. */
  private def heapFits(copy: WorkingCopy): () => Boolean = () => copy.fitsBudget() && tiering.admits(copy.heapBytes)

  /** Fails on a provider that is closed or not initialised. */
  private def requireOpen(): Unit = lifecycle.current match {
    case Closed => throw new IllegalStateException(s"$this is closed")
    case Created => throw new IllegalStateException(s"$this is not initialised")
    case _ =>
  }

  /** An empty working copy, on the heap when tiering starts there. */
  private def newWorkingCopy(): WorkingCopy =
    new WorkingCopy(
      tiering.startsOnHeap,
      tiering.heapStateLimit,
      () => localRoot,
      writeLocally,
      toString,
      if (tableSnapshots) backgroundHeapRestoreAbove else -1L
    )

  private def ensureLoaded(version: Long, id: Option[String]): Unit = lifecycle.current match {
    case Closed | Created => requireOpen()
    case Spilled(v, _, spill)
        if v != version || loadedId != id || spill.taskAttempt.isEmpty ||
          spill.taskAttempt != currentTask =>
      // A store of this partition spilled and was neither committed nor aborted, and this is
      // another task (its task died) or another version: its changes are in the working copy,
      // so it no longer holds any version.
      discard()
      restoreTo(version, id)
    case Loaded(v, copy) if v != version || loadedId != id =>
      // an earlier version of the checkpoint's lineage: replay only the changelogs after it;
      // else (a later version, format v2's same version of another attempt) another state
      if (!catchUp(v, copy, version, id)) {
        discard()
        restoreTo(version, id)
      }
    case Empty => restoreTo(version, id)
    case Loaded(_, copy) =>
      // LOADED(version): reuse, no I/O; on the heap now if its background build is ready (or
      // the build starts, if the restoring store did not commit)
      copy.adoptRebuiltHeap(tiering.admits)
      copy.startDeferredHeapRebuild(tiering.admits)
    case _ => // SPILLED(version) by this task: reuse, no I/O
  }

  /**
   * EMPTY -> LOADED(version): adopts this executor's standby copy of the store when it has one
   * that can serve `version` (replaying only the versions it lacks), else restores from the
   * checkpoint. On failure the half-built copy is dropped and it stays EMPTY.
   */
  private def restoreTo(version: Long, id: Option[String]): Unit = {
    restores += 1
    committedChangelog = None
    val adopted = if (!KStateReplicas.enabled) None
    else replicaStore.flatMap { s =>
      replicaVersion = version
      KStateReplicas.activate(s, this, () => replicaVersion)
      KStateReplicas.adopt(s, version, countsRows, if (checkpointIds) Some(id) else None)
    }
    val (copy, r) = adopted.getOrElse {
      val copy = newWorkingCopy()
      val fits = heapFits(copy)
      val r =
        try {
          if (checkpointIds) Restore.withId(files, version, id, copy, fits, countsRows)
          else Restore(files, version, copy, fits, countsRows)
        } catch {
          case NonFatal(e) => copy.close(); throw e
        }
      (copy, r)
    }
    registry = r.registry
    numKeys = r.numKeys
    lastSnapshotVersion = r.info.snapshotVersion.getOrElse(0L)
    loadedId = id
    chain = r.chain
    if (checkpointIds) {
      usableIdSnapshots ++= r.info.snapshotVersion.flatMap(v => r.chain.find(_.version == v))
    } else usableSnapshots ++= r.info.snapshotVersion
    staleSnapshots = r.staleAbove
    lifecycle.moveTo(Loaded(version, copy))
    lastRestoreInfo = Some(r.info)
    if (version > 0) unreportedRestore = Some(r.info)
    logDebug(s"$this restored ${r.info}")
  }

  /**
   * LOADED(v) -> LOADED(version), v < version, when the checkpoint's versions after v continue
   * this working copy: replays only the changelogs v + 1 .. version into it, as a standby copy
   * catches up, instead of a restore from the checkpoint. This provider held its store at v and
   * the store ran on another executor since (a failover, a move, or a task Spark's scheduler
   * placed elsewhere) and came back. Continues v's lineage: format v1, the changelog of v on disk
   * is the one this provider committed (same checksum; a re-run of that micro-batch rewrote it
   * otherwise); format v2, (v, its id) is on the lineage of (version, id). False when it cannot
   * (the caller restores): another lineage, a later version, a standby copy of the store on this
   * executor (adopted instead: it is kept current), or a failed replay (the copy is dropped).
   */
  private def catchUp(v: Long, copy: WorkingCopy, version: Long, id: Option[String]): Boolean = {
    val standbyHere = KStateReplicas.enabled && replicaStore.exists(KStateReplicas.holds)
    val onLineage = v < version && !standbyHere && (
      if (checkpointIds) id.isDefined && (v == 0 || loadedId.isDefined)
      else v == 0 || committedChangelog.exists(c => files.checksum(StateFile.Changelog, v).contains(c))
    )
    if (!onLineage) return false
    val started = System.nanoTime()
    replicaVersion = version
    val fits = heapFits(copy)
    val base = Restore.Base(v, registry, numKeys, loadedId)
    val caught =
      try Restore.onto(
          files,
          base,
          version,
          copy,
          fits,
          countsRows,
          standby = false,
          if (checkpointIds) id else None
        )
      catch {
        case NonFatal(e) =>
          logWarning(s"$this could not catch up from version $v to $version; restoring from the checkpoint", e)
          discard()
          return false
      }
    caught.exists { r =>
      restores += 1
      registry = r.registry
      numKeys = r.numKeys
      loadedId = id
      committedChangelog = None
      if (checkpointIds) chain = (chain.filter(_.version <= v) ++ r.chain.filter(_.version > v)).takeRight(MaxChain)
      else staleSnapshots = r.staleAbove
      lifecycle.moveTo(Loaded(version, copy))
      val info = r.info.copy(caughtUpFrom = Some(v), millis = (System.nanoTime() - started) / 1000000)
      lastRestoreInfo = Some(info)
      unreportedRestore = Some(info)
      logInfo(s"$this caught up from version $v to $version: ${r.info.recordsReplayed} records replayed")
      true
    }
  }

  /** LOADED | SPILLED -> EMPTY: drops the working copy (and a pending changelog). */
  private def discard(): Unit = {
    emptyVersionStore = null
    lifecycle.current match {
      case Loaded(_, copy) =>
        committedChangelog = None
        copy.close()
        lifecycle.moveTo(Empty)
      case Spilled(_, copy, spill) =>
        spill.cancel().foreach(e => logWarning(s"$this: cancelling ${spill.file}", e))
        copy.close()
        lifecycle.moveTo(Empty)
      case _ =>
    }
  }

  // ---- tiering -----------------------------------------------------------------------------

  /** Whether the working copy is on the heap (for tests and metrics). */
  private[kstate] def onHeap: Boolean = lifecycle.current.workingCopy.exists(_.onHeap)

  /**
   * `store` bounds its heap to `maxBytes` (a time-ordered buffer that spills to disk): its
   * committed contents stay on the heap only while they take at most half of it, so a small
   * buffer keeps the heap copy's speed and a large one lives in RocksDB, within the bound
   * either way. A failure discards the working copy and fails like a spill.
   */
  private[kstate] def boundHeap(store: KStateStore, maxBytes: Long): Unit = synchronized {
    tiering.bound(maxBytes)
    lifecycle.current.workingCopy.foreach(keepWithinBound(store, _))
  }

  /** Moves a bounded store's heap copy to RocksDB (for good) once it outgrew its share. */
  private def keepWithinBound(store: KStateStore, copy: WorkingCopy): Unit =
    if (tiering.leaveHeap(copy)) {
      try copy.moveToDb()
      catch {
        case NonFatal(e) =>
          discard()
          throw KStateErrors.stateSpillFailed(store.id.toString, store.version, localRoot.toString, e)
      }
    }

  /**
   * Heap the committed working copy takes for a store with a bounded heap (counted against its
   * bound by the write set's spill check), 0 otherwise.
   */
  private[kstate] def heapCopyBytesWithin: Long =
    if (!tiering.bounded) 0L else synchronized(lifecycle.current.workingCopy.map(_.heapBytes).getOrElse(0L))

  /** The working copy's background heap build under way or ready, if any (for tests). */
  private[kstate] def heapRebuild: Option[HeapRebuild] =
    synchronized(lifecycle.current.workingCopy.flatMap(_.heapRebuild))

  /** Bytes this provider holds of the executor's heap state budget (for tests). */
  private[kstate] def heapReservedBytes: Long =
    synchronized(lifecycle.current.workingCopy.map(_.reservedBytes).getOrElse(0L))

  /** The heap a restore estimates for this provider's heap copy (0 in RocksDB; for tests). */
  private[kstate] def heapRestoreEstimate: Long =
    synchronized(lifecycle.current.workingCopy.map(_.restoreEstimate).getOrElse(0L))

  // ---- a store's reads ---------------------------------------------------------------------

  /**
   * Whether `store` can still read its version: the working copy holds its base version, and
   * its spills if it spilled (a store that did not spill reads the base view meanwhile).
   */
  private[kstate] def holds(store: KStateStore): Boolean =
    (if (store.fromEmpty) emptyVersionStore eq store else emptyVersionStore == null) && (lifecycle.current match {
      case Loaded(v, _) => v == store.version && (!store.spilled || (emptyVersionStore eq store))
      case Spilled(v, _, spill) => v == store.version && (!store.spilled || (spill.store eq store))
      case _ => false
    }) && loadedId == store.baseId

  /** Reads of `store` in the working copy: the base view while another store has spilled. */
  private[kstate] def dbGet(store: KStateStore, key: HashedKey): Array[Byte] = lifecycle.current match {
    case Loaded(_, copy) => copy.get(key) // the common case first: one volatile read, no allocation
    case Spilled(_, copy, spill) => if (spill.store ne store) spill.baseView.get(key.bytes) else copy.get(key)
    case s => workingCopyOf(s, store).get(key)
  }

  private[kstate] def dbScan(store: KStateStore, from: Array[Byte], until: Option[Array[Byte]]): StateScan =
    lifecycle.current match {
      case Loaded(_, copy) => copy.scan(from, until)
      case Spilled(_, copy, spill) =>
        if (spill.store ne store) spill.baseView.scan(from, until) else copy.scan(from, until)
      case s => workingCopyOf(s, store).scan(from, until)
    }

  private def workingCopyOf(s: ProviderState, store: KStateStore): WorkingCopy =
    s.workingCopy.getOrElse(throw new IllegalStateException(s"$store read while the provider is $s"))

  /**
   * An iteration over `store`'s current entries under `prefix` in no particular order, when the
   * working copy can give one without a sort (a heap working copy, no spill pending), else
   * None. Captured when opened: later writes do not show through.
   */
  private[kstate] def unorderedScan(store: KStateStore, prefix: Array[Byte]): Option[UnorderedScan] =
    committedOnHeap(prefix).map { committed =>
      // the committed side skips keys this version changed (wrote or deleted) when opened
      val (changedKeys, changedValues, changed) = store.changes.changesWithPrefix(prefix)
      new UnorderedScan(changedKeys, changedValues, committed(changed.contains))
    }

  /**
   * A heap working copy's committed entries under `prefix` in no particular order, without the
   * keys `skip` accepts ([[unorderedScan]]'s committed side, `KStateStore.removeWhere`'s purge);
   * None when the working copy is not on the heap.
   */
  private[kstate] def committedOnHeap(prefix: Array[Byte])
      : Option[(HashedKey => Boolean) => Iterator[(Array[Byte], Array[Byte])]] =
    lifecycle.current match {
      case Loaded(_, copy) if copy.onHeap =>
        Some(skip => copy.unordered(prefix, skip).getOrElse(Iterator.empty))
      case _ => None
    }

  /**
   * Whether reads should note if a key existed (saving a lookup when counting rows at commit):
   * only for a database working copy, where that lookup is a native call.
   */
  private[kstate] def notesReads: Boolean = countsRows && !onHeap

  private def checkHolds(store: KStateStore, op: String): Unit = {
    val s = lifecycle.current
    val spilledByOther = s match { case Spilled(_, _, spill) => spill.store ne store; case _ => false }
    if (!holds(store) || spilledByOther) {
      throw new IllegalStateException(s"cannot $op $store: the provider is $s " +
        "(another store of this partition committed or reloaded first)")
    }
  }

  // ---- commit and spill --------------------------------------------------------------------

  /**
   * Makes `store`'s changes version `store.version + 1` (LOADED(v) | SPILLED(v, store) ->
   * LOADED(v + 1)). A database working copy changes only once the changelog is durable. A heap
   * working copy changes first, because the key count falls out of updating it (no second
   * lookup per key); if the changelog then fails, the heap copy is discarded and rebuilt from
   * the checkpoint on next use. Writes no snapshot: maintenance does ([[doMaintenance]]).
   */
  private[kstate] def commit(store: KStateStore): Long = synchronized {
    val started = System.nanoTime()
    checkHolds(store, "commit")
    if (store.fromEmpty) return commitFromEmpty(store, started)
    val (copy, spilled) = lifecycle.current match {
      case Loaded(_, c) => (c, None)
      case Spilled(_, c, spill) => (c, Some(spill))
      case s => throw new IllegalStateException(s"cannot commit $store: the provider is $s")
    }
    val newVersion = store.version + 1
    val counting = countsRows && numKeys >= 0
    dropStaleSnapshots(newVersion)
    val p = spilled.getOrElse(openPending(store, baseView = null))
    val newId = p.checkpointId
    p.closeView()
    val families = unflushedFamilies(store)
    val sorted = copy.wantsSorted
    val changes = if (sorted) store.changes.sortedChanges else store.changes.unsortedChanges
    writeSetSizeHint = math.min(store.changes.numEntries, MaxWriteSetSizeHint).toInt
    val heapFirst = copy.onHeap
    try {
      val delta =
        if (heapFirst) {
          val d = copy.apply(ChangelogAppend.dropped(families), changes, sorted)
          ChangelogAppend(families, changes, p.writer, None)
          d
        } else ChangelogAppend(families, changes, p.writer, if (counting) Some(copy) else None)
      val newNumKeys = if (counting) numKeys + delta else -1L
      store.counters.changelogBytes += p.writer.finish(newNumKeys)
      store.counters.changelogRecords += p.writer.recordCount
      makeDurable(p.out)
      numKeys = newNumKeys
      committedChangelog = if (checkpointIds) None else p.writer.checksum
    } catch {
      case NonFatal(e) =>
        try p.out.cancel()
        catch { case NonFatal(c) => e.addSuppressed(c) }
        if (store.spilled || heapFirst) discard()
        throw e
    }
    try {
      if (!heapFirst) {
        copy.apply(ChangelogAppend.dropped(families), changes, sorted = true)
        copy.adoptRebuiltHeap(tiering.admits)
      }
      if (copy.onHeap && !copy.fitsBudget()) copy.moveToDb()
      // a spill moved the copy to RocksDB for this version's changes only: back when it fits
      if (spilled.isDefined && tiering.startsOnHeap) {
        copy.moveToHeap(heapFits(copy))
      }
      keepWithinBound(store, copy)
      // a restore left the heap copy to a background build: it starts now that the restoring
      // micro-batch's own work is done
      copy.startDeferredHeapRebuild(tiering.admits)
    } catch {
      case NonFatal(e) =>
        // The changelog is durable; the local copy is not trustworthy: reload next time.
        discard()
        throw e
    }
    lifecycle.moveTo(Loaded(newVersion, copy))
    replicaVersion = newVersion
    if (checkpointIds) {
      loadedId = newId
      chain = (chain :+ LineageEntry(newVersion, newId.get)).takeRight(MaxChain)
      store.committedId = newId
    }
    registry = store.registry
    store.counters.commitNanos += System.nanoTime() - started
    newVersion
  }

  /**
   * Commits a `loadEmpty` store (LOADED(v) -> LOADED(v + 1)): its changes go into the empty
   * working copy, and version v + 1 is written as a snapshot, with a fresh checkpoint id in
   * format v2; no changelog, so no file of this version depends on an earlier one (those of the
   * directory may be another layout's). The snapshot is the version: a failure to write it fails
   * the commit and drops the working copy.
   */
  private def commitFromEmpty(store: KStateStore, started: Long): Long = {
    val copy = lifecycle.current match {
      case Loaded(v, c) if v == store.version => c
      case s => throw new IllegalStateException(s"cannot commit $store: the provider is $s")
    }
    val newVersion = store.version + 1
    val newId = if (checkpointIds) Some(UUID.randomUUID().toString) else None
    try {
      copy.apply(ChangelogAppend.dropped(unflushedFamilies(store)), store.changes.sortedChanges, sorted = true)
      val entries =
        copy.frozen(tableSnapshots).getOrElse(throw new IllegalStateException(s"$this: no view of the new state"))
      var keys = 0L
      val counted = new FrozenEntries {
        override def foreach(f: (Array[Byte], Array[Byte]) => Unit): Unit =
          entries.foreach { (k, v) => keys += 1; f(k, v) }
        override def close(): Unit = entries.close()
        override def tableDir: Option[java.io.File] = entries.tableDir
      }
      val out =
        try files.prepareSnapshot(newVersion, store.registry.ids, keys, counted, newId)
        finally counted.close()
      makeDurable(out)
      numKeys = keys
    } catch {
      case NonFatal(e) =>
        discard()
        throw e
    }
    emptyVersionStore = null
    lifecycle.moveTo(Loaded(newVersion, copy))
    replicaVersion = newVersion
    registry = store.registry
    lastSnapshotVersion = newVersion
    reportSnapshotToCoordinator(newVersion)
    newId match {
      case Some(id) =>
        loadedId = newId
        chain = Vector(LineageEntry(newVersion, id))
        usableIdSnapshots += LineageEntry(newVersion, id)
        store.committedId = newId
      case None => usableSnapshots += newVersion
    }
    store.counters.commitNanos += System.nanoTime() - started
    newVersion
  }

  /**
   * The first commit after a restore to v rewrites versions v + 1, ...: snapshots of those found
   * on disk were taken of the versions being replaced (a batch re-run after a crash), so they
   * are deleted before the new changelog becomes durable.
   */
  private def dropStaleSnapshots(newVersion: Long): Unit = if (staleSnapshots.nonEmpty) {
    staleSnapshots.filter(_ >= newVersion).foreach { v =>
      files.delete(StateFile.Snapshot, v)
      usableSnapshots -= v
    }
    staleSnapshots = Set.empty
  }

  /**
   * Moves `store`'s uncommitted changes out of the heap: appends them to the version's pending
   * changelog (opened by the first spill, LOADED(v) -> SPILLED(v, store), made durable only at
   * commit) and writes them to the local database. A failure discards the working copy and fails
   * with `KSTATE_STATE_SPILL_FAILED`; the checkpoint still holds the previous version.
   */
  private[kstate] def spill(store: KStateStore): Unit = synchronized {
    checkHolds(store, "spill")
    if (store.fromEmpty) return spillFromEmpty(store)
    val changes = store.changes.sortedChanges
    if (changes.isEmpty && store.familiesFlushed == store.familyLog.size) {
      store.changes.clear() // only existence notes: nothing to spill
      return
    }
    spillStep(store) {
      val (copy, pending) = lifecycle.current match {
        case Spilled(_, c, spill) => (c, spill)
        case Loaded(v, c) =>
          // Spilled changes go into the working copy before they are committed: into RocksDB,
          // where a frozen view of version v stays readable meanwhile (not a heap copy being
          // built from it: its commit moves the copy back to the heap if it fits).
          c.cancelHeapRebuild()
          c.moveToDb()
          val view = c.view()
          val spill =
            try openPending(store, view)
            catch { case NonFatal(e) => view.close(); throw e }
          lifecycle.moveTo(Spilled(v, c, spill))
          (c, spill)
        case s => throw new IllegalStateException(s"cannot spill $store: the provider is $s")
      }
      store.spilled = true
      val counting = countsRows && numKeys >= 0
      val records = pending.writer.recordCount
      val families = unflushedFamilies(store)
      val delta = ChangelogAppend(families, changes, pending.writer, if (counting) Some(copy) else None)
      copy.apply(ChangelogAppend.dropped(families), changes, sorted = true)
      if (counting) numKeys += delta
      store.counters.spilledRecords += pending.writer.recordCount - records
    }
  }

  /**
   * Runs one spill of `store` by `body`, then clears its write set; a failure discards the
   * working copy and fails with `KSTATE_STATE_SPILL_FAILED`. Its time counts as commit time.
   */
  private def spillStep(store: KStateStore)(body: => Unit): Unit = {
    val started = System.nanoTime()
    try {
      body
      store.changes.clear()
      store.counters.spills += 1
    } catch {
      case NonFatal(e) =>
        discard()
        throw KStateErrors.stateSpillFailed(store.id.toString, store.version, localRoot.toString, e)
    } finally store.counters.commitNanos += System.nanoTime() - started
  }

  /**
   * A `loadEmpty` store's spill: its changes go into the working copy, in RocksDB, and nowhere
   * else (the commit writes the snapshot). The copy stays LOADED(v) for it; an abort drops it.
   */
  private def spillFromEmpty(store: KStateStore): Unit = spillStep(store) {
    val copy = lifecycle.current.workingCopy.get
    copy.moveToDb()
    copy.apply(ChangelogAppend.dropped(unflushedFamilies(store)), store.changes.sortedChanges, sorted = true)
    store.spilled = true
  }

  /** Gives up `store`'s spilled version (abort): the working copy is rebuilt on next use. */
  private[kstate] def abandon(store: KStateStore): Unit = synchronized {
    lifecycle.current match {
      case Loaded(_, _) if emptyVersionStore eq store => discard()
      case Spilled(_, _, spill) if spill.store eq store => discard()
      case _ =>
    }
  }

  /** Completes a changelog: closing makes it durable (a seam for fault-injection tests). */
  protected def makeDurable(out: StateFiles.AtomicOutput): Unit = out.commit()

  /**
   * Called by maintenance between writing snapshot `version` and publishing it, outside the
   * lock (a seam for tests that interleave a task there).
   */
  protected def snapshotPrepared(version: Long): Unit = ()

  /** Writes a batch to the local working copy with `write` (a seam for fault-injection tests). */
  protected def applyLocally(batch: WriteBatch, write: WriteBatch => Unit): Unit = write(batch)

  private def writeLocally(db: LocalDb, batch: WriteBatch): Unit = applyLocally(batch, b => db.writeBatch(b))

  /**
   * Opens the changelog of `store.version + 1`. Format v2: under a fresh checkpoint id (every
   * attempt writes files of its own), recording the lineage of the loaded version.
   */
  private def openPending(store: KStateStore, baseView: DbView): PendingVersion = {
    val v = store.version + 1
    val checkpoint =
      if (!checkpointIds) None else Some(StateFile.Checkpoint(UUID.randomUUID().toString, lineageToWrite))
    val (out, writer) = files.openChangelog(v, checkpoint)
    PendingVersion(
      store,
      currentTask,
      files.path(StateFile.Changelog, v, checkpoint.map(_.id)),
      out,
      writer,
      baseView,
      checkpoint.map(_.id)
    )
  }

  /**
   * The lineage the next changelog records: the chain of the loaded version from the newest
   * snapshot on it this provider knows of (a restore reads no further), at most [[MaxLineage]]
   * entries (a restore then continues with the oldest entry's own changelog).
   */
  private def lineageToWrite: Vector[LineageEntry] = {
    val fromSnapshot = chain.lastIndexWhere(usableIdSnapshots)
    chain.drop(math.max(0, fromSnapshot)).takeRight(MaxLineage)
  }

  /** `store`'s family changes no spill has written yet; marks them written. */
  private def unflushedFamilies(store: KStateStore): Vector[FamilyChange] = {
    val out = store.familyLog.drop(store.familiesFlushed)
    store.familiesFlushed = store.familyLog.size
    out
  }

  // ---- maintenance -------------------------------------------------------------------------

  /**
   * Spark's maintenance thread: writes a snapshot of the loaded version when one is due
   * (`minDeltasForSnapshot` versions after the last), then deletes the files no retained version
   * needs ([[RetentionRule]]). Never blocks a commit for longer than taking a frozen view,
   * publishing the snapshot or deleting files (see the class's threading model).
   */
  override def doMaintenance(): Unit = maintenanceStep {
    snapshotIfDue()
    deleteObsoleteFiles()
  }

  /** Spark 4.3's periodic maintenance, first half ([[SplitMaintenance]]): the snapshot. */
  override protected def snapshotMaintenance(): Unit = maintenanceStep(snapshotIfDue())

  /** Spark 4.3's periodic maintenance, second half ([[SplitMaintenance]]): the deletes. */
  override protected def cleanupMaintenance(): Unit = maintenanceStep(deleteObsoleteFiles())

  /**
   * Runs one maintenance step, one at a time per provider: Spark 4.3 may run a provider's
   * snapshot and cleanup on two threads at once, and the threading model above has one
   * maintenance thread. Not the provider's lock (`this`): a step holds that only briefly.
   */
  private val maintenanceMutex = new Object
  private def maintenanceStep(step: => Unit): Unit = maintenanceMutex.synchronized {
    if (lifecycle.current != Created) step
  }

  /**
   * A snapshot of `version`, just committed by a store Spark opened with `forceSnapshotOnCommit`:
   * the committing task freezes the version's view, and [[ForcedSnapshots]]' thread writes it,
   * after the changelog is durable. Skipped when maintenance is writing one at that moment; a
   * failure is logged, never thrown: the commit stands, and the changelogs still restore the
   * version.
   */
  private[kstate] def snapshotOnCommit(version: Long): Unit =
    freezeSnapshot { case Loaded(v, copy) if v == version => (v, copy) }.foreach { job =>
      try {
        ForcedSnapshots.submit(() => writeSnapshot(job))
        // counted when the commit freezes it, as Spark's RocksDB provider counts the checkpoint
        // its commit makes (and uploads later); `kstateStoreSnapshotsWritten` once it is written
        synchronized { unreportedSnapshots += ProviderMetrics.SnapshotWork(0, 0, forced = 1) }
      } catch {
        case NonFatal(e) =>
          try job.entries.close()
          finally synchronized { snapshotting = false }
          logWarning(s"$this could not queue snapshot $version", e)
      }
    }

  /** Maintenance: freezes the due version's view and writes it on this thread. */
  private def snapshotIfDue(): Unit =
    freezeSnapshot {
      case Loaded(v, copy) if v > 0 && v - lastSnapshotVersion >= math.max(1, storeConf.minDeltasForSnapshot) =>
        (v, copy)
    }.foreach(writeSnapshot)

  /** Under the lock, the frozen view of the version `due` picks, unless a snapshot is being written. */
  private def freezeSnapshot(due: PartialFunction[ProviderState, (Long, WorkingCopy)]): Option[SnapshotJob] =
    synchronized {
      // a loadEmpty store's writes in the working copy are no committed version
      if (snapshotting || emptyVersionStore != null) None
      else due.lift(lifecycle.current).flatMap { case (v, copy) =>
        copy.frozen(tableSnapshots).map { entries =>
          snapshotting = true
          SnapshotJob(v, registry.ids, numKeys, entries, restores, loadedId)
        }
      }
    }

  /** Writes `j` outside the lock and publishes it under it (`snapshotting` is set until then). */
  private def writeSnapshot(j: SnapshotJob): Unit = {
    val started = System.nanoTime()
    try {
      val out =
        try files.prepareSnapshot(j.version, j.families, j.numKeys, j.entries, j.id)
        finally j.entries.close()
      try snapshotPrepared(j.version)
      catch { case NonFatal(e) => out.cancel(); throw e }
      val published = synchronized {
        // A restore since the view may be a re-run rewriting version j.version: do not publish.
        if (restores == j.restoresBefore) {
          out.commit()
          lastSnapshotVersion = math.max(lastSnapshotVersion, j.version)
          j.id match {
            case Some(i) => usableIdSnapshots += LineageEntry(j.version, i)
            case None => usableSnapshots += j.version
          }
          unreportedSnapshots += ProviderMetrics.SnapshotWork(1, System.nanoTime() - started)
          true
        } else { out.cancel(); false }
      }
      if (published) reportSnapshotToCoordinator(j.version)
    } catch {
      // A snapshot is an optimisation: the changelogs still restore this version.
      case NonFatal(e) => logWarning(s"$this could not write snapshot ${j.version}", e)
    } finally synchronized { snapshotting = false }
  }

  /**
   * Tells Spark's state store coordinator that `version`'s snapshot is written, as Spark's own
   * providers do (when `reportSnapshotUploadLag` is on): without it the coordinator finds the
   * partition's snapshots lagging however many are written, and asks for one at every commit
   * (`forceSnapshotOnCommit`). Outside a query (no run id, no coordinator) it does nothing; a
   * failure is logged, never thrown.
   */
  private def reportSnapshotToCoordinator(version: Long): Unit =
    if (storeConf.reportSnapshotUploadLag) {
      try {
        Option(hadoopConf.get(KStateStoreProvider.RunIdKey)).foreach { runId =>
          val id = StateStoreProviderId(storeId, UUID.fromString(runId))
          Option(SparkEnv.get).map(StateStoreCoordinatorRef.forExecutor)
            .foreach(_.snapshotUploaded(id, version, System.currentTimeMillis()))
        }
      } catch {
        case NonFatal(e) => logWarning(s"$this could not report snapshot $version to the state store coordinator", e)
      }
    }

  /**
   * Deletes what [[RetentionRule]] allows. Listing and verifying a snapshot not known to be
   * usable happen outside the lock; the deletes under it, so that no restore of this provider
   * runs between choosing files and deleting them.
   */
  private def deleteObsoleteFiles(): Unit = if (checkpointIds) deleteObsoleteIdFiles()
  else {
    val on = files.versions()
    val known = synchronized(usableSnapshots)
    val doomed = RetentionRule.delete(
      on,
      storeConf.minVersionsToRetain,
      s =>
        known(s) || {
          val ok = files.verifies(StateFile.Snapshot, s)
          if (ok) synchronized { usableSnapshots += s }
          else logWarning(s"$this: snapshot $s does not verify; the files before it are kept")
          ok
        }
    )
    synchronized {
      doomed.snapshots.foreach { v => files.delete(StateFile.Snapshot, v); usableSnapshots -= v }
      doomed.changelogs.foreach(v => files.delete(StateFile.Changelog, v))
    }
  }

  /**
   * Format v2: deletes what [[RetentionRule.deleteWithIds]] allows, by version whatever the ids,
   * from the base snapshot on the committed chain (the chain of the newest version Spark asked
   * for by its id). Nothing before Spark asked for a version by id.
   */
  private def deleteObsoleteIdFiles(): Unit = {
    val (tip, committedChain, known) = synchronized {
      (
        committedTip,
        committedTip.fold(Vector.empty[LineageEntry])(t => chain.filter(_.version <= t.version)),
        usableIdSnapshots
      )
    }
    tip.filter(t => committedChain.lastOption.contains(t)).foreach { t =>
      val on = files.checkpoints()
      val doomed = RetentionRule.deleteWithIds(
        on,
        committedChain,
        t.version,
        storeConf.minVersionsToRetain,
        s =>
          known(s) || {
            val ok = files.verifies(StateFile.Snapshot, s.version, Some(s.id))
            if (ok) synchronized { usableIdSnapshots += s }
            else logWarning(s"$this: snapshot $s does not verify; the files before it are kept")
            ok
          }
      )
      synchronized {
        doomed.snapshots.foreach { e =>
          files.delete(StateFile.Snapshot, e.version, Some(e.id)); usableIdSnapshots -= e
        }
        doomed.changelogs.foreach(e => files.delete(StateFile.Changelog, e.version, Some(e.id)))
        doomed.base.foreach(b => chain = chain.dropWhile(_.version < b.version))
      }
    }
  }

  // ---- column families ---------------------------------------------------------------------

  private[kstate] def registerCodec(codec: FamilyCodec): Unit = codecs.put(codec.name, codec)

  private[kstate] def codec(name: String, id: Short): FamilyCodec = {
    val c = codecs.get(name)
    if (c == null) throw KStateErrors.unknownColumnFamily(name, registry.ids.keys)
    if (c.id == id) c
    else {
      val moved = new FamilyCodec(id, name, c.keySchema, c.valueSchema, c.keySpec, c.multipleValues)
      codecs.put(name, moved)
      moved
    }
  }

  // ---- metrics -----------------------------------------------------------------------------

  override def supportedCustomMetrics: Seq[StateStoreCustomMetric] = ProviderMetrics.All

  /**
   * The one metrics method: everything a store version reports. A committed version also
   * reports the restore and the snapshots not reported yet.
   */
  private[kstate] def metricsOf(store: KStateStore): StateStoreMetrics = {
    val (restore, snapshots, keys) = synchronized {
      val keys = if (countsRows) math.max(numKeys, 0L) else -1L
      if (store.hasCommitted) {
        val taken = (unreportedRestore, unreportedSnapshots, keys)
        unreportedRestore = None
        unreportedSnapshots = ProviderMetrics.NoSnapshots
        taken
      } else (None, ProviderMetrics.NoSnapshots, keys)
    }
    ProviderMetrics.of(store.counters, restore, snapshots, lifecycle.current.workingCopy, keys)
  }

  /** The most recent restore of this provider (for tests and logs). */
  def lastRestore: Option[RestoreInfo] = lastRestoreInfo

  // ---- configuration and local disk --------------------------------------------------------

  private def setting(key: String): Option[String] =
    storeConf.sqlConfs.get(key).orElse(storeConf.extraOptions.get(key))

}

object KStateStoreProvider {

  /**
   * The query id a kstate operator passes its stores (in the store configuration's extra
   * options), so that a provider knows its store across query restarts (standby replicas).
   */
  val QueryIdKey = "kstate.queryId"

  /**
   * Where Spark puts a query run's id in the Hadoop configuration a store gets (Spark's
   * `StreamExecution.RUN_ID_KEY`, the same string in Spark 4.2 and 4.3, whose class moved).
   */
  val RunIdKey = "sql.streaming.runId"

  /** Where working copies in RocksDB and spilled changes live: the executor's local directory. */
  private[kstate] def localRoot: File = {
    val root = Option(SparkEnv.get).map(env => new File(Utils.getLocalDir(env.conf)))
      .getOrElse(new File(System.getProperty("java.io.tmpdir")))
    root.mkdirs()
    root
  }

  private def currentTask: Option[Long] = Option(TaskContext.get()).map(_.taskAttemptId())

  /** A due snapshot: the frozen entries of `version`, taken after `restoresBefore` restores. */
  private final case class SnapshotJob(
      version: Long,
      families: Map[String, Short],
      numKeys: Long,
      entries: FrozenEntries,
      restoresBefore: Long,
      id: Option[String]
  )

  /** Format v2: the most entries of the loaded version's chain a provider keeps. */
  private val MaxChain = 4096

  /** Format v2: the most lineage entries a changelog records (a restore hops to the oldest's changelog). */
  private[kstate] val MaxLineage = 100

  /** Caps the write set's initial capacity (a version that spilled may have had many more). */
  private val MaxWriteSetSizeHint = 1L << 20

  /** Same switch as Spark's RocksDB provider: count rows exactly (costs existence lookups). */
  val TrackRowsKey = "spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows"

  /** One restore: which version, from which snapshot, how many changelog records, how long. */
  type RestoreInfo = org.apache.spark.sql.kstate.provider.RestoreInfo
  val RestoreInfo: org.apache.spark.sql.kstate.provider.RestoreInfo.type =
    org.apache.spark.sql.kstate.provider.RestoreInfo
}
