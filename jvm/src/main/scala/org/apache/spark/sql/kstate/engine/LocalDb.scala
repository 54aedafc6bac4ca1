package org.apache.spark.sql.kstate.engine

import java.io.File
import java.nio.file.Files

import org.rocksdb._

import org.apache.spark.network.util.JavaUtils

/**
 * The local RocksDB instance behind one kstate state store: a working copy of the latest
 * committed version, rebuilt from the checkpoint whenever needed. It is never the durable copy
 * (the checkpoint's changelogs and snapshots are), so it runs without a write-ahead log and is
 * deleted on close.
 *
 * Keys are column-family-prefixed byte strings in RocksDB's single default column family.
 * Not thread-safe: the owning provider serialises access; the one exception is a
 * [[leasedScan]], which another thread (maintenance) may read while the owner goes on, and
 * which defers `close()` until it is closed.
 */
private[kstate] final class LocalDb(root: File) extends AutoCloseable {
  import LocalDb._

  private val dir: File = Files.createTempDirectory(root.toPath, "kstate-db-").toFile

  /** Where this working copy lives on local disk. */
  def directory: File = dir
  private val options = new Options()
    .setCreateIfMissing(true)
    .setTableFormatConfig(newTableConfig())
    .setWriteBufferSize(32L << 20)
    .setMaxWriteBufferNumber(3)
    .setCompressionType(CompressionType.NO_COMPRESSION)
    .setMaxBackgroundJobs(2)
    .setStatsDumpPeriodSec(0)
  private val writeOptions = new WriteOptions().setDisableWAL(true)
  private val readOptions = new ReadOptions()
  private val db: RocksDB = RocksDB.open(options, dir.getAbsolutePath)

  def get(key: Array[Byte]): Array[Byte] = db.get(readOptions, key)

  /** Looks up many keys in one native call; the result is aligned with `keys` (null = absent). */
  def multiGet(keys: java.util.List[Array[Byte]]): java.util.List[Array[Byte]] =
    db.multiGetAsList(readOptions, keys)

  /** Applies `batch`'s writes atomically. */
  def writeBatch(batch: WriteBatch): Unit = db.write(writeOptions, batch)

  /** The options table files for this database are written with ([[DbWriter]]). */
  private[engine] def tableOptions: Options = options

  /** Adds a finished table file to the database, its keys newer than every key before. */
  private[engine] def ingest(file: File, o: IngestExternalFileOptions): Unit =
    db.ingestExternalFile(java.util.Collections.singletonList(file.getAbsolutePath), o)

  /**
   * An iterator over keys in [from, until) (until = None: to the end), on a consistent view of
   * the database taken now. The caller must close it.
   */
  def scan(from: Array[Byte], until: Option[Array[Byte]]): DbScan = new DbScan(db, from, until, None)

  /** A frozen view of the database as it is now; the caller must close it before the database. */
  def view(): DbView = new DbView(db)

  /** Bytes of memory RocksDB uses for this instance (memtables and table readers). */
  def memoryBytes: Long = {
    def prop(p: String) =
      try db.getLongProperty(p)
      catch { case _: RocksDBException => 0L }
    prop("rocksdb.cur-size-all-mem-tables") + prop("rocksdb.estimate-table-readers-mem")
  }

  /** Bytes of data in this instance: its table files on local disk and its memtables. */
  def dataBytes: Long = {
    def prop(p: String) =
      try db.getLongProperty(p)
      catch { case _: RocksDBException => 0L }
    prop("rocksdb.total-sst-files-size") + prop("rocksdb.cur-size-all-mem-tables")
  }

  // Leases: scans handed to another thread (the snapshot maintenance writes), which the owner's
  // close must not pull from under them. Guarded by this object's monitor.
  private var leases = 0
  private var closing = false

  /**
   * A scan of the whole database on a snapshot taken now, for another thread than the owner's:
   * until it is closed, `close()` of the database is deferred (the last lease closes it). None
   * once the database is closing.
   */
  def leasedScan(): Option[StateScan] = synchronized {
    if (closing) None
    else {
      leases += 1
      Some(new DbScan(db, Array.emptyByteArray, None, None, () => releaseLease()))
    }
  }

  private def releaseLease(): Unit = synchronized {
    leases -= 1
    if (closing && leases == 0) closeNow()
  }

  /** Closes the database and deletes its files, once no lease is open (else the last lease does). */
  override def close(): Unit = synchronized {
    if (!closing) {
      closing = true
      if (leases == 0) closeNow()
    }
  }

  private def closeNow(): Unit =
    try {
      db.close(); writeOptions.close(); readOptions.close(); options.close()
    } finally JavaUtils.deleteRecursively(dir)
}

private[kstate] object LocalDb {
  RocksDB.loadLibrary()

  /** One block cache for all of an executor's kstate stores, so memory does not grow per store. */
  private lazy val sharedCache = new LRUCache(256L << 20)

  /** The table format of kstate's databases and of the table files it writes for them. */
  private[engine] def newTableConfig(): BlockBasedTableConfig = new BlockBasedTableConfig()
    .setBlockCache(sharedCache)
    .setFilterPolicy(new BloomFilter(10, false))
    .setBlockSize(16 << 10)
    .setCacheIndexAndFilterBlocks(false)
}

/**
 * The database as it was when the view was taken (a RocksDB snapshot): what the other stores of
 * a partition read while one store's uncommitted changes are being spilled into the database.
 */
private[kstate] final class DbView(db: RocksDB) extends AutoCloseable {
  private[kstate] val snapshot = db.getSnapshot
  private val options = new ReadOptions().setSnapshot(snapshot)

  def get(key: Array[Byte]): Array[Byte] = db.get(options, key)
  def scan(from: Array[Byte], until: Option[Array[Byte]]): DbScan = new DbScan(db, from, until, Some(this))

  override def close(): Unit = { options.close(); db.releaseSnapshot(snapshot) }
}

/** A forward scan of [from, until) over a database snapshot (its own, or a view's). */
private[kstate] final class DbScan(
    db: RocksDB,
    from: Array[Byte],
    until: Option[Array[Byte]],
    view: Option[DbView],
    onClose: () => Unit = () => ()
) extends StateScan {
  private val snapshot = view.map(_.snapshot).getOrElse(db.getSnapshot)
  private val upper = until.map(new Slice(_))
  private val options = {
    val o = new ReadOptions().setSnapshot(snapshot)
    upper.foreach(o.setIterateUpperBound)
    o
  }
  private val it = db.newIterator(options)
  private var closed = false
  it.seek(from)

  override def valid: Boolean = !closed && it.isValid
  override def key: Array[Byte] = it.key()
  override def value: Array[Byte] = it.value()
  override def next(): Unit = it.next()

  override def close(): Unit = if (!closed) {
    closed = true
    it.close(); options.close(); upper.foreach(_.close())
    if (view.isEmpty) db.releaseSnapshot(snapshot)
    onClose()
  }
}
