package org.apache.spark.sql.kstate.processor.table

import scala.collection.mutable.ArrayBuffer

import TablePipeline._

/**
 * A deliberately naive record-by-record model of a table pipeline, written from Kafka's
 * `KTableSource` / `KTableFilter` / `KTableMapValues` and KIP-889/914 (not from kstate's code):
 * it keeps every update ever accepted, in arrival order, and recomputes everything from that log
 * in exact BigInt arithmetic: stream time, grace, the latest version by timestamp (the last
 * arrival among equal timestamps), the latest value by arrival.
 */
final class TableModel(p: Pipeline) {
  private final case class Accepted(key: String, value: Option[Long], ts: BigInt)
  private val log = ArrayBuffer.empty[Accepted]
  private val sendOld = p.source != Unmaterialized
  var nullKeys, nullTimestamps, updates, tombstones, notPut, duplicateTombstones = 0L

  /** (new value, old value, isLatest) of the source's change, or None when not put. */
  private def source(key: String, value: Option[Long], ts: BigInt): Option[(Option[Long], Option[Long], Boolean)] = {
    val mine = log.filter(_.key == key)
    p.source match {
      case Versioned(_, grace) =>
        val streamTime = log.map(_.ts).maxOption
        if (streamTime.exists(st => ts < st - grace)) None
        else {
          val latest = mine.sortBy(_.ts).lastOption // stable sort: the last arrival among equal times
          log += Accepted(key, value, ts)
          Some((value, latest.flatMap(_.value), !mine.exists(_.ts > ts)))
        }
      case _ =>
        log += Accepted(key, value, ts)
        Some((value, mine.lastOption.flatMap(_.value), true))
    }
  }

  /** The change reaching the end of the pipeline for `r`: (key, new, old, ts, isLatest), or None. */
  def process(r: Rec): Option[(String, Option[Long], Option[Long], Long, Boolean)] = {
    if (r.key.isEmpty) { nullKeys += 1; return None }
    if (r.ts.isEmpty) { nullTimestamps += 1; return None }
    val key = r.key.get
    updates += 1
    if (r.value.isEmpty) tombstones += 1
    source(key, r.value, BigInt(r.ts.get)) match {
      case None => notPut += 1; None
      case Some((n0, o0, latest)) =>
        var nv = n0
        var ov = o0 // the source is always materialized: it knows the old value
        var dropped = false
        p.steps.foreach { step =>
          if (!dropped) step match {
            case Filter | FilterNot =>
              def keeps(v: Long) = predicate(key, v) != (step == FilterNot)
              nv = nv.filter(keeps); ov = if (sendOld) ov.filter(keeps) else None
              if (!p.source.versioned && sendOld && nv.isEmpty && ov.isEmpty) {
                dropped = true; duplicateTombstones += 1
              }
            case MapValues =>
              def m(v: Long) = Option(mapper(key, v)).map(_.longValue)
              nv = nv.flatMap(m); ov = if (sendOld) ov.flatMap(m) else None
          }
        }
        if (dropped) None else Some((key, nv, ov, r.ts.get, latest))
    }
  }
}
