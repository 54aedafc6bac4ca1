package org.apache.spark.sql.kstate.engine

import java.io.File
import java.util.UUID

import org.rocksdb.{CompressionType, EnvOptions, Options, ReadOptions, SstFileReader, SstFileWriter}

/**
 * A RocksDB table file (SST) holding a state's entries in key order: the body of a snapshot of
 * a working copy in RocksDB ([[StateFile.Writer.table]]). A restore into RocksDB adds the file
 * to a new database whole (ingested: no key is decoded or rewritten), where a snapshot of one
 * record per key had every key read, decoded and written again. Blocks are LZ4-compressed, as
 * Spark's RocksDB provider writes its files, so the snapshot is also several times smaller.
 *
 * Files are local (RocksDB reads and writes table files only there): a snapshot writes one
 * beside the database and copies it into the state file; a restore copies it out again.
 */
private[kstate] object TableFile {

  /** A finished table file and the number of entries in it. */
  final case class Written(file: File, entries: Long)

  /** What a table file holds, from its properties: entries and their keys' and values' bytes. */
  final case class Contents(entries: Long, rawBytes: Long)

  // LocalDb's table format (its initialisation loads RocksDB's native library), LZ4-compressed
  private lazy val options: Options =
    new Options().setTableFormatConfig(LocalDb.newTableConfig()).setCompressionType(CompressionType.LZ4_COMPRESSION)

  /** A fresh name for a table file in `dir`. */
  def newFile(dir: File, prefix: String): File = new File(dir, s"$prefix-${UUID.randomUUID()}.sst")

  /**
   * Writes the entries `foreach` gives (strictly increasing unsigned key order) into a new table
   * file in `dir`. None when there are none (RocksDB writes no empty table file). On failure
   * nothing is left in `dir`.
   */
  def write(dir: File, foreach: ((Array[Byte], Array[Byte]) => Unit) => Unit): Option[Written] = {
    val file = newFile(dir, "snapshot")
    val env = new EnvOptions()
    val writer = new SstFileWriter(env, options)
    var entries = 0L
    var done = false
    try {
      writer.open(file.getAbsolutePath)
      foreach { (k, v) => writer.put(k, v); entries += 1 }
      if (entries > 0) writer.finish()
      done = true
    } finally {
      writer.close()
      env.close()
      if (!done || entries == 0) file.delete()
    }
    if (entries > 0) Some(Written(file, entries)) else None
  }

  /** Entries and raw key and value bytes of `file`, from its properties (no entry read). */
  def contents(file: File): Contents = withReader(file) { r =>
    val p = r.getTableProperties
    Contents(p.getNumEntries, p.getRawKeySize + p.getRawValueSize)
  }

  /** Passes every entry of `file` to `f`, in key order. */
  def foreach(file: File)(f: (Array[Byte], Array[Byte]) => Unit): Unit = withReader(file) { r =>
    val ro = new ReadOptions().setFillCache(false)
    val it = r.newIterator(ro)
    try {
      it.seekToFirst()
      while (it.isValid) { f(it.key(), it.value()); it.next() }
      it.status()
    } finally { it.close(); ro.close() }
  }

  private def withReader[T](file: File)(f: SstFileReader => T): T = {
    val r = new SstFileReader(options)
    try { r.open(file.getAbsolutePath); f(r) }
    finally r.close()
  }
}
