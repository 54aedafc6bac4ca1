package org.apache.spark.sql.kstate.repartition

import java.nio.ByteBuffer

import scala.collection.mutable

import org.apache.spark.sql.kstate.errors.KStateErrors

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter
import org.apache.spark.sql.kstate.operatorstate.StateMeta
import org.apache.spark.sql.kstate.operatorstate.TimeOrderedBuffer
import org.apache.spark.sql.kstate.operatorstate.VersionedKeyValueStore
import org.apache.spark.sql.types.StructType

/**
 * Counts what a new state partition receives, family by family, so that the counters kept in its
 * per-partition families describe exactly its entries (the runtime keeps them exact: the
 * time-ordered buffer's byte count decides when it emits early or spills).
 */
final class EntryTally(layout: OperatorLayout) {
  private val counting = layout.counting

  /** `kstate_meta`'s Entries and Bytes, as the operator counts them. */
  var entries: Long = 0L
  var bytes: Long = 0L
  private val buffers = mutable.Map.empty[String, (Long, Long)].withDefaultValue((0L, 0L))
  private val versions = mutable.Map.empty[String, Long].withDefaultValue(0L)
  private val joinRecords = mutable.Map.empty[String, Long].withDefaultValue(0L)
  private lazy val spanBuffers: Int = layout.valueSchema.head.dataType match {
    case a: org.apache.spark.sql.types.ArrayType =>
      a.elementType.asInstanceOf[StructType](3).dataType.asInstanceOf[StructType].length
    case other => throw new IllegalStateException(s"unexpected span state value $other")
  }

  def observe(family: String, key: Array[Byte], value: Array[Byte]): Unit = family match {
    case org.apache.spark.sql.execution.streaming.state.StateStore.DEFAULT_COL_FAMILY_NAME => counting match {
        case Counting.DefaultEntries => entries += 1
        case Counting.WindowAggregate => entries += 1; bytes += key.length.toLong + value.length
        case Counting.SessionDistinct => entries += arrayOf(value).numElements() / 2
        case Counting.SpanAggregate =>
          val spans = arrayOf(value)
          entries += spans.numElements()
          var b = key.length.toLong
          var i = 0
          while (i < spans.numElements()) {
            b += 24L + spans.getStruct(i, 4).getStruct(3, spanBuffers).getSizeInBytes
            i += 1
          }
          bytes += b
        case _ =>
      }
    case org.apache.spark.sql.kstate.operatorstate.StoreForeignKeySubscriptionState.Cf =>
      if (counting == Counting.Subscriptions) entries += 1
    case OperatorLayout.Structure("buf", name, "time") =>
      val (r, b) = buffers(name)
      buffers(name) = (r + 1, b + TimeOrderedBuffer.recordBytes(key.length - 8, value.length - 8))
    case OperatorLayout.Structure("vs", name, "latest") =>
      versions(name) += 1 + VersionedKeyValueStore.versionsHeldIn(value) // its recent history's too
    case OperatorLayout.Structure("vs", name, "history") => versions(name) += 1
    case OperatorLayout.Structure("stj", name, "buffer") => joinRecords(name) += 1
    case _ =>
  }

  def buffer(name: String): (Long, Long) = buffers(name)
  def versionCount(name: String): Long = versions(name)
  def joinRecordCount(name: String): Long = joinRecords(name)

  private def arrayOf(value: Array[Byte]) = {
    val row = new UnsafeRow(1)
    row.pointTo(value, value.length)
    row.getArray(0)
  }
}

/**
 * Merges the per-partition scalars of the old state partitions into one new partition's.
 *
 * Rules (docs/operators.md, "Rescaling state"):
 *  - **Stream time** (every structure's): the largest of all old partitions', whichever keys the
 *    new partition takes. A key's new partition has then seen at least what its old one had, so
 *    no window that closed, no buffered record that was emitted and no table version that was
 *    cleaned up comes back, whichever old partition the key (or a stateless key) came from.
 *  - **Counters of entries** (dedup and window counts, buffer records and bytes, versions,
 *    subscriptions, buffered join records): recounted from the entries the partition receives.
 *  - **Running totals** (late records dropped since the query started): old partition q's total
 *    goes to new partition q mod M, so their sum over partitions is unchanged.
 *  - **Bookkeeping that only schedules work**: dedup's last sweep bound is dropped (the next
 *    micro-batch sweeps); the versioned store's lowest indexed segment is the smallest and its
 *    cleaned-through segment the largest of the old ones (cleanup then reads every segment any old
 *    partition may still index, and a history write re-indexes any segment one of them cleaned).
 *
 * @param entries the family's entries of every old partition: (old partition, key, value)
 */
object MetaMerge {
  def apply(
      kind: MetaKind,
      family: String,
      operator: String,
      entries: Seq[(Int, Array[Byte], Array[Byte])],
      tally: EntryTally,
      counting: Counting,
      newPartition: Int,
      numPartitions: Int
  ): Seq[(Array[Byte], Array[Byte])] = {
    def bad(why: String) = KStateErrors.repartitionUnsupportedState(operator, s"its column family '$family' $why")
    kind match {
      case MetaKind.OperatorMeta =>
        val bySlot = entries.groupBy { case (_, k, _) => slotOf(k) }
        bySlot.toSeq.sortBy(_._1).flatMap { case (slot, olds) =>
          val values = olds.map { case (q, _, v) => (q, longOf(v)) }
          val merged: Option[Long] = slot match {
            case StateMeta.StreamTime => Some(values.map(_._2).max)
            case StateMeta.Entries if counting != Counting.None => Some(tally.entries)
            case StateMeta.Bytes if counting == Counting.WindowAggregate || counting == Counting.SpanAggregate =>
              Some(tally.bytes)
            case StateMeta.LastPurgeBound => scala.None
            case StateMeta.LateDroppedTotal =>
              Some(values.collect { case (q, v) if q % numPartitions == newPartition => v }.sum)
            case other => throw bad(s"holds slot $other, which this kstate does not know how to merge")
          }
          merged.map(v => slotKey(slot) -> longValue(v))
        }
      case MetaKind.BufferMeta =>
        val name = nameOf(family)
        requireKeys(entries, "c", bad)
        val (records, bytes) = tally.buffer(name)
        Seq("c".getBytes -> ByteBuffer.allocate(16).putLong(records).putLong(bytes).array())
      case MetaKind.VersionedMeta =>
        requireKeys(entries, "t", bad)
        val metas = entries.map { case (_, _, v) =>
          if (v.length < VersionedMetaBytes || v(v.length - 1) < OldestVersionedLayout) {
            throw bad("was written by an older kstate (versioned store layout 1); run one micro-batch " +
              "with this kstate first (KSTATE_VERSIONED_STORE_LAYOUT_OUTDATED explains the layout)")
          }
          if (v.length != VersionedMetaBytes || v(v.length - 1) > VersionedLayout) {
            throw bad(s"was written by a newer kstate (versioned store layout ${v(v.length - 1)}); " +
              s"this kstate writes layout $VersionedLayout")
          }
          ByteBuffer.wrap(v)
        }
        val streamTime = metas.map(_.getLong(0)).max
        val lowestSegment = metas.map(_.getLong(8)).min
        val cleanedThrough = metas.map(_.getLong(16)).max
        Seq("t".getBytes -> ByteBuffer.allocate(VersionedMetaBytes).putLong(streamTime).putLong(lowestSegment)
          .putLong(cleanedThrough).putLong(tally.versionCount(nameOf(family))).put(VersionedLayout).array())
      case MetaKind.JoinBufferMeta =>
        requireKeys(entries, "m", bad)
        val metas = entries.map { case (_, _, v) =>
          if (v.length != 24) throw bad(s"has a meta entry of ${v.length} bytes, not 24")
          ByteBuffer.wrap(v)
        }
        Seq("m".getBytes -> ByteBuffer.allocate(24).putLong(metas.map(_.getLong(0)).max)
          .putLong(metas.map(_.getLong(8)).max).putLong(tally.joinRecordCount(nameOf(family))).array())
    }
  }

  /**
   * The versioned store's meta entry and layouts, the store's own: a merged meta says the current
   * layout, since its partitions may hold entries of every layout the store reads.
   */
  private val VersionedMetaBytes = VersionedKeyValueStore.MetaBytes
  private val VersionedLayout: Byte = VersionedKeyValueStore.Layout
  private val OldestVersionedLayout: Byte = VersionedKeyValueStore.OldestReadable

  private def nameOf(family: String): String = family match {
    case OperatorLayout.Structure(_, name, _) => name
    case other => throw new IllegalArgumentException(other)
  }

  private def requireKeys(entries: Seq[(Int, Array[Byte], Array[Byte])], key: String, bad: String => Throwable): Unit =
    entries.find { case (_, k, _) => new String(k, java.nio.charset.StandardCharsets.UTF_8) != key }
      .foreach(e => throw bad(s"holds an unexpected entry of ${e._2.length} bytes"))

  private def slotOf(key: Array[Byte]): Int = {
    val row = new UnsafeRow(1)
    row.pointTo(key, key.length)
    row.getInt(0)
  }

  private def longOf(value: Array[Byte]): Long = {
    val row = new UnsafeRow(1)
    row.pointTo(value, value.length)
    row.getLong(0)
  }

  private def slotKey(slot: Int): Array[Byte] = {
    val w = new UnsafeRowWriter(1); w.reset(); w.zeroOutNullBytes(); w.write(0, slot); w.getRow.getBytes
  }

  private def longValue(v: Long): Array[Byte] = {
    val w = new UnsafeRowWriter(1); w.reset(); w.zeroOutNullBytes(); w.write(0, v); w.getRow.getBytes
  }
}
