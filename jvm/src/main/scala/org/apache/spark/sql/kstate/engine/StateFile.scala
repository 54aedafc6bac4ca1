package org.apache.spark.sql.kstate.engine

import java.io.{EOFException, InputStream, OutputStream}

import org.apache.spark.sql.kstate.errors.KStateErrors

/**
 * The on-disk format of kstate's state files: per-version changelogs and full snapshots.
 *
 * {{{
 *   header  := magic:int  formatVersion:int  kind:byte  storeVersion:long  identity  [checkpoint]
 *   identity := operatorId:long  storeName:utf  partitionId:int      (format 2 on)
 *   checkpoint := id:utf  entries:int  (version:long id:utf)*        (formats 3 and 5: checkpoint format v2)
 *   record  := PUT klen:int key vlen:int value     (keys carry their column family prefix)
 *            | DELETE klen:int key
 *            | FAMILY cf:short name:utf           (a column family exists from here on)
 *            | DROP_FAMILY cf:short               (all its keys are gone from here on)
 *            | TABLE entries:long length:long bytes  (formats 4 and 5, snapshots only: every
 *                                                 entry, as one RocksDB table file, [[TableFile]])
 *   trailer := END records:long numKeys:long crc:int   (CRC32C of every byte before crc)
 * }}}
 *
 * A file is valid only with its complete trailer and a matching checksum, so a truncated or
 * bit-flipped file is always detected (never replayed as a shorter history). Files are written
 * through the checkpoint file manager's atomic create, so a crash mid-write leaves no file.
 *
 * Format 2 adds the writer's [[StateFileIdentity]] to the header: a valid file of another
 * store (another partition, operator id or store name) is refused on restore. Files of format 1
 * (the previous release) carry no identity: they are still read, for any store (unverifiable).
 * A format above 5 is a newer kstate's: refused with `KSTATE_CHECKPOINT_FROM_NEWER_KSTATE`
 * before anything after the version is read (docs/upgrades.md). A next format must keep the
 * magic number and the version where they are, and its kstate must read formats 2 to 5.
 *
 * Formats 4 and 5 are formats 2 and 3 with a TABLE record: the snapshot of a working copy in
 * RocksDB holds its entries as one table file, which a restore into RocksDB ingests whole. A
 * table's snapshot has its FAMILY records, then one TABLE, and no other record: a TABLE
 * anywhere else is corrupt. Files without a table keep formats 2 and 3 (the previous release
 * reads them).
 */
private[kstate] object StateFile {
  val Magic: Int = 0x4b53544c // "KSTL"
  /** The format written for checkpoint format v1: 2, with the writer's identity in the header. */
  val FormatVersion: Int = 2

  /** The format written for checkpoint format v2: 3, the identity plus a [[Checkpoint]]. */
  val FormatWithCheckpointId: Int = 3

  /** The previous release's format, without identity: still read, its owner unverifiable. */
  val FormatWithoutIdentity: Int = 1

  /** Format 2 with a TABLE record: a snapshot of a working copy in RocksDB, checkpoint format v1. */
  val FormatWithTable: Int = 4

  /** Format 3 with a TABLE record: a snapshot of a working copy in RocksDB, checkpoint format v2. */
  val FormatWithTableAndCheckpointId: Int = 5

  /** The formats read, oldest first. */
  val FormatsRead: Seq[Int] =
    Seq(FormatWithoutIdentity, FormatVersion, FormatWithCheckpointId, FormatWithTable, FormatWithTableAndCheckpointId)

  /** The newest format read. */
  val NewestFormat: Int = FormatWithTableAndCheckpointId

  private def hasCheckpoint(format: Int) = format == FormatWithCheckpointId || format == FormatWithTableAndCheckpointId
  private def hasTable(format: Int) = format >= FormatWithTable

  /** One version of a checkpoint-format-v2 store: its version and the id of the commit that made it. */
  final case class LineageEntry(version: Long, id: String) {
    override def toString: String = s"${version}_$id"
  }

  /**
   * A format-3 file's checkpoint fields: the id of the version it holds, and for a changelog of
   * version v its lineage, the entries of versions `v - lineage.size .. v - 1` (empty for v = 1,
   * and for a snapshot).
   */
  final case class Checkpoint(id: String, lineage: Seq[LineageEntry] = Nil)

  /** A file's header, as [[readHeader]] returns it (not verified against the checksum). */
  final case class Header(format: Int, identity: Option[StateFileIdentity], checkpoint: Option[Checkpoint])

  private val MaxLineage = 1 << 20

  sealed abstract class Kind(val tag: Byte, val suffix: String)
  case object Changelog extends Kind(1, "kstate.changelog")
  case object Snapshot extends Kind(2, "kstate.snapshot")

  final val Put: Byte = 1
  final val Delete: Byte = 2
  final val Family: Byte = 3
  final val DropFamily: Byte = 4
  final val Table: Byte = 5
  final val End: Byte = 0

  /** Receives the records of a file in order. */
  trait Visitor {
    def put(key: Array[Byte], value: Array[Byte]): Unit
    def delete(key: Array[Byte]): Unit
    def family(cf: Short, name: String): Unit
    def dropFamily(cf: Short): Unit

    /**
     * Every entry of the version, as one table file of `entries` entries: `bytes` reads it
     * (consume it before returning; what is left is skipped). It is not yet verified: the file's
     * checksum is checked after its trailer, as for every record.
     */
    def table(entries: Long, bytes: TableBytes): Unit
  }

  /** The bytes of a TABLE record, read once, in order. */
  trait TableBytes {

    /** Copies the (rest of the) table file's bytes to `out`. */
    def copyTo(out: OutputStream): Unit
  }

  /**
   * Writes one file of store `identity`; `close()` writes the trailer. Not thread-safe. With a
   * `checkpoint` (a store of checkpoint format v2) the file is format 3, else format 2; with
   * `withTable` (a snapshot whose entries are one [[table]]) 5 or 4.
   */
  final class Writer(
      raw: OutputStream,
      kind: Kind,
      storeVersion: Long,
      identity: StateFileIdentity,
      checkpoint: Option[Checkpoint] = None,
      withTable: Boolean = false
  ) {
    require(!withTable || kind == Snapshot, "only a snapshot holds a table file")
    private val out = new ChecksummedOutput(raw)
    private var records = 0L
    private var written: Option[Int] = None
    private var tableWritten = false

    out.writeInt(Magic)
    out.writeInt(
      (checkpoint.isDefined, withTable) match {
        case (false, false) => FormatVersion
        case (true, false) => FormatWithCheckpointId
        case (false, true) => FormatWithTable
        case (true, true) => FormatWithTableAndCheckpointId
      }
    )
    out.writeByte(kind.tag)
    out.writeLong(storeVersion)
    identity.writeTo(out)
    checkpoint.foreach { c =>
      out.writeUTF(c.id)
      out.writeInt(c.lineage.size)
      c.lineage.foreach { e => out.writeLong(e.version); out.writeUTF(e.id) }
    }

    def put(key: Array[Byte], value: Array[Byte]): Unit = {
      require(!withTable, "a table's snapshot holds its entries in the table only")
      out.writeByte(Put)
      out.writeInt(key.length); out.write(key)
      out.writeInt(value.length); out.write(value)
      records += 1
    }

    def delete(key: Array[Byte]): Unit = {
      out.writeByte(Delete)
      out.writeInt(key.length); out.write(key)
      records += 1
    }

    def family(cf: Short, name: String): Unit = {
      out.writeByte(Family); out.writeShort(cf); out.writeUTF(name)
      records += 1
    }

    def dropFamily(cf: Short): Unit = {
      out.writeByte(DropFamily); out.writeShort(cf)
      records += 1
    }

    /** Writes every entry as `file`, a finished table file of `entries` entries (once, after the families). */
    def table(file: java.io.File, entries: Long): Unit = {
      require(withTable && !tableWritten, "one table per snapshot written with withTable")
      val length = file.length()
      out.writeByte(Table); out.writeLong(entries); out.writeLong(length)
      val in = new java.io.FileInputStream(file)
      try out.writeFrom(in, length)
      finally in.close()
      tableWritten = true
      records += 1
    }

    /** Writes the trailer and flushes; the caller closes the underlying stream. */
    def finish(numKeys: Long): Long = {
      out.writeByte(End); out.writeLong(records); out.writeLong(numKeys)
      out.flush()
      val crc = out.checksum
      out.writeInt(crc)
      written = Some(crc)
      out.flush()
      raw.flush()
      out.size
    }

    def recordCount: Long = records

    /** The checksum in the trailer, once [[finish]] wrote it: tells this write of the file from another. */
    def checksum: Option[Int] = written
  }

  /**
   * What a fully read and verified file said; `identity` is None for a file of format 1, whose
   * owner cannot be verified; `checkpoint` is the checkpoint fields of a file of format 3.
   */
  final case class Summary(
      records: Long,
      numKeys: Long,
      identity: Option[StateFileIdentity],
      checkpoint: Option[Checkpoint] = None,
      checksum: Option[Int] = None
  )

  /** Receives records and drops them: the rest of a file of another store is only verified. */
  private object Discard extends Visitor {
    override def put(key: Array[Byte], value: Array[Byte]): Unit = ()
    override def delete(key: Array[Byte]): Unit = ()
    override def family(cf: Short, name: String): Unit = ()
    override def dropFamily(cf: Short): Unit = ()
    override def table(entries: Long, bytes: TableBytes): Unit = ()
  }

  /**
   * Reads and verifies `in`, a file of store `expected`, feeding every record to `visitor` as
   * it goes. `describe` names the file in errors. Throws `KSTATE_STATE_FILE_CORRUPT` on any
   * mismatch; records already fed to the visitor must then be discarded by the caller. A file
   * whose header names another store feeds the visitor nothing: it is read to its end and
   * verified, then refused naming both identities (a damaged one is reported as corrupt, so a
   * flipped bit in the identity is a checksum mismatch, not another store).
   *
   * `expectedId`: the checkpoint id the file must hold (a store of checkpoint format v2), None
   * for a store of format v1. A file holding another id, or an id where none is expected (or
   * none where one is), is refused the same way, after it was verified: it is a valid file of
   * another attempt of the version under this file's name.
   */
  def read(
      in: InputStream,
      kind: Kind,
      storeVersion: Long,
      expected: StateFileIdentity,
      describe: => String,
      visitor: Visitor,
      expectedId: Option[String] = None
  ): Summary = {
    val data = new ChecksummedInput(in)
    def corrupt(why: String) = KStateErrors.stateFileCorrupt(describe, storeVersion, why)
    try {
      val (fv, found, checkpoint) = readHeaderFields(data, kind, storeVersion, describe, corrupt)
      val foreign = found.filter(_ != expected)
      val foundId = checkpoint.map(_.id)
      val otherAttempt = foreign.isEmpty && foundId != expectedId
      val sink = if (foreign.isEmpty && !otherAttempt) visitor else Discard
      var n = 0L
      var done = false
      // a table's snapshot: its families, then the table, nothing else
      val tableExpected = hasTable(fv)
      var tables = 0
      def noTable(what: String): Unit =
        if (tableExpected) throw corrupt(s"a $what record in a snapshot holding a table file")
      while (!done) {
        data.readByte() match {
          case Put =>
            noTable("put")
            val key = readBytes(data, corrupt)
            val value = readBytes(data, corrupt)
            sink.put(key, value); n += 1
          case Delete =>
            noTable("delete")
            sink.delete(readBytes(data, corrupt)); n += 1
          case Family =>
            val cf = data.readShort()
            sink.family(cf, data.readUTF()); n += 1
          case DropFamily =>
            noTable("drop-family")
            sink.dropFamily(data.readShort()); n += 1
          case Table if tableExpected && tables == 0 =>
            val entries = data.readLong()
            val length = data.readLong()
            if (entries <= 0 || length <= 0) throw corrupt(s"invalid table of $entries entries, $length bytes")
            var left = length
            sink.table(
              entries,
              new TableBytes {
                override def copyTo(out: OutputStream): Unit = { data.copyTo(out, left); left = 0 }
              }
            )
            data.copyTo(null, left)
            left = 0
            tables += 1; n += 1
          case End =>
            if (tableExpected && tables == 0) throw corrupt("a snapshot of format 4 or 5 without its table file")
            done = true
          case other => throw corrupt(s"unknown record tag $other after $n records")
        }
      }
      val records = data.readLong()
      val numKeys = data.readLong()
      val computed = data.checksum
      val stored = data.readInt()
      if (records != n) throw corrupt(s"trailer counts $records records, file has $n")
      if (stored != computed) throw corrupt("checksum mismatch")
      if (!data.atEnd) throw corrupt("trailing bytes after the trailer")
      foreign.foreach { f =>
        throw KStateErrors.stateFileOfAnotherStore(describe, storeVersion, expected.toString, f.toString)
      }
      if (otherAttempt) {
        throw KStateErrors.stateFileOfAnotherCheckpointId(describe, storeVersion, expectedId, foundId)
      }
      Summary(records, numKeys, found, checkpoint, Some(stored))
    } catch {
      case _: EOFException => throw corrupt("file is truncated")
    }
  }

  /**
   * The header of `in`, a file of `kind` and `storeVersion`, without reading the records or
   * verifying the checksum (the full [[read]] of the same file does): to follow a lineage
   * before replaying it. Refuses what [[read]] refuses by the header alone (bad magic, a newer
   * or unknown format, another kind or version, a truncated header).
   */
  def readHeader(in: InputStream, kind: Kind, storeVersion: Long, describe: => String): Header = {
    val data = new ChecksummedInput(in)
    def corrupt(why: String) = KStateErrors.stateFileCorrupt(describe, storeVersion, why)
    try {
      val (fv, identity, checkpoint) = readHeaderFields(data, kind, storeVersion, describe, corrupt)
      Header(fv, identity, checkpoint)
    } catch {
      case _: EOFException => throw corrupt("file is truncated")
    }
  }

  private def readHeaderFields(
      data: ChecksummedInput,
      kind: Kind,
      storeVersion: Long,
      describe: => String,
      corrupt: String => Throwable
  ): (Int, Option[StateFileIdentity], Option[Checkpoint]) = {
    if (data.readInt() != Magic) throw corrupt("not a kstate state file (bad magic number)")
    val fv = data.readInt()
    // A newer kstate's file: refused by its version alone (its layout after it is unknown).
    if (fv > NewestFormat) {
      throw KStateErrors.checkpointFromNewerKstate("State file", describe, fv.toString, FormatsRead)
    }
    if (!FormatsRead.contains(fv)) throw corrupt(s"unknown format version $fv")
    val k = data.readByte()
    if (k != kind.tag) throw corrupt(s"file kind $k, expected ${kind.tag}")
    if (hasTable(fv) && kind != Snapshot)
      throw corrupt(s"a ${kind.suffix} of format $fv (formats 4 and 5 are snapshots)")
    val v = data.readLong()
    if (v != storeVersion) throw corrupt(s"file says version $v")
    val found = if (fv == FormatWithoutIdentity) None else Some(StateFileIdentity.readFrom(data))
    val checkpoint = if (!hasCheckpoint(fv)) None
    else {
      val id = data.readUTF()
      val n = data.readInt()
      if (n < 0 || n > MaxLineage) throw corrupt(s"invalid lineage length $n")
      val lineage = Vector.fill(n)(LineageEntry(data.readLong(), data.readUTF()))
      // a snapshot and version 1 have none; any other changelog leads, without a gap, to v - 1
      val contiguous =
        if (kind == Snapshot || v <= 1) lineage.isEmpty
        else lineage.nonEmpty && lineage.head.version >= 1 && lineage.last.version == v - 1 &&
        lineage.indices.forall(i => lineage(i).version == lineage.head.version + i)
      if (!contiguous) throw corrupt(s"its lineage ${lineage.mkString(", ")} does not lead to version ${v - 1}")
      Some(Checkpoint(id, lineage))
    }
    (fv, found, checkpoint)
  }

  private def readBytes(in: ChecksummedInput, corrupt: String => Throwable): Array[Byte] = {
    val len = in.readInt()
    if (len < 0 || len > (1 << 30)) throw corrupt(s"invalid record length $len")
    val b = new Array[Byte](len)
    in.readFully(b)
    b
  }
}
