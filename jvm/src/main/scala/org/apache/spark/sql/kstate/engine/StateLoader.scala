package org.apache.spark.sql.kstate.engine

/**
 * Applies the records of state files to a store's working copy during a restore: to its
 * [[FamilyHeaps]] while that stays within its budget, else to its [[LocalDb]] through a
 * [[DbWriter]] (a file in key order as a table file ingested whole, other records in bounded
 * write batches). Column family records are collected, to be applied to the registry once the files
 * are verified.
 *
 * State files list a version's keys in key order (snapshots, and changelogs of versions that
 * did not spill), so records for the heap are gathered in runs of increasing keys and applied
 * with [[FamilyHeaps.applySorted]], which keeps the families' sorted indexes without a sort; a file
 * out of order (a spilled version's changelog) is applied record by record from there on.
 *
 * A snapshot holding a table file ([[TableFile]]: the snapshot of a copy that was in RocksDB) is
 * copied to a local file in `scratch`, then ingested into the database whole; it goes to the
 * heap instead, entry by entry, when the restore started on the heap and `room` holds the
 * table's entries with [[Headroom]] ([[HeapState.bytesFor]], from the table's properties), so that
 * a store which left the heap under another executor's budget returns to it. If the heap stops
 * fitting part way all the same, the rest goes to the database as usual.
 *
 * @param heap    the heap working copy to fill, or null to fill `db`
 * @param db      the database working copy to fill when `heap` is null
 * @param inOrder whether the file lists its keys in key order (a snapshot): records bound for
 *                the database are then written as a table file while they stay in order
 * @param fits    whether the heap state still fits its budget (checked every [[CheckEvery]]
 *                records and at `finish`)
 * @param moveToDb moves the heap state into a new local database and returns that database
 * @param scratch  a local directory for a table file being read (on the database's file system)
 * @param room     whether the heap copy could grow to the given bytes within its budget now
 * @param heapTableMaxEntries a table file of more entries than this goes to the database even
 *                 when the restore started on the heap; if `room` holds its heap estimate now
 *                 (without [[Headroom]]: the background build checks the budget as it goes),
 *                 `deferHeap` is called, and the heap copy is built in the background
 *                 ([[org.apache.spark.sql.kstate.provider.HeapRebuild]])
 * @param deferHeap called when a table went to the database for that reason
 */
private[kstate] final class StateLoader(
    heap: FamilyHeaps,
    db: LocalDb,
    fits: () => Boolean,
    moveToDb: () => LocalDb,
    inOrder: Boolean = false,
    scratch: () => java.io.File = () => new java.io.File(System.getProperty("java.io.tmpdir")),
    room: Long => Boolean = _ => false,
    heapTableMaxEntries: Long = Long.MaxValue,
    deferHeap: () => Unit = () => ()
) extends StateFile.Visitor with AutoCloseable {
  import StateLoader._

  private var onHeap: FamilyHeaps = heap
  private var writer: DbWriter = if (heap == null) new DbWriter(db, inOrder) else null
  private var pending = 0
  // The current run of increasing keys for the heap (entries 0 until runSize).
  private val run = if (heap == null) null else new Array[WriteSet.Entry](CheckEvery)
  private var runSize = 0
  // whether the heap records of this file came in key order so far
  private var sorted = true
  private var families = Vector.empty[Either[Short, (String, Short)]]

  override def put(key: Array[Byte], value: Array[Byte]): Unit = {
    if (onHeap != null) toHeap(key, value) else writer.put(key, value)
    bump()
  }

  override def delete(key: Array[Byte]): Unit = {
    if (onHeap != null) toHeap(key, WriteSet.Deleted) else writer.delete(key)
    bump()
  }

  /**
   * Adds a record to the run if it keeps key order (a loader reads one file), else applies it
   * alone (value [[WriteSet.Deleted]]: a delete).
   */
  private def toHeap(key: Array[Byte], value: Array[Byte]): Unit = {
    if (sorted && (runSize == 0 || Bytes.Order.compare(run(runSize - 1).key, key) < 0)) {
      run(runSize) = new WriteSet.Entry(new HashedKey(key), value, WriteSet.Unknown)
      runSize += 1
    } else {
      applyRun()
      sorted = false
      if (value eq WriteSet.Deleted) onHeap.delete(key) else onHeap.put(key, value)
    }
  }

  private def applyRun(): Unit = if (runSize > 0) {
    onHeap.applySorted(run, runSize)
    java.util.Arrays.fill(run.asInstanceOf[Array[AnyRef]], 0, runSize, null)
    runSize = 0
  }

  override def family(cf: Short, name: String): Unit = families :+= Right(name -> cf)

  override def dropFamily(cf: Short): Unit = {
    val p = FamilyCodec.prefixOf(cf)
    if (onHeap != null) { applyRun(); onHeap.deleteRange(p, Bytes.prefixEnd(p)) }
    else writer.deleteRange(p, FamilyCodec.rangeEnd(p))
    families :+= Left(cf)
    bump()
  }

  override def table(entries: Long, bytes: StateFile.TableBytes): Unit = {
    if (onHeap != null) applyRun()
    val file = TableFile.newFile(scratch(), "restore")
    try {
      val out = new java.io.BufferedOutputStream(new java.io.FileOutputStream(file), 1 << 16)
      try bytes.copyTo(out)
      finally out.close()
      val c = if (onHeap != null) TableFile.contents(file) else null
      val large = c != null && c.entries > heapTableMaxEntries
      if (c != null && !large && holdsWithHeadroom(room, c.entries, c.rawBytes)) {
        TableFile.foreach(file)((k, v) => put(k, v))
      } else {
        // built in the background if the budget holds it now (the build checks as it goes)
        if (large && room(HeapState.bytesFor(c.entries, c.rawBytes))) deferHeap()
        if (onHeap != null) toDb()
        writer.ingestTable(file, entries)
      }
    } finally file.delete()
  }

  /** Counts records bound for the heap; the database writer bounds its own batches. */
  private def bump(): Unit = if (onHeap != null) {
    pending += 1
    if (pending >= CheckEvery) checkHeap()
  }

  /** Applies the heap's pending run and checks the heap state's budget (no-op in the database). */
  private def checkHeap(): Unit = if (onHeap != null) {
    pending = 0
    applyRun()
    if (!fits()) toDb()
  }

  /** Moves the heap copy to the database; the rest of an ordered file continues after it (key order). */
  private def toDb(): Unit = {
    writer = new DbWriter(moveToDb(), inOrder && sorted)
    onHeap = null
  }

  /**
   * Applies everything read: call once the file is read and verified, before [[close]]. A heap
   * copy's hash indexes are built here, so that the restore's time (and a standby's catch-up,
   * not its first micro-batch as active) pays for them.
   */
  def finish(): Unit = {
    checkHeap()
    if (writer != null) writer.finish()
    if (onHeap != null) onHeap.buildHashIndexes()
  }

  /** Releases native resources; what was not finished is not written. Call once done. */
  def close(): Unit = if (writer != null) { writer.close(); writer = null }

  def applyFamilies(registry: FamilyRegistry): FamilyRegistry = families.foldLeft(registry) {
    case (r, Left(id)) => r.dropId(id)
    case (r, Right((name, id))) => r.restored(name, id)
  }
}

private[kstate] object StateLoader {

  /** Records per database write batch, and between heap budget checks. */
  val CheckEvery = 8192

  /**
   * A table file's entries go to the heap only if the heap would still hold them grown by this
   * factor: a state that fills its budget leaves the heap again at its next commits (or part way
   * through the restore, reading most of the table for nothing), where RocksDB ingests it whole.
   */
  val Headroom = 1.25

  /**
   * The rule deciding where a table file's entries go (and, for a heap copy's snapshot, whether
   * it is a table): whether `room` holds `entries` of `rawBytes` ([[HeapState.bytesFor]]) with [[Headroom]].
   */
  def holdsWithHeadroom(room: Long => Boolean, entries: Long, rawBytes: Long): Boolean =
    room((HeapState.bytesFor(entries, rawBytes) * Headroom).toLong)
}
