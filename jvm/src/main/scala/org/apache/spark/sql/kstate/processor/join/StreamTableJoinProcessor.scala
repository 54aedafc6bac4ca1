package org.apache.spark.sql.kstate.processor.join

import org.apache.spark.sql.kstate.processor.{Counters, StreamTime}
import org.apache.spark.sql.kstate.processor.table.TableState

/**
 * Kafka's stream–table join (`KStreamKTableJoinProcessor`, inner and left) for one state
 * partition, with KIP-914's as-of lookups on versioned tables and KIP-923's grace period. The
 * table side is materialized through the shared [[TableSource]] / [[TableState]] and forwards
 * nothing; stream records are joined and emitted through a [[StreamTableJoinEmitter]].
 *
 * Spark mapping: one state partition is one Kafka task; both inputs' records reach the
 * processor in Kafka task order (one sequence interleaving [[processStream]] and
 * [[processTable]] calls), as Kafka's `TopologyTestDriver` processes records piped to a
 * co-partitioned stream topic and table topic.
 *
 * Stream records ([[processStream]]), in processing order:
 *  1. null timestamp: an inner join drops it (`nullTimestampsDropped`); a left join emits it at
 *     once with a null table value (`nullTimestampsForwarded`): no lookup (there is no time to
 *     look up as of), never buffered, stream time unchanged. kstate's rule: Kafka has no null
 *     timestamps (its sources reject invalid ones before the join); it follows Kafka's null-key
 *     rule (2). The emitted timestamp is the `ts` argument of that same call. A record with a
 *     null timestamp and a null key counts as a null timestamp.
 *  2. null key: an inner join drops it (`nullKeysDropped`, Kafka's rule: it cannot match); a
 *     left join emits it at once with a null table value (`nullKeysForwarded`, Kafka's rule:
 *     `maybeDropRecord` keeps a left join's null-key record), without a lookup, never buffered,
 *     stream time unchanged. Deliberate difference with a grace period: Kafka puts the record
 *     into its grace buffer, which rejects null keys (`NullPointerException: key cannot be null`,
 *     the task fails); kstate emits it at once, as without grace.
 *  3. no grace period: the record is joined at once (rule 6).
 *  4. grace period `g` (versioned tables only): the buffer's stream time `st` (Kafka's buffer
 *     store's observed stream time: the largest timestamp of the stream records put into the
 *     buffer; table updates, dropped records and records joined at once never move it) decides:
 *     a record with `ts < st - g` is late and joined at once (`lateRecordsJoinedAtOnce`: Kafka's
 *     `buffer.put` returns false and the processor calls `doJoin`, it does not drop it); any
 *     other record is buffered (`streamRecordsBuffered`) and `st := max(st, ts)`. (Kafka's
 *     processor also tracks an observed stream time over every stream record, but the buffer's
 *     `put` ignores the time it is passed and compares with its own.)
 *  5. after each buffered record, every buffered record with `ts <= st - g` leaves the buffer
 *     and is joined (rule 6, `bufferedRecordsJoined`), oldest first: by timestamp, then key, then
 *     arrival (Kafka's buffer store order: timestamp, serialized key, sequence number). With
 *     `g = 0` a record is buffered only when `ts >= st` and leaves at once: the same results, in
 *     the same order, as no grace period. Buffered records are joined as of their own timestamp
 *     against the table as it is when they leave, so a table update that arrived after the
 *     stream record but is older than it still counts (KIP-923). A table update never releases
 *     buffered records (Kafka: only a buffered stream record triggers an eviction).
 *  6. join: versioned table → `getAsOf(key, ts)` (KIP-914); unversioned → `get(key)`, the
 *     latest value by processing order whatever `ts` (`tableLookups`). A versioned lookup with
 *     `ts < table stream time - history retention` (`lookupsPastHistoryRetention`) finds only
 *     the key's latest version, when that is not a tombstone and its timestamp is `<= ts`, and
 *     otherwise nothing: Kafka's `RocksDBVersionedStore.get(key, asOf)` ("the latest record
 *     version per key never expires"; KIP-914's "returns null" is the other case), which the
 *     shared [[TableState]] contract's `getAsOf` implements.
 *     Example (retention 10): table k=v@0, j=w@100 (table stream time 100); stream k@50 joins
 *     v (v is k's latest version and valid at 50); after k=x@95, stream k@50 finds nothing.
 *     A match is emitted `(stream value, table value, ts)`; no match: an inner join drops the record
 *     (`noMatchDropped`), a left join emits `(stream value, null, ts)` (`unmatchedResults`,
 *     KIP-914: "err on the side of including the records"). Every result counts `joinResults`
 *     and carries the stream record's own timestamp (Kafka's `record.withValue`).
 * Kafka also drops stream records with a null value; a Spark row is never null, so the caller
 * has no such record and this processor no such rule.
 *
 * Table updates ([[processTable]]), in processing order:
 *  7. a null key or a null timestamp: dropped, counted (`tableNullKeysDropped`,
 *     `tableNullTimestampsDropped`; Kafka's `KTableSource` drops null keys; kstate drops null
 *     timestamps: a version needs a time);
 *  8. otherwise put into the table state (a null value is a tombstone): stored (`tableUpdates`,
 *     of which `tableUpdatesIntoHistory` were older than their key's latest version: the put's
 *     validTo was not `Latest`), or, on a versioned table, not stored when older than the
 *     table's stream time − its grace period (`tableUpdatesExpired`). Nothing is emitted.
 *
 * kstate's additions and deliberate differences:
 *  9. [[advanceStreamTime]] raises the buffer's stream time (the watermark-follow option) and
 *     [[finish]] releases what that made due (rule 5); without them (Kafka's behaviour) a
 *     buffered record leaves only when a later buffered stream record moves stream time, and
 *     so without watermarks where micro-batches end changes no result.
 * 10. negative timestamps are buffered and released like any other (Kafka rejects them at its
 *     sources; its buffer scans from timestamp 0); a timestamp is never `Long.MinValue` (the
 *     states' "unknown"; the caller passes a null instead).
 * 11. the buffer's stream time and its arrival order persist with the state across micro-batches
 *     and restarts (Kafka's in-memory sequence number restarts at 0 after a restart, so two
 *     buffered records with equal key and timestamp may leave in another order there).
 * 12. the table's grace period is its own (KIP-914 lists Kafka's tie of grace to history
 *     retention as a limitation); the join's grace period may not exceed the history retention
 *     ([[StreamTableJoinSpec]]).
 *
 * Counts into [[StreamTableJoinMetrics]]. Not thread-safe; one instance per task and micro-batch.
 */
final class StreamTableJoinProcessor[K, S, T](
    spec: StreamTableJoinSpec,
    table: TableState[K, T],
    buffer: Option[StreamTableJoinBuffer[K, S]],
    val counters: Counters = StreamTableJoinMetrics.newCounters()
) {
  import StreamTableJoinMetrics._
  require(counters.set eq StreamTableJoinMetrics, "counters of another operator")
  require(table.versioned == spec.versioned, s"table state versioned=${table.versioned} but $spec")
  require(buffer.isDefined == spec.graceMs.isDefined, s"a grace buffer is needed iff there is a grace period: $spec")

  private val leftJoin = spec.leftJoin
  private val versioned = spec.versioned
  private val retentionMs = spec.historyRetentionMs.getOrElse(0L)
  private val graceMs = spec.graceMs.getOrElse(0L)
  private val grace: StreamTableJoinBuffer[K, S] = buffer.orNull
  private val streamTime = new StreamTime(if (grace == null) StreamTime.Unknown else grace.streamTime)

  /** The grace buffer's stream time (unknown without a grace period). */
  def currentStreamTime: Long = streamTime.current

  /** Raises the grace buffer's stream time to at least `t` (rule 9); no-op without grace. */
  def advanceStreamTime(t: Long): Unit = if (grace != null) streamTime.advance(t)

  /**
   * One stream record (rules 1–6). `key` is ignored when `keyIsNull`, `ts` when `tsIsNull`;
   * results go to `emit`, synchronously.
   */
  def processStream(
      key: K,
      keyIsNull: Boolean,
      value: S,
      ts: Long,
      tsIsNull: Boolean,
      emit: StreamTableJoinEmitter[S, T]
  ): Unit = {
    if (tsIsNull || keyIsNull) {
      if (leftJoin) {
        counters.add(if (tsIsNull) NullTimestampsForwarded else NullKeysForwarded)
        result(value, null.asInstanceOf[T], ts, emit, matched = false)
      } else counters.add(if (tsIsNull) NullTimestampsDropped else NullKeysDropped)
    } else if (grace == null) {
      join(key, value, ts, emit)
    } else if (ts < streamTime.closeTime(graceMs)) {
      counters.add(LateJoinedAtOnce)
      join(key, value, ts, emit)
    } else {
      grace.put(key, value, ts)
      counters.add(Buffered)
      counters.raise(BufferRecordsMax, grace.numRecords)
      streamTime.advance(ts)
      release(emit)
    }
  }

  /** One table update (rules 7–8); `value` null is a tombstone. Emits nothing. */
  def processTable(key: K, keyIsNull: Boolean, value: T, ts: Long, tsIsNull: Boolean): Unit =
    if (keyIsNull) counters.add(TableNullKeysDropped)
    else if (tsIsNull) counters.add(TableNullTimestampsDropped)
    else {
      val validTo = table.put(key, value, ts)
      if (validTo == TableState.NotPut) counters.add(TableUpdatesExpired)
      else {
        counters.add(TableUpdates)
        if (validTo != TableState.Latest) counters.add(TableUpdatesIntoHistory)
      }
    }

  /** Ends the micro-batch: releases what is due (rule 9), persists stream time, records the buffer's size. */
  def finish(emit: StreamTableJoinEmitter[S, T]): Unit = if (grace != null) {
    counters.raise(BufferRecordsMax, grace.numRecords) // a micro-batch without puts: the size at its start
    release(emit)
    grace.streamTime = streamTime.current
    counters.set(BufferRecords, grace.numRecords)
  }

  // one eviction callback per processor, not a closure per buffered record
  private var releaseTo: StreamTableJoinEmitter[S, T] = _
  private val joinReleased: StreamTableJoinBuffer.Evicted[K, S] = (k: K, v: S, t: Long) => {
    counters.add(Released)
    join(k, v, t, releaseTo)
  }

  /** Rule 5: joins every buffered record with ts <= stream time − grace, oldest first. */
  private def release(emit: StreamTableJoinEmitter[S, T]): Unit = {
    val bound = streamTime.closeTime(graceMs)
    if (bound != Long.MinValue) {
      releaseTo = emit
      grace.evictUpTo(bound)(joinReleased)
    }
  }

  /** Rule 6. */
  private def join(key: K, value: S, ts: Long, emit: StreamTableJoinEmitter[S, T]): Unit = {
    counters.add(Lookups)
    if (versioned && ts < StreamTime.minus(table.streamTime, retentionMs)) counters.add(LookupsPastRetention)
    val found = table.getAsOf(key, ts) // unversioned: the latest value
    if (found != null) result(value, found.value, ts, emit, matched = true)
    else if (leftJoin) result(value, null.asInstanceOf[T], ts, emit, matched = false)
    else counters.add(NoMatchDropped)
  }

  private def result(value: S, tableValue: T, ts: Long, emit: StreamTableJoinEmitter[S, T], matched: Boolean): Unit = {
    counters.add(JoinResults)
    if (!matched) counters.add(UnmatchedResults)
    emit.emit(value, tableValue, ts)
  }
}
