package org.apache.spark.sql.kstate.state.store

import java.util.TreeMap

/**
 * The uncommitted changes of one store version, ordered like RocksDB so scans can merge them
 * with the database. An entry is either a write (new value bytes), a delete
 * ([[WriteSet.Deleted]]), or a read-only note of whether the key existed before this version
 * (value null), kept so that row counting does not look the key up twice.
 */
private[kstate] final class WriteSet {
  import WriteSet._

  private val entries = new TreeMap[Array[Byte], Entry](Bytes.Order)

  def lookup(key: Array[Byte]): Entry = entries.get(key)

  def write(key: Array[Byte], value: Array[Byte]): Unit = {
    val e = entries.get(key)
    if (e == null) entries.put(key, new Entry(value, Unknown)) else e.value = value
  }

  def noteRead(key: Array[Byte], existed: Boolean): Unit =
    entries.put(key, new Entry(null, if (existed) Present else Absent))

  /** Written or deleted entries with keys in [from, until), in key order, copied out. */
  def changesIn(from: Array[Byte], until: Option[Array[Byte]]): Array[(Array[Byte], Array[Byte])] = {
    val view = until match {
      case Some(u) if Bytes.Order.compare(from, u) >= 0 => return Array.empty
      case Some(u) => entries.subMap(from, true, u, false)
      case None => entries.tailMap(from, true)
    }
    val out = Array.newBuilder[(Array[Byte], Array[Byte])]
    view.forEach((k, e) => if (e.value != null) out += ((k, e.value)))
    out.result()
  }

  /** Drops every entry with a key in [from, until). */
  def clearRange(from: Array[Byte], until: Option[Array[Byte]]): Unit = until match {
    case Some(u) if Bytes.Order.compare(from, u) >= 0 => ()
    case Some(u) => entries.subMap(from, true, u, false).clear()
    case None => entries.tailMap(from, true).clear()
  }

  /** All written or deleted entries, in key order. */
  def foreachChange(f: (Array[Byte], Entry) => Unit): Unit =
    entries.forEach((k, e) => if (e.value != null) f(k, e))

  def isEmpty: Boolean = entries.isEmpty
  def size: Int = entries.size
}

private[kstate] object WriteSet {
  /** Marks a deleted key; compared by reference. */
  val Deleted: Array[Byte] = new Array[Byte](0)

  final val Unknown: Byte = -1
  final val Absent: Byte = 0
  final val Present: Byte = 1

  /** `value`: new bytes, [[Deleted]], or null (read only). `existed`: before this version. */
  final class Entry(var value: Array[Byte], var existed: Byte) {
    def isDelete: Boolean = value eq Deleted
  }
}
