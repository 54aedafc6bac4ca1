package org.apache.spark.sql.kstate.provider

import java.io.File

import scala.util.control.NonFatal

import org.rocksdb.WriteBatch

import org.apache.spark.internal.Logging
import org.apache.spark.sql.kstate.engine._

/**
 * The working copy of one store: the latest committed version (plus a spilling store's
 * uncommitted changes), rebuilt from the checkpoint whenever needed; never the durable copy.
 *
 * Tiering: it starts on the heap ([[FamilyHeaps]]: a [[HeapState]] per column family) or in a local RocksDB ([[LocalDb]]); a heap
 * copy reserves its size from the executor's [[HeapStateBudget]] (`limit`) and moves to RocksDB
 * ([[moveToDb]]) when it no longer fits, or before a store spills into it. It moves back
 * ([[moveToHeap]]) when the provider asks (after a spilled version's commit) and it fits again.
 *
 * A cold restore of a state larger than `backgroundAbove` entries that would go to the heap goes
 * to RocksDB instead (its table snapshot ingested whole) and the heap copy is built from it in the
 * background ([[HeapRebuild]], started by [[startDeferredHeapRebuild]] at the restoring store's
 * commit, so that the restoring micro-batch does not share its cores); the copy moves to it at
 * the first commit or load after it is ready ([[adoptRebuiltHeap]]). Snapshots of a heap copy that
 * large are table files, so that its restore can do that.
 *
 * Threading: only the task thread changes it, under the provider's lock (restore, commit,
 * spill, adopting a rebuilt heap); the task thread reads it without the lock (a store's gets and
 * scans). A background rebuild reads only its own frozen scan of the database. Any other thread
 * (maintenance writing a snapshot) reads only [[frozen]], taken under the lock. [[close]] may
 * come from any thread holding the lock: a frozen RocksDB scan defers the database's close.
 *
 * @param writeLocally writes a batch into the database (the provider's seam for fault tests)
 * @param backgroundAbove entries above which a restore bound for the heap lands in RocksDB and
 *                        the heap copy is built in the background (-1: never)
 */
private[kstate] final class WorkingCopy(
    onHeapAtStart: Boolean,
    limit: Long,
    localRoot: () => File,
    writeLocally: (LocalDb, WriteBatch) => Unit,
    owner: String,
    backgroundAbove: Long = -1L
) extends Logging {
  private var heap: FamilyHeaps = if (onHeapAtStart) new FamilyHeaps else null
  private var db: LocalDb = if (onHeapAtStart) null else new LocalDb(localRoot())

  /** Bytes of [[HeapStateBudget]] reserved for `heap`. */
  private var reserved = 0L

  /** Whether a restore left the heap copy to a background build ([[StateLoader]]). */
  private var heapDeferred = false

  /** The heap copy being built in the background, if any. */
  private var rebuild: HeapRebuild = null

  def onHeap: Boolean = heap != null

  /** Heap held by a heap copy (0 in RocksDB). */
  def heapBytes: Long = if (heap != null) heap.heapBytes else 0L
  def reservedBytes: Long = reserved

  /** Data in the local database (its files and memtables), the disk tier. */
  def dbBytes: Long = if (db != null) db.dataBytes else 0L

  /** The heap copy's size, or RocksDB's memtables and table readers. */
  def memoryBytes: Long = if (heap != null) heap.heapBytes else if (db != null) db.memoryBytes else 0L
  def localDir: Option[File] = Option(db).map(_.directory)

  /**
   * Whether a version's changes must arrive in key order: RocksDB's do; a heap copy takes any
   * order and sorts those of the families it keeps an index for ([[FamilyHeaps.applyChanges]]).
   */
  def wantsSorted: Boolean = heap == null

  def get(key: HashedKey): Array[Byte] = if (heap != null) heap.get(key) else db.get(key.bytes)

  def scan(from: Array[Byte], until: Option[Array[Byte]]): StateScan =
    if (heap != null) heap.scan(from, until) else db.scan(from, until)

  /** The entries under `prefix` except `skip`, unordered, frozen now: heap copies only. */
  def unordered(prefix: Array[Byte], skip: HashedKey => Boolean): Option[Iterator[(Array[Byte], Array[Byte])]] =
    if (heap == null) None else Some(heap.entriesWithPrefix(prefix, skip))

  /** A frozen view of the database as it is now (RocksDB copies only: move it first). */
  def view(): DbView = db.view()

  /** Number of keys in [from, until) (for the database, a scan). */
  def count(from: Array[Byte], until: Option[Array[Byte]]): Long =
    if (heap != null) heap.count(from, until)
    else {
      val scan = db.scan(from, until)
      var n = 0L
      try while (scan.valid) { n += 1; scan.next() }
      finally scan.close()
      n
    }

  def countAll(): Long = count(Array.emptyByteArray, None)

  /** Whether the heap copy fits the executor's budget; adjusts the reservation if it does. */
  def fitsBudget(): Boolean = {
    val want = heap.heapBytes
    if (want <= reserved) {
      HeapStateBudget.release(reserved - want)
      reserved = want
      true
    } else if (HeapStateBudget.tryReserve(want - reserved, limit)) {
      reserved = want
      true
    } else false
  }

  /**
   * Moves the heap copy into a new local database (it outgrew its budget or bound, or a store
   * is about to spill into it); no-op in RocksDB. On failure the caller discards the copy.
   */
  def moveToDb(): Unit = if (heap != null) {
    val from = heap
    db = new LocalDb(localRoot())
    // in key order when the heap copy's sorted indexes are valid: then written as a table file
    val target = db
    val w = new DbWriter(target, inOrder = from.iteratesInKeyOrder, b => writeLocally(target, b))
    try {
      from.foreach((k, v) => w.put(k, v))
      w.finish()
    } finally w.close()
    heap = null
    val entries = from.size
    from.clear()
    releaseReservation()
    logInfo(s"$owner: state moved from the heap to local RocksDB ($entries entries)")
  }

  /**
   * Moves a RocksDB copy back to the heap if it fits: every entry, in key order, into a new heap
   * copy, with `fits` (which measures [[heapBytes]]) checked every [[StateLoader.CheckEvery]]
   * entries and at the end. When it stops fitting, the new heap copy is dropped and the copy stays
   * in RocksDB, unchanged. No-op on the heap. Returns whether the copy is on the heap.
   */
  def moveToHeap(fits: () => Boolean): Boolean = if (heap != null) true
  else {
    cancelHeapRebuild()
    val from = db
    heap = new FamilyHeaps
    var ok = true
    val scan = from.scan(Array.emptyByteArray, None)
    try {
      ok = heap.applyScan(scan, fits)._2
      ok = ok && fits()
    } catch {
      case e: Throwable => heap.clear(); heap = null; releaseReservation(); throw e
    } finally scan.close()
    if (ok) {
      db = null
      from.close()
      logInfo(s"$owner: state moved from local RocksDB back to the heap (${heap.size} entries)")
    } else {
      heap.clear()
      heap = null
      releaseReservation()
    }
    ok
  }

  /**
   * Applies family drops (their prefixes) and `changes` (in key order if `sorted`) to the copy:
   * heap, or one database batch. For the heap, returns the change in the number of keys (the
   * database does not tell: 0).
   */
  def apply(dropped: Seq[Array[Byte]], changes: Array[WriteSet.Entry], sorted: Boolean): Long =
    if (heap != null) {
      val gone = dropped.map(p => heap.deleteRange(p, Bytes.prefixEnd(p))).sum
      (if (sorted) heap.applySorted(changes, changes.length) else heap.applyChanges(changes)) - gone
    } else {
      val batch = new WriteBatch()
      try {
        dropped.foreach(p => batch.deleteRange(p, FamilyCodec.rangeEnd(p)))
        changes.foreach(e => if (e.isDelete) batch.delete(e.key) else batch.put(e.key, e.value))
        writeLocally(db, batch)
      } finally batch.close()
      if (rebuild != null) {
        if (sorted) rebuild.log(dropped, changes)
        else cancelHeapRebuild()
      }
      0L
    }

  /** Notes, for each change not yet known, whether its key exists (batched multi-gets in RocksDB). */
  def resolveExistence(changes: Array[WriteSet.Entry]): Unit =
    if (heap != null) {
      changes.foreach { e =>
        if (e.existed == WriteSet.Unknown)
          e.existed = if (heap.contains(new HashedKey(e.key))) WriteSet.Present else WriteSet.Absent
      }
    } else {
      val keys = new java.util.ArrayList[Array[Byte]](WorkingCopy.ExistenceBatch)
      val entries = new java.util.ArrayList[WriteSet.Entry](WorkingCopy.ExistenceBatch)
      def flush(): Unit = if (!keys.isEmpty) {
        val found = db.multiGet(keys)
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
          if (keys.size >= WorkingCopy.ExistenceBatch) flush()
        }
      }
      flush()
    }

  /**
   * A loader for restoring state files into this copy: into the heap while `fits` holds (checked
   * as it goes), else into the database (the heap part moved there first).
   */
  def loader(fits: () => Boolean, inOrder: Boolean = false): StateLoader = {
    // records written to the database from here are not the rebuild's to follow: it starts
    // again after them ([[startDeferredHeapRebuild]])
    if (rebuild != null || heapDeferred) { cancelHeapRebuild(); heapDeferred = true }
    val heapTableMax = if (backgroundAbove >= 0 && heap != null) backgroundAbove else Long.MaxValue
    new StateLoader(
      heap,
      db,
      fits,
      () => { moveToDb(); db },
      inOrder,
      localRoot,
      room,
      heapTableMax,
      () => heapDeferred = true
    )
  }

  /** Whether a restore into this copy left its heap copy to a background build (it is in RocksDB). */
  def restoredForBackgroundHeap: Boolean = heapDeferred && heap == null

  /**
   * Starts the heap copy's background build that a restore left to it ([[restoredForBackgroundHeap]]),
   * from a frozen scan of the database as it is now ([[HeapRebuild]]): `admits` is the store's
   * own bound. Called at the restoring store's commit (or the next load), not by the restore: the
   * micro-batch that restored keeps its cores to itself. No-op otherwise. Call under the
   * provider's lock.
   */
  def startDeferredHeapRebuild(admits: Long => Boolean): Unit =
    if (restoredForBackgroundHeap && rebuild == null) {
      heapDeferred = false
      db.leasedScan().foreach(scan => rebuild = HeapRebuild.start(new HeapRebuild(scan, limit, admits, owner)))
    }

  /** The background build under way or ready, if any (for tests and metrics). */
  private[kstate] def heapRebuild: Option[HeapRebuild] = Option(rebuild)

  /**
   * Moves to the heap copy built in the background once it is ready: applies the versions
   * committed since its scan, then checks the budget and the store's bound (`admits`) again; if
   * they hold, the database is dropped. A build that ended without a heap (no room, failed), or
   * whose log fails to apply, is forgotten and the copy stays in RocksDB, as it was: this never
   * fails the caller. Returns whether the copy moved. Call under the provider's lock, between
   * micro-batches (at a load or a commit).
   */
  def adoptRebuiltHeap(admits: Long => Boolean): Boolean = rebuild != null && {
    val r = rebuild
    r.take() match {
      case None =>
        if (r.over) rebuild = null
        false
      case Some((built, bytes)) =>
        rebuild = null
        val replayed =
          try { r.replayLog(built); true }
          catch {
            case NonFatal(e) =>
              // the database copy is untouched: it goes on serving
              logWarning(
                s"$owner: applying the versions committed during its heap copy's build failed; it stays in RocksDB",
                e
              )
              built.clear()
              HeapStateBudget.release(bytes)
              false
          }
        if (!replayed) return false
        heap = built
        reserved = bytes
        if (fitsBudget() && admits(heap.heapBytes)) {
          val from = db
          db = null
          from.close()
          logInfo(s"$owner: state moved from local RocksDB to the heap copy built in the background " +
            s"(${r.entriesRead} entries read in ${r.buildMillis} ms)")
          true
        } else {
          heap.clear()
          heap = null
          releaseReservation()
          false
        }
    }
  }

  /** Stops a background heap build, started or not yet: the copy stays where it is. */
  def cancelHeapRebuild(): Unit = {
    heapDeferred = false
    if (rebuild != null) {
      rebuild.cancel()
      rebuild = null
    }
  }

  /**
   * Whether a heap copy this size would not be restored to the heap on this executor as it
   * stands (by the restore's own rule, [[StateLoader]]: its estimate does not fit with
   * [[StateLoader.Headroom]] beside the other stores' heap): its
   * snapshot is then a table file too, which a restore ingests into RocksDB whole rather than
   * decoding every key to move them there.
   */
  private def tooLargeToRestoreOnHeap: Boolean = !StateLoader.holdsWithHeadroom(room, heap.size, heap.rawBytes)

  /** The heap a restore estimates for the heap copy from its table file ([[StateLoader]]); 0 in RocksDB. */
  def restoreEstimate: Long = if (heap == null) 0L else HeapState.bytesFor(heap.size, heap.rawBytes)

  /** Whether the heap copy could grow to `bytes` within the executor's budget now. */
  private def room(bytes: Long): Boolean =
    heap != null && HeapStateBudget.reserved - reserved + bytes <= limit

  /**
   * Every committed entry as it is now, for another thread to read (a snapshot): a heap copy's
   * frozen iteration, or a scan on a RocksDB snapshot that defers the database's close until it
   * is closed. None if the database is already closing. Take it under the provider's lock.
   * Entries to snapshot as a table file ([[FrozenEntries.tableDir]]), with `tables`: a copy in
   * RocksDB, a heap copy in key order too large to be restored on the heap, and a heap copy of
   * more than `backgroundAbove` entries, sorted for it if need be when the reader starts (every
   * snapshot is written off the micro-batch's path: maintenance, [[ForcedSnapshots]]).
   */
  def frozen(tables: Boolean = true): Option[FrozenEntries] =
    if (heap != null) {
      // a heap copy large enough that its restore is built in the background: a table, sorted
      // for it if need be (its restore ingests it into RocksDB)
      val background = tables && backgroundAbove >= 0 && heap.size > backgroundAbove
      val it = if (background) heap.frozenEntriesInKeyOrder() else heap.frozenEntries()
      val table =
        if (background || (tables && heap.iteratesInKeyOrder && tooLargeToRestoreOnHeap)) Some(localRoot()) else None
      Some(new FrozenEntries {
        override def foreach(f: (Array[Byte], Array[Byte]) => Unit): Unit = it.foreach { case (k, v) => f(k, v) }
        override def close(): Unit = ()
        override def tableDir: Option[File] = table
      })
    } else db.leasedScan().map { scan =>
      val dir = if (tables) Some(db.directory) else None
      new FrozenEntries {
        override def foreach(f: (Array[Byte], Array[Byte]) => Unit): Unit =
          while (scan.valid) { f(scan.key, scan.value); scan.next() }
        override def close(): Unit = scan.close()
        override def tableDir: Option[File] = dir
      }
    }

  private def releaseReservation(): Unit = {
    HeapStateBudget.release(reserved)
    reserved = 0L
  }

  /** Drops the copy, wherever it is, and releases its heap reservation. */
  def close(): Unit = {
    cancelHeapRebuild()
    if (heap != null) {
      heap.clear()
      heap = null
      releaseReservation()
    }
    if (db != null) {
      try db.close()
      finally db = null
    }
  }
}

private[kstate] object WorkingCopy {

  /** Keys per native multi-get when resolving which changed keys existed. */
  val ExistenceBatch = 4096
}

/** A committed version's entries, frozen, for another thread to read once; close it after. */
private[kstate] trait FrozenEntries extends AutoCloseable {
  def foreach(f: (Array[Byte], Array[Byte]) => Unit): Unit

  /**
   * Where to write the entries as a RocksDB table file for a snapshot (a copy in RocksDB: the
   * snapshot is then one table file, which a restore ingests whole), or None (records).
   */
  def tableDir: Option[File] = None
}
