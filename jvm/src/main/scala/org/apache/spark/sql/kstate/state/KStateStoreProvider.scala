package org.apache.spark.sql.kstate.state

import java.io.{File, FileNotFoundException}
import java.util.concurrent.ConcurrentHashMap

import scala.util.control.NonFatal

import io.kstate.KStateErrors
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.rocksdb.WriteBatch

import org.apache.spark.SparkEnv
import org.apache.spark.internal.Logging
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.kstate.state.store._
import org.apache.spark.sql.types.StructType
import org.apache.spark.util.Utils

/**
 * kstate's state store provider: a local RocksDB working copy per store, made durable by
 * per-version changelog files and periodic snapshots in the state checkpoint directory.
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
 *   LOADED(v) --getStore(v)--> LOADED(v)         reuse, no I/O
 *   LOADED(v) --getStore(w != v)--> LOADED(w)    full restore of w
 *   LOADED(v) --commit of a store at v--> LOADED(v+1)   changelog written, then applied locally
 *   any --failed restore or apply--> EMPTY       nothing half-loaded is ever served
 *   any --close--> CLOSED
 * }}}
 * Abort needs no transition: an aborted store never touched the database.
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
  private var fm: CheckpointFileManager = _
  private var dir: Path = _
  private[state] var countsRows: Boolean = true

  private var localDb: LocalDb = _
  @volatile private[state] var loadedVersion: Long = Empty
  private var registry: FamilyRegistry = _
  private var numKeys: Long = 0
  private var lastSnapshotVersion: Long = 0
  private val codecs = new ConcurrentHashMap[String, FamilyCodec]()
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
    this.dir = stateStoreId.storeCheckpointLocation()
    this.fm = CheckpointFileManager.create(dir, hadoopConf)
    fm.mkdirs(dir)
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
    closeDb()
    loadedVersion = Closed
  }

  override def toString: String = s"KStateStoreProvider[$storeId]"

  // ---- restore -----------------------------------------------------------------------------

  private[state] def db: LocalDb = localDb

  private def ensureLoaded(version: Long): Unit = {
    if (loadedVersion == Closed) throw new IllegalStateException(s"$this is closed")
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
    localDb = new LocalDb(localRoot)
    registry = FamilyRegistry.initial(StateStore.DEFAULT_COL_FAMILY_NAME)
    numKeys = 0
    lastSnapshotVersion = 0
    var replayed = 0L
    var snapshotUsed: Option[Long] = None
    if (version > 0) {
      val files = listFiles()
      snapshotUsed = files.snapshots.filter(_ <= version).maxOption
      snapshotUsed.foreach { s =>
        val summary = load(StateFile.Snapshot, s, version)
        numKeys = summary.numKeys
        lastSnapshotVersion = s
      }
      var v = snapshotUsed.getOrElse(0L) + 1
      while (v <= version) {
        if (!files.changelogs.contains(v)) {
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

  /** Reads one verified file into the local database. */
  private def load(kind: StateFile.Kind, version: Long, target: Long): StateFile.Summary = {
    val p = path(kind, version)
    val in = try fm.open(p) catch {
      case _: FileNotFoundException => throw KStateErrors.stateFileMissing(p.toString, version, target)
    }
    val sink = new DbLoader(localDb)
    try {
      val summary = StateFile.read(in, kind, version, p.toString, sink)
      sink.flush()
      registry = sink.applyFamilies(registry)
      summary
    } catch {
      case NonFatal(e) => sink.discard(); throw e
    } finally in.close()
  }

  private def countAll(): Long = countRange(Array.emptyByteArray, None)

  /** Number of keys in [from, until) of the local database (a full scan of that range). */
  private def countRange(from: Array[Byte], until: Option[Array[Byte]]): Long = {
    val scan = localDb.scan(from, until)
    var n = 0L
    try while (scan.valid) { n += 1; scan.next() } finally scan.close()
    n
  }

  // ---- commit ------------------------------------------------------------------------------

  /** Makes `store`'s changes version `store.version + 1`: durable first, then local. */
  private[state] def commit(store: KStateStore): Long = synchronized {
    val started = System.nanoTime()
    if (loadedVersion != store.version) {
      throw new IllegalStateException(s"cannot commit $store: the provider holds version " +
        s"$loadedVersion (another store of this partition committed or reloaded first)")
    }
    val newVersion = store.version + 1
    val counting = countsRows && numKeys >= 0
    val changes = store.changes.sortedChanges
    if (counting) resolveExistence(changes)
    // One pass over the changes: changelog records, the local write batch, the row count delta.
    var delta = 0L
    val file = path(StateFile.Changelog, newVersion)
    val batch = new WriteBatch()
    try {
      store.droppedFamilies.foreach { id =>
        val p = FamilyCodec.prefixOf(id)
        batch.deleteRange(p, Bytes.prefixEnd(p).getOrElse(Array[Byte](-1, -1, -1)))
      }
      // Dropped families: their keys are gone (counted by a scan, as drops are rare).
      val droppedKeys = if (counting) store.droppedFamilies.map(countFamily).sum else 0L
      val out = fm.createAtomic(file, true)
      try {
        val w = new StateFile.Writer(out, StateFile.Changelog, newVersion)
        store.droppedFamilies.foreach(w.dropFamily)
        store.createdFamilies.foreach { case (name, id) => w.family(id, name) }
        changes.foreach { e =>
          if (e.isDelete) {
            w.delete(e.key); batch.delete(e.key)
            if (e.existed == WriteSet.Present) delta -= 1
          } else {
            w.put(e.key, e.value); batch.put(e.key, e.value)
            if (e.existed != WriteSet.Present) delta += 1
          }
        }
        val newNumKeys = if (counting) numKeys + delta - droppedKeys else -1L
        store.counters.changelogBytes += w.finish(newNumKeys)
        store.counters.changelogRecords += w.recordCount
        out.close()
        numKeys = newNumKeys
      } catch {
        case NonFatal(e) =>
          try out.cancel() catch { case NonFatal(c) => e.addSuppressed(c) }
          throw e
      }
      try localDb.writeBatch(batch) catch {
        case NonFatal(e) =>
          // The changelog is durable; the local copy is not trustworthy: reload next time.
          closeDb(); loadedVersion = Empty
          throw e
      }
    } finally batch.close()
    loadedVersion = newVersion
    registry = store.registry
    store.counters.commitNanos += System.nanoTime() - started
    if (newVersion - lastSnapshotVersion >= math.max(1, storeConf.minDeltasForSnapshot)) {
      writeSnapshot(newVersion, store.counters)
    }
    newVersion
  }

  /** Finds out, in batched native lookups, which changed keys existed before this version. */
  private def resolveExistence(changes: Array[WriteSet.Entry]): Unit = {
    val keys = new java.util.ArrayList[Array[Byte]]()
    val entries = new java.util.ArrayList[WriteSet.Entry]()
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
        if (keys.size >= 4096) flush()
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
    val out = fm.createAtomic(file, true)
    val scan = localDb.scan(Array.emptyByteArray, None)
    try {
      val w = new StateFile.Writer(out, StateFile.Snapshot, version)
      registry.ids.foreach { case (name, id) => w.family(id, name) }
      while (scan.valid) { w.put(scan.key, scan.value); scan.next() }
      w.finish(numKeys)
      out.close()
      lastSnapshotVersion = version
      counters.snapshotsWritten += 1
    } catch {
      case NonFatal(e) =>
        // A snapshot is an optimisation: the changelogs still restore this version.
        try out.cancel() catch { case NonFatal(_) => }
        logWarning(s"$this could not write snapshot $file", e)
    } finally scan.close()
    counters.snapshotNanos += System.nanoTime() - started
  }

  // ---- maintenance -------------------------------------------------------------------------

  /**
   * Deletes files no longer needed to restore any of the last `minVersionsToRetain` versions:
   * everything before the newest snapshot at or below the oldest version to keep.
   */
  override def doMaintenance(): Unit = synchronized {
    if (fm == null) return
    val files = listFiles()
    val latest = (files.changelogs ++ files.snapshots).maxOption.getOrElse(return)
    val oldestKept = latest - math.max(1, storeConf.minVersionsToRetain) + 1
    files.snapshots.filter(_ <= oldestKept).maxOption.foreach { base =>
      files.snapshots.filter(_ < base).foreach(v => fm.delete(path(StateFile.Snapshot, v)))
      files.changelogs.filter(_ <= base).foreach(v => fm.delete(path(StateFile.Changelog, v)))
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
      MetricRestoredFromSnapshot -> restore.count(_.snapshotVersion.isDefined).toLong)
    val mem = Option(localDb).map(_.memoryBytes).getOrElse(0L)
    StateStoreMetrics(if (countsRows) math.max(numKeys, 0L) else -1L, mem, custom)
  }

  /** The most recent restore of this provider (for tests and logs). */
  def lastRestore: Option[RestoreInfo] = lastRestoreInfo

  // ---- files -------------------------------------------------------------------------------

  private def setting(key: String): Option[String] =
    storeConf.sqlConfs.get(key).orElse(storeConf.extraOptions.get(key))

  private def path(kind: StateFile.Kind, version: Long): Path = new Path(dir, s"$version.${kind.suffix}")

  private case class Files(changelogs: Set[Long], snapshots: Set[Long])

  private def listFiles(): Files = {
    val names = if (fm.exists(dir)) fm.list(dir).map(_.getPath.getName).toSeq else Nil
    def versions(kind: StateFile.Kind): Set[Long] = names.flatMap { n =>
      val suffix = "." + kind.suffix
      if (n.endsWith(suffix)) n.stripSuffix(suffix).toLongOption else None
    }.toSet
    Files(versions(StateFile.Changelog), versions(StateFile.Snapshot))
  }

  private def localRoot: File = {
    val root = Option(SparkEnv.get).map(env => new File(Utils.getLocalDir(env.conf)))
      .getOrElse(new File(System.getProperty("java.io.tmpdir")))
    root.mkdirs()
    root
  }

  private def closeDb(): Unit = if (localDb != null) {
    try localDb.close() finally localDb = null
  }
}

object KStateStoreProvider {
  private val Empty = -1L
  private val Closed = -2L

  /** Same switch as Spark's RocksDB provider: count rows exactly (costs existence lookups). */
  val TrackRowsKey = "spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows"

  /** One restore: which version, from which snapshot, how many changelog records, how long. */
  final case class RestoreInfo(version: Long, snapshotVersion: Option[Long],
      recordsReplayed: Long, millis: Long)

  val MetricDbGets = StateStoreCustomSumMetric("kstateStoreDbGets",
    "kstate store: lookups that reached the local database")
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
  val AllMetrics: Seq[StateStoreCustomMetric] = Seq(MetricDbGets, MetricCommitMs,
    MetricChangelogBytes, MetricChangelogRecords, MetricSnapshotMs, MetricSnapshotsWritten,
    MetricRestoreMs, MetricRestoreRecords, MetricRestoredFromSnapshot)
}
