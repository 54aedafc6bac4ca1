package org.apache.spark.sql.kstate.processor.join

import org.apache.spark.sql.kstate.errors.KStateErrors

/**
 * A stream–table join's configuration, checked when it is built (plan time), so that a bad one
 * is a named error before any record is processed:
 *  - `leftJoin`: a left join (every stream record gives a result) or an inner one;
 *  - `historyRetentionMs`: the table's history retention when the table is versioned, None when
 *    it is not (the table's own setting, repeated here because [[org.apache.spark.sql.kstate.processor.table.TableState]]
 *    does not expose it);
 *  - `graceMs`: KIP-923's grace period, None for none.
 * Errors: a negative duration is `KSTATE_INVALID_DURATION`; a grace period on an unversioned
 * table `KSTATE_JOIN_GRACE_ON_UNVERSIONED_TABLE` (Kafka: "KTable must be versioned to use a
 * grace period in a stream table join"); a grace period above the history retention
 * `KSTATE_JOIN_GRACE_EXCEEDS_RETENTION` (Kafka: "History retention must be at least grace
 * period"; grace = retention is allowed).
 */
final class StreamTableJoinSpec private (
    val leftJoin: Boolean,
    val historyRetentionMs: Option[Long],
    val graceMs: Option[Long]
) {
  def versioned: Boolean = historyRetentionMs.isDefined
  override def toString: String =
    s"StreamTableJoinSpec(${if (leftJoin) "left" else "inner"}, " +
      s"${historyRetentionMs.fold("unversioned")(r => s"versioned, retention ${r}ms")}, " +
      s"${graceMs.fold("no grace")(g => s"grace ${g}ms")})"
}

object StreamTableJoinSpec {
  def apply(leftJoin: Boolean, historyRetentionMs: Option[Long], graceMs: Option[Long]): StreamTableJoinSpec = {
    def nonNegative(what: String, ms: Option[Long]): Unit = ms.filter(_ < 0).foreach { v =>
      throw KStateErrors.invalidInterval(what, s"${v}ms", "it is negative")
    }
    nonNegative("The table's history retention", historyRetentionMs)
    nonNegative("The join's grace period", graceMs)
    (historyRetentionMs, graceMs) match {
      case (None, Some(g)) => throw KStateErrors.joinGraceOnUnversionedTable(g)
      case (Some(r), Some(g)) if g > r => throw KStateErrors.joinGraceExceedsRetention(g, r)
      case _ => new StreamTableJoinSpec(leftJoin, historyRetentionMs, graceMs)
    }
  }
}
