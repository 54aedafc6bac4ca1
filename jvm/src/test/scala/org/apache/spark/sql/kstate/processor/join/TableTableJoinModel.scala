package org.apache.spark.sql.kstate.processor.join

import scala.collection.immutable.TreeMap
import scala.collection.mutable

/**
 * A naive, record-by-record model of a table–table join, written independently of
 * [[TableTableJoinProcessor]] and of the heap tables: each table keeps every version of a key in
 * a sorted map (versioned) or its last value (unversioned); a join row exists for a pair of side
 * values by the kind's definition (inner: both, left: the left, outer: either), and Kafka's
 * emission condition is "the other side has a value, or this side is kept alone by the kind and
 * had or has a value". Results are (key, new row, old row, timestamp).
 */
object TableTableJoinModel {
  final case class Upd(left: Boolean, key: String, value: String, ts: Option[Long]) {
    override def toString: String =
      s"${if (left) "L" else "R"}:${Option(key).getOrElse("null")}=${Option(value).getOrElse("null")}@${ts.fold("null")(_.toString)}"
  }
  final case class Res(key: String, newRow: Option[String], oldRow: Option[String], ts: Long)

  /** A table: versions (ts -> value, None = tombstone) per key, or the last value per key. */
  final class Table(versioned: Boolean, graceMs: Long) {
    private val versions = mutable.Map.empty[String, TreeMap[Long, Option[String]]]
    private val last = mutable.Map.empty[String, (String, Long)]
    private var streamTime: Option[BigInt] = None

    def latest(k: String): Option[(String, Long)] =
      if (versioned) versions.get(k).flatMap(_.lastOption).flatMap { case (t, v) => v.map(x => (x, t)) }
      else last.get(k)

    /** None: not stored; Some((old latest value, is latest)). */
    def put(k: String, v: String, ts: Long): Option[(Option[String], Boolean)] = {
      val old = latest(k).map(_._1)
      if (versioned) {
        if (streamTime.exists(st => BigInt(ts) < st - graceMs)) return None
        streamTime = Some(streamTime.fold(BigInt(ts))(_ max ts))
        val h = versions.getOrElse(k, TreeMap.empty[Long, Option[String]]).updated(ts, Option(v))
        versions(k) = h
        Some((old, h.lastKey == ts))
      } else {
        if (v == null) last -= k else last(k) = (v, ts)
        Some((old, true))
      }
    }
  }

  final class Join(
      kind: TableTableJoinKind,
      leftVersioned: Boolean,
      rightVersioned: Boolean,
      graceMs: Long,
      joiner: (String, String) => String
  ) {
    val left = new Table(leftVersioned, graceMs)
    val right = new Table(rightVersioned, graceMs)
    var outOfOrder, late, nullKeys, nullTs = 0L

    private def row(l: Option[String], r: Option[String]): Option[String] = {
      val exists = kind match {
        case TableTableJoinKind.Inner => l.isDefined && r.isDefined
        case TableTableJoinKind.Left => l.isDefined
        case TableTableJoinKind.Outer => l.isDefined || r.isDefined
      }
      if (exists) Some(joiner(l.orNull, r.orNull)) else None
    }

    def update(u: Upd): Option[Res] = {
      if (u.key == null) { nullKeys += 1; return None }
      if (u.ts.isEmpty) { nullTs += 1; return None }
      val ts = u.ts.get
      val (mine, theirs) = if (u.left) (left, right) else (right, left)
      val (old, isLatest) = mine.put(u.key, u.value, ts) match {
        case None => late += 1; return None
        case Some(x) => x
      }
      if (!isLatest) { outOfOrder += 1; return None }
      val other = theirs.latest(u.key)
      val keptAlone = if (u.left) kind != TableTableJoinKind.Inner else kind == TableTableJoinKind.Outer
      val nw = Option(u.value)
      if (other.isEmpty && !(keptAlone && (nw.isDefined || old.isDefined))) return None
      def joinedRow(mineV: Option[String]) = if (u.left) row(mineV, other.map(_._1)) else row(other.map(_._1), mineV)
      Some(Res(u.key, joinedRow(nw), joinedRow(old), other.fold(ts)(o => math.max(ts, o._2))))
    }
  }
}
