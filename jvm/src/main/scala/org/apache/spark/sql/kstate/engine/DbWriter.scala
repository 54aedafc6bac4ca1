package org.apache.spark.sql.kstate.engine

import java.io.File
import java.util.UUID

import org.rocksdb.{EnvOptions, IngestExternalFileOptions, SstFileWriter, WriteBatch}

/**
 * Writes a stream of records into a [[LocalDb]] working copy (a restore, or a heap copy moving
 * to RocksDB), in one of two ways:
 *  - **table file**, while the puts arrive in strictly increasing unsigned key order (a
 *    snapshot, a heap copy walked by its sorted index): they are written straight into a
 *    RocksDB table file, which is added to the database whole at [[finish]] (ingested). No
 *    memtable, no flush, no compaction: RocksDB's bulk-load path. Decision: a cold restore of a
 *    state above the heap budget wrote every key through write batches and the memtable, most of
 *    the restore's time at 10 million keys (docs/state-store.md, "restore").
 *  - **write batches** of [[StateLoader.CheckEvery]] records otherwise. The first record out
 *    of order (a smaller key, a delete, a range delete) ingests the table file written so far and
 *    switches to batches for the rest; records are applied in the order received either way,
 *    so the result is the same as all batches (an ingested file's keys are newer than what the
 *    database held, and older than every batch written after it).
 *
 * `inOrder = false` starts with batches (a changelog, whose records are in no particular order).
 * Records become visible at [[flush]] (batches written so far) and [[finish]] (everything).
 * Not thread-safe. [[close]] releases native resources; a table file not yet ingested is deleted.
 *
 * @param write writes one batch (default: to `db`; the provider passes its fault-injection seam)
 */
private[kstate] final class DbWriter(
    db: LocalDb,
    inOrder: Boolean,
    write: WriteBatch => Unit = null
) extends AutoCloseable {
  private var file: File = _
  private var sst: SstFileWriter = _
  private var envOptions: EnvOptions = _
  private var last: Array[Byte] = _
  private var inFile = 0L
  private var batch: WriteBatch = if (inOrder) null else new WriteBatch()
  private var pending = 0
  private val writeBatch: WriteBatch => Unit = if (write == null) db.writeBatch else write

  /** Records written as a table file so far (for tests and logs). */
  private var ingested = 0L
  def recordsIngested: Long = ingested

  def put(key: Array[Byte], value: Array[Byte]): Unit =
    if (batch == null && (last == null || Bytes.Order.compare(last, key) < 0)) {
      if (sst == null) openFile()
      sst.put(key, value)
      last = key
      inFile += 1
    } else {
      toBatches()
      batch.put(key, value)
      bump()
    }

  def delete(key: Array[Byte]): Unit = {
    toBatches()
    batch.delete(key)
    bump()
  }

  /** Deletes the keys in [from, until). */
  def deleteRange(from: Array[Byte], until: Array[Byte]): Unit = {
    toBatches()
    batch.deleteRange(from, until)
    bump()
  }

  /**
   * Adds `file`, a finished table file in the database's directory, whole: its entries are newer
   * than every record written before (those are made visible first). The file is moved into
   * the database; on failure the caller deletes it.
   */
  def ingestTable(file: File, entries: Long): Unit = {
    ingestFile()
    flush()
    moveIn(file)
    ingested += entries
  }

  /** Ingests `file`, a finished table file in the database's directory, moving it in. */
  private def moveIn(file: File): Unit = {
    val o = new IngestExternalFileOptions().setMoveFiles(true)
    try db.ingest(file, o)
    finally o.close()
  }

  /** Writes the batched records; a table file in progress stays open. */
  def flush(): Unit = if (batch != null && pending > 0) {
    val b = batch
    batch = new WriteBatch()
    pending = 0
    try writeBatch(b)
    finally b.close()
  }

  /** Makes every record written so far visible. */
  def finish(): Unit = {
    ingestFile()
    flush()
  }

  override def close(): Unit = {
    if (batch != null) { batch.close(); batch = null }
    closeFile()
  }

  private def bump(): Unit = {
    pending += 1
    if (pending >= StateLoader.CheckEvery) flush()
  }

  private def toBatches(): Unit = if (batch == null) {
    ingestFile()
    batch = new WriteBatch()
  }

  private def openFile(): Unit = {
    file = new File(db.directory, s"load-${UUID.randomUUID()}.sst")
    envOptions = new EnvOptions()
    sst = new SstFileWriter(envOptions, db.tableOptions)
    sst.open(file.getAbsolutePath)
  }

  private def ingestFile(): Unit = if (sst != null) {
    try {
      if (inFile > 0) {
        sst.finish()
        moveIn(file)
        ingested += inFile
      }
    } finally closeFile()
  }

  private def closeFile(): Unit = if (sst != null) {
    try sst.close()
    finally {
      envOptions.close()
      file.delete()
      sst = null; envOptions = null; file = null; inFile = 0
    }
  }
}
