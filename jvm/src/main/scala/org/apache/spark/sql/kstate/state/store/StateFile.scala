package org.apache.spark.sql.kstate.state.store

import java.io.{EOFException, InputStream, OutputStream}

import io.kstate.KStateErrors

/**
 * The on-disk format of kstate's state files: per-version changelogs and full snapshots.
 *
 * {{{
 *   header  := magic:int  formatVersion:int  kind:byte  storeVersion:long  identity
 *   identity := operatorId:long  storeName:utf  partitionId:int      (format 2 on)
 *   record  := PUT klen:int key vlen:int value     (keys carry their column family prefix)
 *            | DELETE klen:int key
 *            | FAMILY cf:short name:utf           (a column family exists from here on)
 *            | DROP_FAMILY cf:short               (all its keys are gone from here on)
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
 * A format above 2 is a newer kstate's: refused with `KSTATE_CHECKPOINT_FROM_NEWER_KSTATE`
 * before anything after the version is read (docs/upgrades.md). A next format must keep the
 * magic number and the version where they are, and its kstate must read format 2.
 */
private[kstate] object StateFile {
  val Magic: Int = 0x4b53544c // "KSTL"
  /** The format written: 2, with the writer's identity in the header. */
  val FormatVersion: Int = 2
  /** The previous release's format, without identity: still read, its owner unverifiable. */
  val FormatWithoutIdentity: Int = 1
  /** The formats read, oldest first. */
  val FormatsRead: Seq[Int] = Seq(FormatWithoutIdentity, FormatVersion)

  sealed abstract class Kind(val tag: Byte, val suffix: String)
  case object Changelog extends Kind(1, "kstate.changelog")
  case object Snapshot extends Kind(2, "kstate.snapshot")

  final val Put: Byte = 1
  final val Delete: Byte = 2
  final val Family: Byte = 3
  final val DropFamily: Byte = 4
  final val End: Byte = 0

  /** Receives the records of a file in order. */
  trait Visitor {
    def put(key: Array[Byte], value: Array[Byte]): Unit
    def delete(key: Array[Byte]): Unit
    def family(cf: Short, name: String): Unit
    def dropFamily(cf: Short): Unit
  }

  /** Writes one file of store `identity`; `close()` writes the trailer. Not thread-safe. */
  final class Writer(raw: OutputStream, kind: Kind, storeVersion: Long, identity: StateFileIdentity) {
    private val out = new ChecksummedOutput(raw)
    private var records = 0L

    out.writeInt(Magic); out.writeInt(FormatVersion); out.writeByte(kind.tag)
    out.writeLong(storeVersion)
    identity.writeTo(out)

    def put(key: Array[Byte], value: Array[Byte]): Unit = {
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

    /** Writes the trailer and flushes; the caller closes the underlying stream. */
    def finish(numKeys: Long): Long = {
      out.writeByte(End); out.writeLong(records); out.writeLong(numKeys)
      out.flush()
      out.writeInt(out.checksum)
      out.flush()
      raw.flush()
      out.size
    }

    def recordCount: Long = records
  }

  /**
   * What a fully read and verified file said; `identity` is None for a file of format 1, whose
   * owner cannot be verified.
   */
  final case class Summary(records: Long, numKeys: Long, identity: Option[StateFileIdentity])

  /** Receives records and drops them: the rest of a file of another store is only verified. */
  private object Discard extends Visitor {
    override def put(key: Array[Byte], value: Array[Byte]): Unit = ()
    override def delete(key: Array[Byte]): Unit = ()
    override def family(cf: Short, name: String): Unit = ()
    override def dropFamily(cf: Short): Unit = ()
  }

  /**
   * Reads and verifies `in`, a file of store `expected`, feeding every record to `visitor` as
   * it goes. `describe` names the file in errors. Throws `KSTATE_STATE_FILE_CORRUPT` on any
   * mismatch; records already fed to the visitor must then be discarded by the caller. A file
   * whose header names another store feeds the visitor nothing: it is read to its end and
   * verified, then refused naming both identities (a damaged one is reported as corrupt, so a
   * flipped bit in the identity is a checksum mismatch, not another store).
   */
  def read(in: InputStream, kind: Kind, storeVersion: Long, expected: StateFileIdentity,
      describe: => String, visitor: Visitor): Summary = {
    val data = new ChecksummedInput(in)
    def corrupt(why: String) = KStateErrors.stateFileCorrupt(describe, storeVersion, why)
    try {
      if (data.readInt() != Magic) throw corrupt("not a kstate state file (bad magic number)")
      val fv = data.readInt()
      // A newer kstate's file: refused by its version alone (its layout after it is unknown).
      if (fv > FormatVersion) {
        throw KStateErrors.checkpointFromNewerKstate("State file", describe, fv.toString, FormatsRead)
      }
      if (fv != FormatVersion && fv != FormatWithoutIdentity) throw corrupt(s"unknown format version $fv")
      val k = data.readByte()
      if (k != kind.tag) throw corrupt(s"file kind $k, expected ${kind.tag}")
      val v = data.readLong()
      if (v != storeVersion) throw corrupt(s"file says version $v")
      val found = if (fv == FormatWithoutIdentity) None else Some(StateFileIdentity.readFrom(data))
      val foreign = found.filter(_ != expected)
      val sink = if (foreign.isEmpty) visitor else Discard
      var n = 0L
      var done = false
      while (!done) {
        data.readByte() match {
          case Put =>
            val key = readBytes(data, corrupt)
            val value = readBytes(data, corrupt)
            sink.put(key, value); n += 1
          case Delete =>
            sink.delete(readBytes(data, corrupt)); n += 1
          case Family =>
            val cf = data.readShort()
            sink.family(cf, data.readUTF()); n += 1
          case DropFamily =>
            sink.dropFamily(data.readShort()); n += 1
          case End => done = true
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
      Summary(records, numKeys, found)
    } catch {
      case _: EOFException => throw corrupt("file is truncated")
    }
  }

  private def readBytes(in: ChecksummedInput, corrupt: String => Throwable): Array[Byte] = {
    val len = in.readInt()
    if (len < 0 || len > (1 << 30)) throw corrupt(s"invalid record length $len")
    val b = new Array[Byte](len)
    in.readFully(b)
    b
  }
}
