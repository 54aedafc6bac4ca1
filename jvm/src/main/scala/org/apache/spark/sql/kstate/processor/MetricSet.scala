package org.apache.spark.sql.kstate.processor

import scala.collection.mutable.ArrayBuffer

/**
 * An operator's custom metrics, declared once: each declaration returns the handle the
 * operator's processor counts with ([[Counters]]), and the exec reads names, descriptions and
 * kinds from the same declarations for Spark's SQL metrics and progress. Nothing is numbered by
 * hand, so adding a metric cannot shift another.
 *
 * Declare in an `object` (declarations are final once the object is initialised):
 * {{{
 *   object DedupMetrics extends MetricSet {
 *     val DuplicatesDropped: Metric = sum("duplicatesDropped", "duplicates dropped")
 *   }
 *   val c = DedupMetrics.newCounters(); c.add(DedupMetrics.DuplicatesDropped)
 * }}}
 */
abstract class MetricSet {
  private val declared = ArrayBuffer.empty[Metric]
  private val declaredAverages = ArrayBuffer.empty[AverageMetric]

  /** A metric whose per-task values add up to the query's. */
  protected final def sum(name: String, description: String): Metric = declare(name, description, MetricKind.Sum)

  /** A metric whose query value is the largest per-task value (a peak, a maximum lateness). */
  protected final def max(name: String, description: String): Metric = declare(name, description, MetricKind.Max)

  /**
   * Counted by the processor but not reported as a custom metric: feeds Spark's standard state
   * metrics (rows updated / removed) or the processor's own bookkeeping.
   */
  protected final def tally(name: String): Metric = declare(name, "", MetricKind.Sum, reported = false)

  /** Reported in progress only: `total / count` over the micro-batch (0 when count is 0). */
  protected final def average(name: String, description: String, total: Metric, count: Metric): AverageMetric = {
    require(total.owner == this && count.owner == this, s"$name averages metrics of another set")
    val a = AverageMetric(name, description, total, count)
    declaredAverages += a
    a
  }

  private def declare(name: String, description: String, kind: MetricKind, reported: Boolean = true): Metric = {
    require(!declared.exists(_.name == name), s"metric $name declared twice in $this")
    val m = new Metric(name, description, kind, reported, declared.length, this)
    declared += m
    m
  }

  /** Every declared metric, in declaration order. */
  final def metrics: Seq[Metric] = declared.toSeq

  /** The custom metrics the operator reports (progress, Spark UI). */
  final def reported: Seq[Metric] = declared.filter(_.reported).toSeq
  final def averages: Seq[AverageMetric] = declaredAverages.toSeq

  /** Zeroed counters for one task. */
  final def newCounters(): Counters = new Counters(this)
}

/** How per-task values of a metric combine into the query's value. */
sealed trait MetricKind
object MetricKind {
  case object Sum extends MetricKind
  case object Max extends MetricKind
}

/** A declared metric: the handle to count with. */
final class Metric private[processor] (
    val name: String,
    val description: String,
    val kind: MetricKind,
    val reported: Boolean,
    private[processor] val index: Int,
    private[processor] val owner: MetricSet
) {
  override def toString: String = name
}

/** A progress-only average of two declared metrics. */
final case class AverageMetric(name: String, description: String, total: Metric, count: Metric)

/**
 * One task's values of a [[MetricSet]]'s metrics. Not thread-safe. Counting with a metric of
 * another set is an `IllegalArgumentException` (a wiring error, caught by any test).
 */
final class Counters private[processor] (val set: MetricSet) {
  private val values = new Array[Long](set.metrics.length)

  private def slot(m: Metric): Int = {
    if (m.owner ne set) throw new IllegalArgumentException(s"metric $m is not one of ${set.getClass.getName}")
    m.index
  }

  def add(m: Metric, n: Long = 1L): Unit = values(slot(m)) += n
  def set(m: Metric, v: Long): Unit = values(slot(m)) = v

  /** Raises a [[MetricKind.Max]] metric to `v` if `v` is larger. */
  def raise(m: Metric, v: Long): Unit = { val i = slot(m); if (v > values(i)) values(i) = v }
  def apply(m: Metric): Long = values(slot(m))

  /** name -> value of every reported metric. */
  def reported: Map[String, Long] = set.reported.map(m => m.name -> values(m.index)).toMap
}
