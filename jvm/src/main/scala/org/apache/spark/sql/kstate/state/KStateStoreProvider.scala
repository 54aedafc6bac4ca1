package org.apache.spark.sql.kstate.state

import java.io.{File, FileNotFoundException}
import java.util.concurrent.ConcurrentHashMap

import scala.util.control.NonFatal

import io.kstate.{KStateConf, KStateErrors}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.rocksdb.WriteBatch

import org.apache.spark.{SparkEnv, TaskContext}
import org.apache.spark.internal.Logging
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.kstate.state.store._
import org.apache.spark.sql.types.StructType
import org.apache.spark.util.Utils

/**
 * kstate's state store provider: a working copy per store, made durable by per-version
 * changelog files and periodic snapshots in the state checkpoint directory. The working copy is
 * a [[HeapState]] while it fits the executor's heap state budget ([[HeapStateBudget]],
 * `spark.sql.streaming.stateStore.kstate.heapStateBytes`), else a local RocksDB ([[LocalDb]]).
 *
 * Set it query-wide with `spark.sql.streaming.stateStore.providerClass=io.kstate.KStateStoreProvider`
 * (it then serves Spark's own operators too); kstate operators use it through
 * `spark.kstate.stateStore.providerClass`.
 *
 * Files, in the store's checkpoint directory (`<checkpoint>/state/<op>/<partition>[/<store>]`):
 *  - `<v>.kstate.changelog`: the changes of version v (see [[StateFile]]), one per commit;
 *  - `<v>.kstate.snapshot`: all of version v, written every `minDeltasForSnapshot` versions.
 * The newest changelog's version is the store's recorded position: a reader (a later standby
 * replica) that has applied version v continues with `<v+1>.kstate.changelog`.
 *
 * State machine (all transitions under the provider's lock):
 * {{{
 *   EMPTY --getStore(v)--> LOADED(v)            restore: latest snapshot <= v, replay changelogs
 *                                                 (into the heap; moved to RocksDB part way
 *                                                 through if it outgrows the budget)
 *   LOADED(v) on the heap --commit that outgrows the budget, or a first spill--> the same state
 *                                                 with the working copy moved to RocksDB
 *   LOADED(v) --getStore(v)--> LOADED(v)         reuse, no I/O
 *   LOADED(v) --getStore(w != v)--> LOADED(w)    full restore of w
 *   LOADED(v) --spill of a store at v--> SPILLED(v, store)   changelog opened (not yet durable),
 *                                                 part of the changes applied locally
 *   SPILLED(v, s) --spill of s--> SPILLED(v, s)
 *   LOADED(v) or SPILLED(v, s) --commit of s--> LOADED(v+1)   changelog completed and made
 *                                                 durable, then the rest applied locally
 *   SPILLED(v, s) --abort of s, failed spill, or getStore from another task--> EMPTY
 *                                                 pending changelog cancelled
 *   any --failed restore or apply--> EMPTY       nothing half-loaded is ever served
 *   any --close--> CLOSED
 * }}}
 * Abort of a store that never spilled needs no transition: it never touched the database.
 * In SPILLED(v, s), other stores opened at v by the same task (Spark's session-window operators
 * read through one store and write through another) read a frozen view of version v taken
 * before the first spill, so they never see s's uncommitted changes.
 */
class KStateStoreProvider extends StateStoreProvider with Logging {
  import KStateStoreProvider._

  @volatile private var storeId: StateStoreId = _
  private var keySchema: StructType = _
  private var valueSchema: StructType = _
  private var keySpec: KeyStateEncoderSpec = _
  private var multipleValues: Boolean = false
  private var storeConf: StateStoreConf = _
  private var hadoopConf: Configuration = _
  private var files: StateFiles = _
  private var dir: Path = _
  /** Whose this store's files are: written into each, checked on restore. */
  private var fileIdentity: StateFileIdentity = _
  private[state] var countsRows: Boolean = true

  /** The working copy: on the heap (`heap`) while it fits its budget, else `localDb`. */
  private var heap: HeapState = _
  /** Bytes of [[HeapStateBudget]] reserved for `heap`. */
  private var heapReserved: Long = 0L
  private[state] var heapStateLimit: Long = HeapStateBudget.defaultLimit
  private var localDb: LocalDb = _
  @volatile private[state] var loadedVersion: Long = Empty
  private var registry: FamilyRegistry = _
  private var numKeys: Long = 0
  private var lastSnapshotVersion: Long = 0
  private val codecs = new ConcurrentHashMap[String, FamilyCodec]()
  /** The version being written in pieces (SPILLED), or null. */
  private var pending: PendingVersion = _
  /** Version `loadedVersion` as it was before `pending`'s first spill (SPILLED only). */
  private var baseView: DbView = _
  private[state] var maxWriteSetBytes: Long = KStateConf.MaxWriteSetBytes.default
  @volatile private var unreportedRestore: Option[RestoreInfo] = None
  @volatile private var lastRestoreInfo: Option[RestoreInfo] = None

  override def init(
      stateStoreId: StateStoreId,
      keySchema: StructType,
      valueSchema: StructType,
      keyStateEncoderSpec: KeyStateEncoderSpec,
      useColumnFamilies: Boolean,
      storeConfs: StateStoreConf,
      hadoopConf: Configuration,
      useMultipleValuesPerKey: Boolean,
      stateSchemaProvider: Option[StateSchemaProvider]): Unit = {
    if (storeConfs.enableStateStoreCheckpointIds) throw KStateErrors.unsupportedStoreCheckpointIds()
    this.storeId = stateStoreId
    this.keySchema = keySchema
    this.valueSchema = valueSchema
    this.keySpec = keyStateEncoderSpec
    this.multipleValues = useMultipleValuesPerKey
    this.storeConf = storeConfs
    this.hadoopConf = hadoopConf
    this.countsRows = setting(TrackRowsKey).forall(_.trim.toBoolean)
    this.maxWriteSetBytes = setting(KStateConf.MaxWriteSetBytes.key)
      .map(KStateConf.MaxWriteSetBytes.parse).getOrElse(KStateConf.MaxWriteSetBytes.default)
    this.heapStateLimit = setting(KStateConf.HeapStateBytes.key).map(KStateConf.HeapStateBytes.parse)
      .filter(_ >= 0).getOrElse(HeapStateBudget.defaultLimit)
    this.dir = stateStoreId.storeCheckpointLocation()
    this.files = StateFiles(dir, hadoopConf)
    this.fileIdentity = StateFileIdentity.of(stateStoreId)
    registerCodec(new FamilyCodec(0, StateStore.DEFAULT_COL_FAMILY_NAME, keySchema, valueSchema,
      keyStateEncoderSpec, useMultipleValuesPerKey))
  }

  override def stateStoreId: StateStoreId = storeId

  private[state] def hadoopConfiguration: Configuration = hadoopConf

  override def getStore(version: Long, uniqueId: Option[String], readOnly: Boolean,
      forceSnapshotOnCommit: Boolean): KStateStore = synchronized {
    if (uniqueId.isDefined) throw KStateErrors.unsupportedStoreCheckpointIds()
    if (version < 0) throw new IllegalArgumentException(s"version cannot be negative: $version")
    ensureLoaded(version)
    new KStateStore(this, version, registry)
  }

  override def close(): Unit = synchronized {
    cancelPending()
    closeDb()
    loadedVersion = Closed
  }

  override def toString: String = s"KStateStoreProvider[$storeId]"

  // ---- restore -----------------------------------------------------------------------------

  /** Whether the working copy is on the heap (for tests and metrics). */
  private[state] def onHeap: Boolean = heap != null

  /** False once a bounded store outgrew its heap share: the working copy then stays in RocksDB. */
  @volatile private var heapAllowed = true

  /**
   * Heap a store's structure bounds its memory to (the time-ordered buffer's `max_bytes` with
   * spill-to-disk), `Long.MaxValue` when unbounded. The committed working copy may stay on the
   * heap while it takes at most half of it (the write set gets the rest, see
   * [[heapCopyBytesWithin]]); past that it moves to RocksDB for good.
   */
  @volatile private var heapBound: Long = Long.MaxValue

  /**
   * `store` bounds its heap to `maxBytes` (a time-ordered buffer that spills to disk): its
   * committed contents stay on the heap only while they take at most half of it, so a small
   * buffer keeps the heap copy's speed and a large one lives in RocksDB, within the bound
   * either way. A failure discards the working copy and fails like a spill.
   */
  private[state] def boundHeap(store: KStateStore, maxBytes: Long): Unit = synchronized {
    heapBound = math.min(heapBound, maxBytes)
    keepWithinBound(store)
  }

  /** Moves a bounded store's heap copy to RocksDB (for good) once it outgrew its share. */
  private def keepWithinBound(store: KStateStore): Unit =
    if (heapBound != Long.MaxValue && heap != null && heap.heapBytes > heapBound / 2) {
      heapAllowed = false
      try moveHeapToDb() catch {
        case NonFatal(e) =>
          discardWorkingCopy()
          throw KStateErrors.stateSpillFailed(store.id.toString, store.version, localDirOf, e)
      }
    }

  /**
   * Heap the committed working copy takes for a store with a bounded heap (counted against its
   * bound by the write set's spill check), 0 otherwise.
   */
  private[state] def heapCopyBytesWithin: Long =
    if (heapBound == Long.MaxValue) 0L else synchronized(if (heap == null) 0L else heap.heapBytes)

  /** Bytes this provider holds of the executor's heap state budget (for tests). */
  private[state] def heapReservedBytes: Long = synchronized(heapReserved)

  private def ensureLoaded(version: Long): Unit = {
    if (loadedVersion == Closed) throw new IllegalStateException(s"$this is closed")
    if (pending != null && (version != loadedVersion || pending.taskAttempt.isEmpty ||
        pending.taskAttempt != currentTask)) {
      // A store of this partition spilled and was neither committed nor aborted, and this is
      // another task (its task died) or another version: its changes are in the working copy,
      // so it no longer holds any version.
      discardWorkingCopy()
    }
    if (loadedVersion != version) {
      try restore(version) catch {
        case NonFatal(e) =>
          closeDb()
          loadedVersion = Empty
          throw e
      }
    }
  }

  private def restore(version: Long): Unit = {
    val started = System.nanoTime()
    closeDb()
    loadedVersion = Empty
    if (heapStateLimit > 0 && heapAllowed) heap = new HeapState else localDb = new LocalDb(localRoot)
    registry = FamilyRegistry.initial(StateStore.DEFAULT_COL_FAMILY_NAME)
    numKeys = 0
    lastSnapshotVersion = 0
    var replayed = 0L
    var snapshotUsed: Option[Long] = None
    if (version > 0) {
      val versions = listFiles()
      snapshotUsed = versions.snapshots.filter(_ <= version).maxOption
      snapshotUsed.foreach { s =>
        val summary = load(StateFile.Snapshot, s, version)
        numKeys = summary.numKeys
        lastSnapshotVersion = s
      }
      var v = snapshotUsed.getOrElse(0L) + 1
      while (v <= version) {
        if (!versions.changelogs.contains(v)) {
          throw KStateErrors.stateFileMissing(path(StateFile.Changelog, v).toString, v, version)
        }
        val summary = load(StateFile.Changelog, v, version)
        replayed += summary.records
        numKeys = summary.numKeys
        v += 1
      }
    }
    if (countsRows && numKeys < 0) numKeys = countAll()
    loadedVersion = version
    val info = RestoreInfo(version, snapshotUsed, replayed,
      (System.nanoTime() - started) / 1000000)
    lastRestoreInfo = Some(info)
    if (version > 0) unreportedRestore = Some(info)
    logDebug(s"$this restored $info")
  }

  /** Reads one verified file into the working copy. */
  private def load(kind: StateFile.Kind, version: Long, target: Long): StateFile.Summary = {
    val p = path(kind, version)
    val in = try files.open(p) catch {
      case _: FileNotFoundException => throw KStateErrors.stateFileMissing(p.toString, version, target)
    }
    val sink = new StateLoader(heap, localDb, () => heapFits() && heap.heapBytes <= heapBound / 2,
      () => { moveHeapToDb(); localDb })
    try {
      val summary = StateFile.read(in, kind, version, fileIdentity, p.toString, sink)
      sink.flush()
      registry = sink.applyFamilies(registry)
      summary
    } finally {
      sink.close()
      in.close()
    }
  }

  // ---- heap working copy -------------------------------------------------------------------

  /** Whether `heap` fits the executor's heap state budget; adjusts the reservation if it does. */
  private def heapFits(): Boolean = {
    val want = heap.heapBytes
    if (want <= heapReserved) {
      HeapStateBudget.release(heapReserved - want)
      heapReserved = want
      true
    } else if (HeapStateBudget.tryReserve(want - heapReserved, heapStateLimit)) {
      heapReserved = want
      true
    } else false
  }

  private def releaseHeap(): Unit = {
    HeapStateBudget.release(heapReserved)
    heapReserved = 0L
  }

  /**
   * Moves the heap working copy into a new local database (it outgrew its budget, or a store
   * is about to spill into the working copy). On failure the caller discards the working copy.
   */
  private def moveHeapToDb(): Unit = {
    val from = heap
    localDb = new LocalDb(localRoot)
    var batch = new WriteBatch()
    try {
      var n = 0
      from.foreach { (k, v) =>
        batch.put(k, v)
        n += 1
        if (n % StateLoader.CheckEvery == 0) {
          applyLocally(batch); batch.close(); batch = new WriteBatch()
        }
      }
      applyLocally(batch)
    } finally batch.close()
    heap = null
    val entries = from.size
    from.clear()
    releaseHeap()
    logInfo(s"$this: state moved from the heap to local RocksDB ($entries entries)")
  }

  private def countAll(): Long = countRange(Array.emptyByteArray, None)

  /** Number of keys in [from, until) of the working copy (for the database, a scan). */
  private def countRange(from: Array[Byte], until: Option[Array[Byte]]): Long =
    if (heap != null) heap.count(from, until)
    else {
      val scan = localDb.scan(from, until)
      var n = 0L
      try while (scan.valid) { n += 1; scan.next() } finally scan.close()
      n
    }

  // ---- commit ------------------------------------------------------------------------------

  /**
   * Whether `store` can still read its version: the working copy holds its base version, and
   * its spills if it spilled (a store that did not spill reads the base view meanwhile).
   */
  private[state] def holds(store: KStateStore): Boolean =
    loadedVersion == store.version && (!store.spilled || (pending != null && (pending.store eq store)))

  /** Reads of `store` in the working copy: the base view while another store has spilled. */
  private[state] def dbGet(store: KStateStore, key: HashedKey): Array[Byte] =
    if (pending != null && (pending.store ne store)) baseView.get(key.bytes)
    else if (heap != null) heap.get(key)
    else localDb.get(key.bytes)

  private[state] def dbScan(store: KStateStore, from: Array[Byte], until: Option[Array[Byte]]): StateScan =
    if (pending != null && (pending.store ne store)) baseView.scan(from, until)
    else if (heap != null) heap.scan(from, until)
    else localDb.scan(from, until)

  /** Entries in the last committed version's write set: the next one's initial capacity. */
  @volatile private[state] var writeSetSizeHint: Int = 0

  /**
   * An iteration over `store`'s current entries under `prefix` in no particular order, when the
   * working copy can give one without a sort (a heap working copy, no spill pending), else
   * None. Captured when opened: later writes do not show through.
   */
  private[state] def unorderedScan(store: KStateStore, prefix: Array[Byte]): Option[UnorderedScan] =
    if (heap == null || pending != null) None
    else {
      // the committed side skips keys this version changed (wrote or deleted) when opened
      val (changedKeys, changedValues, changed) = store.changes.changesWithPrefix(prefix)
      Some(new UnorderedScan(changedKeys, changedValues, heap.entriesWithPrefix(prefix, changed.contains)))
    }

  /**
   * Whether reads should note if a key existed (saving a lookup when counting rows at commit):
   * only for a database working copy, where that lookup is a native call.
   */
  private[state] def notesReads: Boolean = countsRows && heap == null

  private def checkHolds(store: KStateStore, op: String): Unit =
    if (!holds(store) || (pending != null && (pending.store ne store))) {
    throw new IllegalStateException(s"cannot $op $store: the provider holds version " +
      s"$loadedVersion${if (pending != null) s" with spilled changes of ${pending.store}" else ""} " +
      "(another store of this partition committed or reloaded first)")
  }

  /**
   * Moves `store`'s uncommitted changes out of the heap: appends them to the version's pending
   * changelog (opened by the first spill, made durable only at commit) and writes them to the
   * local database. A failure discards the working copy and fails with
   * `KSTATE_STATE_SPILL_FAILED`; the checkpoint still holds the previous version.
   */
  private[state] def spill(store: KStateStore): Unit = synchronized {
    checkHolds(store, "spill")
    val changes = store.changes.sortedChanges
    if (changes.isEmpty && store.familiesFlushed == store.familyLog.size) {
      store.changes.clear() // only existence notes: nothing to spill
      return
    }
    val started = System.nanoTime()
    try {
      if (pending == null) {
        // Spilled changes go into the working copy before they are committed: into RocksDB,
        // where a frozen view of version v stays readable meanwhile.
        if (heap != null) moveHeapToDb()
        baseView = localDb.view()
        pending = openPending(store)
      }
      store.spilled = true
      val records = pending.writer.recordCount
      val families = unflushedFamilies(store)
      val delta = flushInto(families, changes, pending.writer, countsRows && numKeys >= 0)
      applyToWorkingCopy(families, changes, sorted = true)
      if (countsRows && numKeys >= 0) numKeys += delta
      store.counters.spilledRecords += pending.writer.recordCount - records
      store.changes.clear()
      store.counters.spills += 1
    } catch {
      case NonFatal(e) =>
        discardWorkingCopy()
        throw KStateErrors.stateSpillFailed(store.id.toString, store.version, localDirOf, e)
    } finally store.counters.commitNanos += System.nanoTime() - started
  }

  /** Gives up `store`'s spilled version (abort): the working copy is rebuilt on next use. */
  private[state] def abandon(store: KStateStore): Unit = synchronized {
    if (pending != null && (pending.store eq store)) discardWorkingCopy()
  }

  /** Completes a changelog: closing makes it durable (a seam for fault-injection tests). */
  protected def makeDurable(out: StateFiles.AtomicOutput): Unit = out.commit()

  /** Writes a batch to the local working copy (a seam for fault-injection tests). */
  protected def applyLocally(batch: WriteBatch): Unit = localDb.writeBatch(batch)

  private def discardWorkingCopy(): Unit = {
    cancelPending()
    closeDb()
    loadedVersion = Empty
  }

  private def closeBaseView(): Unit = if (baseView != null) {
    try baseView.close() finally baseView = null
  }

  private def cancelPending(): Unit = if (pending != null) {
    val p = pending
    pending = null
    closeBaseView()
    try p.out.cancel() catch { case NonFatal(e) => logWarning(s"$this: cancelling ${p.file}", e) }
  }

  private def openPending(store: KStateStore): PendingVersion = {
    val file = path(StateFile.Changelog, store.version + 1)
    val out = files.create(file)
    PendingVersion(store, currentTask, file, out,
      new StateFile.Writer(out.stream, StateFile.Changelog, store.version + 1, fileIdentity))
  }

  /** `store`'s family changes no spill has written yet; marks them written. */
  private def unflushedFamilies(store: KStateStore): Vector[FamilyChange] = {
    val out = store.familyLog.drop(store.familiesFlushed)
    store.familiesFlushed = store.familyLog.size
    out
  }

  /**
   * Writes family changes and write-set `changes` (sorted) to the changelog writer; with
   * `counting`, before the working copy changes, returns the change in the number of keys (else
   * 0).
   */
  private def flushInto(families: Vector[FamilyChange], changes: Array[WriteSet.Entry],
      w: StateFile.Writer, counting: Boolean): Long = {
    var delta = 0L
    families.foreach {
      case FamilyChange.Created(name, id) => w.family(id, name)
      case FamilyChange.Dropped(id) =>
        // Its keys are gone: counted (drops are rare) before the working copy deletes them.
        if (counting) delta -= countFamily(id)
        w.dropFamily(id)
    }
    if (counting) resolveExistence(changes)
    changes.foreach { e =>
      if (e.isDelete) {
        w.delete(e.key)
        if (e.existed == WriteSet.Present) delta -= 1
      } else {
        w.put(e.key, e.value)
        if (e.existed != WriteSet.Present) delta += 1
      }
    }
    delta
  }

  /**
   * Applies family drops and `changes` (in key order if `sorted`) to the working copy (heap, or
   * one database batch). For the heap, returns the change in the number of keys (the database
   * does not tell: 0).
   */
  private def applyToWorkingCopy(families: Vector[FamilyChange], changes: Array[WriteSet.Entry],
      sorted: Boolean): Long = {
    val drops = families.collect { case FamilyChange.Dropped(id) => FamilyCodec.prefixOf(id) }
    if (heap != null) {
      val dropped = drops.map(p => heap.deleteRange(p, Bytes.prefixEnd(p))).sum
      (if (sorted) heap.applySorted(changes) else heap.applyUnsorted(changes)) - dropped
    } else {
      val batch = new WriteBatch()
      try {
        drops.foreach(p => batch.deleteRange(p, FamilyCodec.rangeEnd(p)))
        changes.foreach(e => if (e.isDelete) batch.delete(e.key) else batch.put(e.key, e.value))
        applyLocally(batch)
      } finally batch.close()
      0L
    }
  }

  /**
   * Makes `store`'s changes version `store.version + 1`. A database working copy changes only
   * once the changelog is durable. A heap working copy changes first, because the key count
   * falls out of updating it (no second lookup per key); if the changelog then fails, the heap
   * copy is discarded and rebuilt from the checkpoint on next use.
   */
  private[state] def commit(store: KStateStore): Long = synchronized {
    val started = System.nanoTime()
    checkHolds(store, "commit")
    val newVersion = store.version + 1
    val counting = countsRows && numKeys >= 0
    val p = if (pending != null) pending else openPending(store)
    pending = null
    closeBaseView()
    val families = unflushedFamilies(store)
    // A heap working copy that keeps no sorted index takes the changes in any order: no sort.
    val sorted = heap == null || heap.keepsIndex
    val changes = if (sorted) store.changes.sortedChanges else store.changes.unsortedChanges
    writeSetSizeHint = math.min(store.changes.numEntries, MaxWriteSetSizeHint).toInt
    val heapFirst = heap != null
    try {
      val delta =
        if (heapFirst) {
          val d = applyToWorkingCopy(families, changes, sorted)
          flushInto(families, changes, p.writer, counting = false)
          d
        } else flushInto(families, changes, p.writer, counting)
      val newNumKeys = if (counting) numKeys + delta else -1L
      store.counters.changelogBytes += p.writer.finish(newNumKeys)
      store.counters.changelogRecords += p.writer.recordCount
      makeDurable(p.out)
      numKeys = newNumKeys
    } catch {
      case NonFatal(e) =>
        try p.out.cancel() catch { case NonFatal(c) => e.addSuppressed(c) }
        if (store.spilled || heapFirst) { closeDb(); loadedVersion = Empty }
        throw e
    }
    try {
      if (!heapFirst) applyToWorkingCopy(families, changes, sorted = true)
      if (heap != null && !heapFits()) moveHeapToDb()
      keepWithinBound(store)
    } catch {
      case NonFatal(e) =>
        // The changelog is durable; the local copy is not trustworthy: reload next time.
        closeDb(); loadedVersion = Empty
        throw e
    }
    loadedVersion = newVersion
    registry = store.registry
    store.counters.commitNanos += System.nanoTime() - started
    if (newVersion - lastSnapshotVersion >= math.max(1, storeConf.minDeltasForSnapshot)) {
      writeSnapshot(newVersion, store.counters)
    }
    newVersion
  }

  /** Finds out, in batched native multi-gets, which changed keys existed before this version. */
  private def resolveExistence(changes: Array[WriteSet.Entry]): Unit = {
    val keys = new java.util.ArrayList[Array[Byte]](ExistenceBatch)
    val entries = new java.util.ArrayList[WriteSet.Entry](ExistenceBatch)
    def flush(): Unit = if (!keys.isEmpty) {
      val found = localDb.multiGet(keys)
      var i = 0
      while (i < keys.size) {
        entries.get(i).existed = if (found.get(i) != null) WriteSet.Present else WriteSet.Absent
        i += 1
      }
      keys.clear(); entries.clear()
    }
    changes.foreach { e =>
      if (e.existed == WriteSet.Unknown) {
        keys.add(e.key); entries.add(e)
        if (keys.size >= ExistenceBatch) flush()
      }
    }
    flush()
  }

  private def countFamily(id: Short): Long = {
    val p = FamilyCodec.prefixOf(id)
    countRange(p, Bytes.prefixEnd(p))
  }

  private def writeSnapshot(version: Long, counters: StoreCounters): Unit = {
    val started = System.nanoTime()
    val file = path(StateFile.Snapshot, version)
    val out = files.create(file)
    val scan = if (heap != null) null else localDb.scan(Array.emptyByteArray, None)
    try {
      val w = new StateFile.Writer(out.stream, StateFile.Snapshot, version, fileIdentity)
      registry.ids.foreach { case (name, id) => w.family(id, name) }
      if (scan == null) heap.foreach((k, v) => w.put(k, v))
      else while (scan.valid) { w.put(scan.key, scan.value); scan.next() }
      w.finish(numKeys)
      out.commit()
      lastSnapshotVersion = version
      counters.snapshotsWritten += 1
    } catch {
      case NonFatal(e) =>
        // A snapshot is an optimisation: the changelogs still restore this version.
        try out.cancel() catch { case NonFatal(_) => }
        logWarning(s"$this could not write snapshot $file", e)
    } finally if (scan != null) scan.close()
    counters.snapshotNanos += System.nanoTime() - started
  }

  // ---- maintenance -------------------------------------------------------------------------

  /**
   * Deletes files no longer needed to restore any of the last `minVersionsToRetain` versions:
   * everything before the newest snapshot at or below the oldest version to keep.
   */
  override def doMaintenance(): Unit = synchronized {
    if (files == null) return
    val versions = listFiles()
    val latest = (versions.changelogs ++ versions.snapshots).maxOption.getOrElse(return)
    val oldestKept = latest - math.max(1, storeConf.minVersionsToRetain) + 1
    versions.snapshots.filter(_ <= oldestKept).maxOption.foreach { base =>
      versions.snapshots.filter(_ < base).foreach(v => files.delete(path(StateFile.Snapshot, v)))
      versions.changelogs.filter(_ <= base).foreach(v => files.delete(path(StateFile.Changelog, v)))
    }
  }

  // ---- column families ---------------------------------------------------------------------

  private[state] def registerCodec(codec: FamilyCodec): Unit = codecs.put(codec.name, codec)

  private[state] def codec(name: String, id: Short): FamilyCodec = {
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

  override def supportedCustomMetrics: Seq[StateStoreCustomMetric] = AllMetrics

  /** The one metrics method: everything a store version reports. */
  private[state] def metricsOf(store: KStateStore): StateStoreMetrics = {
    val c = store.counters
    val restore = if (store.hasCommitted) {
      val r = unreportedRestore; unreportedRestore = None; r
    } else None
    val custom: Map[StateStoreCustomMetric, Long] = Map(
      MetricDbGets -> c.dbGets,
      MetricCommitMs -> c.commitNanos / 1000000,
      MetricChangelogBytes -> c.changelogBytes,
      MetricChangelogRecords -> c.changelogRecords,
      MetricSnapshotMs -> c.snapshotNanos / 1000000,
      MetricSnapshotsWritten -> c.snapshotsWritten,
      MetricRestoreMs -> restore.map(_.millis).getOrElse(0L),
      MetricRestoreRecords -> restore.map(_.recordsReplayed).getOrElse(0L),
      MetricRestoredFromSnapshot -> restore.count(_.snapshotVersion.isDefined).toLong,
      MetricSpills -> c.spills,
      MetricSpilledRecords -> c.spilledRecords,
      MetricHeapBytes -> (if (heap != null) heap.heapBytes else 0L),
      MetricDbBytes -> Option(localDb).map(_.dataBytes).getOrElse(0L))
    val mem = if (heap != null) heap.heapBytes else Option(localDb).map(_.memoryBytes).getOrElse(0L)
    StateStoreMetrics(if (countsRows) math.max(numKeys, 0L) else -1L, mem, custom)
  }

  /** The most recent restore of this provider (for tests and logs). */
  def lastRestore: Option[RestoreInfo] = lastRestoreInfo

  // ---- files -------------------------------------------------------------------------------

  private def setting(key: String): Option[String] =
    storeConf.sqlConfs.get(key).orElse(storeConf.extraOptions.get(key))

  private def path(kind: StateFile.Kind, version: Long): Path = new Path(dir, s"$version.${kind.suffix}")

  private case class Versions(changelogs: Set[Long], snapshots: Set[Long])

  private def listFiles(): Versions = {
    val names = files.list()
    def versions(kind: StateFile.Kind): Set[Long] = names.flatMap { n =>
      val suffix = "." + kind.suffix
      if (n.endsWith(suffix)) n.stripSuffix(suffix).toLongOption else None
    }.toSet
    Versions(versions(StateFile.Changelog), versions(StateFile.Snapshot))
  }

  private def localDirOf: String = Option(localDb).map(_.directory.toString).getOrElse(localRoot.toString)

  private def localRoot: File = {
    val root = Option(SparkEnv.get).map(env => new File(Utils.getLocalDir(env.conf)))
      .getOrElse(new File(System.getProperty("java.io.tmpdir")))
    root.mkdirs()
    root
  }

  /** Drops the working copy, wherever it is. */
  private def closeDb(): Unit = {
    if (heap != null) {
      heap.clear()
      heap = null
      releaseHeap()
    }
    if (localDb != null) {
      closeBaseView()
      try localDb.close() finally localDb = null
    }
  }
}

object KStateStoreProvider {
  private def currentTask: Option[Long] = Option(TaskContext.get()).map(_.taskAttemptId())

  private val Empty = -1L
  /** Keys per native multi-get when resolving which changed keys existed. */
  private val ExistenceBatch = 4096
  /** Caps the write set's initial capacity (a version that spilled may have had many more). */
  private val MaxWriteSetSizeHint = 1L << 20
  private val Closed = -2L

  /** The changelog of a version being written in pieces by `store`'s spills. */
  private final case class PendingVersion(store: KStateStore, taskAttempt: Option[Long], file: Path,
      out: StateFiles.AtomicOutput, writer: StateFile.Writer)

  /** Same switch as Spark's RocksDB provider: count rows exactly (costs existence lookups). */
  val TrackRowsKey = "spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows"

  /** One restore: which version, from which snapshot, how many changelog records, how long. */
  final case class RestoreInfo(version: Long, snapshotVersion: Option[Long],
      recordsReplayed: Long, millis: Long)

  val MetricDbGets = StateStoreCustomSumMetric("kstateStoreDbGets",
    "kstate store: lookups that reached the working copy (heap or local RocksDB)")
  val MetricCommitMs = StateStoreCustomTimingMetric("kstateStoreCommitMs",
    "kstate store: time to write the changelog and apply it locally")
  val MetricChangelogBytes = StateStoreCustomSizeMetric("kstateStoreChangelogBytes",
    "kstate store: changelog bytes written", false)
  val MetricChangelogRecords = StateStoreCustomSumMetric("kstateStoreChangelogRecords",
    "kstate store: changelog records written")
  val MetricSnapshotMs = StateStoreCustomTimingMetric("kstateStoreSnapshotMs",
    "kstate store: time to write snapshots")
  val MetricSnapshotsWritten = StateStoreCustomSumMetric("kstateStoreSnapshotsWritten",
    "kstate store: snapshots written")
  val MetricRestoreMs = StateStoreCustomTimingMetric("kstateStoreRestoreMs",
    "kstate store: time to restore state from the checkpoint")
  val MetricRestoreRecords = StateStoreCustomSumMetric("kstateStoreRestoreRecordsReplayed",
    "kstate store: changelog records replayed during restore")
  val MetricRestoredFromSnapshot = StateStoreCustomSumMetric("kstateStoreRestoredFromSnapshot",
    "kstate store: restores that started from a snapshot")
  val MetricSpills = StateStoreCustomSumMetric("kstateStoreSpills",
    "kstate store: times uncommitted changes were spilled from the heap to local disk")
  val MetricSpilledRecords = StateStoreCustomSumMetric("kstateStoreSpilledRecords",
    "kstate store: changelog records written by spills")
  val MetricHeapBytes = StateStoreCustomSizeMetric("kstateStoreHeapBytes",
    "kstate store: heap bytes (estimated) of the committed state kept on the heap", false)
  val MetricDbBytes = StateStoreCustomSizeMetric("kstateStoreDbBytes",
    "kstate store: bytes in its local RocksDB, the disk tier (files and memtables: state off the heap, spilled changes)", false)
  val AllMetrics: Seq[StateStoreCustomMetric] = Seq(MetricDbGets, MetricCommitMs,
    MetricChangelogBytes, MetricChangelogRecords, MetricSnapshotMs, MetricSnapshotsWritten,
    MetricRestoreMs, MetricRestoreRecords, MetricRestoredFromSnapshot, MetricSpills,
    MetricSpilledRecords, MetricHeapBytes, MetricDbBytes)
}

