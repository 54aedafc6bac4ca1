package org.apache.spark.sql.kstate.processor.join

import scala.collection.mutable
import scala.collection.mutable.ArrayBuffer

/**
 * A naive, record-by-record model of the stream–table join with KIP-914's lookups and KIP-923's
 * grace, written independently of [[StreamTableJoinProcessor]]: the versioned table is the list
 * of every accepted put, the grace buffer a list scanned and sorted on each step, times exact
 * BigInts (None = unknown). It counts by metric name what the processor counts.
 */
final class StreamTableJoinModel(cfg: StreamTableJoinModel.Cfg) {
  import StreamTableJoinModel._

  private val latest = mutable.Map.empty[String, String] // unversioned table
  private val puts = ArrayBuffer.empty[(String, BigInt, String)] // versioned table, in put order
  private var tableTime: Option[BigInt] = None
  private val pending = ArrayBuffer.empty[(String, String, BigInt, Int)] // key, value, ts, arrival
  private var arrivals = 0
  var bufferTime: Option[BigInt] = None
  val counts: mutable.Map[String, Long] = mutable.Map.empty.withDefaultValue(0L)

  private def count(name: String): Unit = counts(name) += 1

  def table(key: String, value: String, ts: Option[Long]): Unit = (key, ts) match {
    case (null, _) => count("tableNullKeysDropped")
    case (_, None) => count("tableNullTimestampsDropped")
    case (k, Some(t)) if cfg.retention.isEmpty =>
      if (value == null) latest.remove(k) else latest(k) = value
      count("tableUpdates")
    case (k, Some(t)) =>
      if (tableTime.exists(tt => t < tt - cfg.tableGrace)) count("tableUpdatesExpired")
      else {
        // into history: a later version ends it
        if (puts.exists(p => p._1 == k && p._2 > t)) count("tableUpdatesIntoHistory")
        puts += ((k, BigInt(t), value))
        tableTime = Some(tableTime.fold(BigInt(t))(_ max t))
        count("tableUpdates")
      }
  }

  private def lookup(k: String, t: BigInt): String = cfg.retention match {
    case None => latest.getOrElse(k, null)
    case Some(r) =>
      if (tableTime.exists(tt => t < tt - r)) {
        count("lookupsPastHistoryRetention")
        // only the key's latest version (largest timestamp, last put of it) can answer
        val ofKey = puts.zipWithIndex.filter(_._1._1 == k)
        if (ofKey.isEmpty) null
        else {
          val ((_, lt, lv), _) = ofKey.maxBy { case ((_, pt, _), i) => (pt, i) }
          if (lt <= t) lv else null
        }
      } else {
        // the version with the largest timestamp <= t; of equal timestamps the last put
        val candidates = puts.zipWithIndex.filter { case ((pk, pt, _), _) => pk == k && pt <= t }
        if (candidates.isEmpty) null else candidates.maxBy { case ((_, pt, _), i) => (pt, i) }._1._3
      }
  }

  private def joinOut(k: String, v: String, t: BigInt): Seq[Out] = {
    count("tableLookups")
    val found = lookup(k, t)
    if (found != null) { count("joinResults"); Seq(Out(v, found, t.toLong)) }
    else if (cfg.left) { count("joinResults"); count("unmatchedResults"); Seq(Out(v, null, t.toLong)) }
    else { count("noMatchDropped"); Nil }
  }

  /** `shownTs` is what the processor was given as the timestamp of a null-timestamp record. */
  def stream(key: String, value: String, ts: Option[Long], shownTs: Long): Seq[Out] = (key, ts) match {
    case (_, None) | (null, _) =>
      val what = if (ts.isEmpty) "NullTimestamps" else "NullKeys"
      if (cfg.left) {
        count(s"${what.head.toLower}${what.tail}Forwarded"); count("joinResults"); count("unmatchedResults")
        Seq(Out(value, null, ts.getOrElse(shownTs)))
      } else { count(s"${what.head.toLower}${what.tail}Dropped"); Nil }
    case (k, Some(t)) => cfg.grace match {
        case None => joinOut(k, value, t)
        case Some(g) if bufferTime.exists(bt => t < bt - g) => count("lateRecordsJoinedAtOnce"); joinOut(k, value, t)
        case Some(_) =>
          pending += ((k, value, BigInt(t), arrivals)); arrivals += 1
          count("streamRecordsBuffered")
          maxBuffered = maxBuffered max pending.size
          bufferTime = Some(bufferTime.fold(BigInt(t))(_ max t))
          release()
      }
  }

  var maxBuffered = 0

  private def release(): Seq[Out] = (cfg.grace, bufferTime) match {
    case (Some(g), Some(bt)) =>
      val due = pending.filter(_._3 <= bt - g).sortBy(p => (p._3, p._1, p._4))
      pending --= due
      due.toSeq.flatMap { case (k, v, t, _) => count("bufferedRecordsJoined"); joinOut(k, v, t) }
    case _ => Nil
  }

  def advance(w: Long): Unit = if (cfg.grace.isDefined) bufferTime = Some(bufferTime.fold(BigInt(w))(_ max w))

  def finish(): Seq[Out] = { maxBuffered = maxBuffered max pending.size; release() }

  def buffered: Int = pending.size
}

object StreamTableJoinModel {

  /** `retention` None: an unversioned table. */
  final case class Cfg(left: Boolean, retention: Option[Long], tableGrace: Long, grace: Option[Long])

  /** One join result: stream value, table value (null: none), timestamp. */
  final case class Out(stream: String, table: String, ts: Long)
}
