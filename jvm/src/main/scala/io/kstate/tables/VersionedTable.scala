package io.kstate.tables

import java.time.{Duration => JDuration}

import io.kstate.{ArgumentErrors, Durations}

/**
 * How a table is materialized as a versioned table (KIP-889/914): every key keeps its values by
 * timestamp for `historyRetentionMs`, so a stream–table join looks a key up as of the stream
 * record's time. `graceMs` is how far behind the table's stream time an update may be and still
 * be stored (older ones are dropped); Kafka ties it to the history retention, kstate keeps the two
 * apart and defaults the grace to the retention. Both are non-negative and the grace may not exceed
 * the retention (an accepted update must stay queryable): `KSTATE_INVALID_VERSIONED_STORE`
 * otherwise, however the value is made (`of`, `withGrace`, the case class's `apply` and `copy`).
 * A history retention of 0 is Kafka's too: the latest value per key, out-of-order updates dropped.
 *
 * {{{
 *   df.kstate.toTable(col("user"), col("ts"), VersionedTable.of("1 day"))
 *   VersionedTable.of("1 day").withGrace("1 hour")
 * }}}
 */
final case class VersionedTable private (historyRetentionMs: Long, graceMs: Long) {
  if (historyRetentionMs < 0 || graceMs < 0 || graceMs > historyRetentionMs) {
    throw ArgumentErrors.invalidVersionedStoreConfig("Versioned table", historyRetentionMs, graceMs)
  }

  def withGrace(grace: String): VersionedTable = copy(graceMs = Durations.toMillis("grace", grace))
  def withGrace(grace: JDuration): VersionedTable = copy(graceMs = Durations.toMillis("grace", grace))
  def withGraceMillis(graceMs: Long): VersionedTable = copy(graceMs = Durations.toMillis("grace", graceMs))

  def describe: String = s"VersionedTable(historyRetention=${historyRetentionMs}ms, grace=${graceMs}ms)"
}

object VersionedTable {
  def of(historyRetention: String): VersionedTable = ofMillis(Durations.toMillis("history_retention", historyRetention))
  def of(historyRetention: JDuration): VersionedTable =
    ofMillis(Durations.toMillis("history_retention", historyRetention))
  def ofMillis(historyRetentionMs: Long): VersionedTable = {
    val ms = Durations.toMillis("history_retention", historyRetentionMs)
    new VersionedTable(ms, ms)
  }
}
