package org.apache.spark.sql.kstate.processor.table

import org.apache.spark.sql.kstate.processor.Counters

/**
 * The table topologies the property and differential suites run: a source table (Kafka's
 * unmaterialized `builder.table(topic)`, materialized unversioned, or versioned) and a chain of
 * filter / filterNot / mapValues steps, with one fixed predicate and mapper (both read the key,
 * the mapper returns null for 7). Keys are Strings, values `java.lang.Long` (null = tombstone).
 */
object TablePipeline {
  type V = java.lang.Long

  sealed trait Source { def versioned: Boolean = false }

  /**
   * Kafka's `builder.table(topic)` with no store name: old values unknown downstream. kstate's
   * equivalent: its (always materialized) source, then steps with `sendOldValues = false`.
   */
  case object Unmaterialized extends Source
  case object Unversioned extends Source
  final case class Versioned(retentionMs: Long, graceMs: Long) extends Source {
    override def versioned: Boolean = true
  }

  sealed trait Step
  case object Filter extends Step
  case object FilterNot extends Step
  case object MapValues extends Step

  final case class Pipeline(source: Source, steps: Seq[Step]) {
    override def toString: String = (source +: steps).mkString(" -> ")
  }

  val predicate: (String, V) => Boolean = (k, v) => v % 2 == 0 || k == "c"
  val mapper: (String, V) => V = (k, v) =>
    if (v == 7L) null else java.lang.Long.valueOf(v * 10 + (if (k == "b") 1 else 0))

  /** One update of the changelog; None = null. */
  final case class Rec(key: Option[String], value: Option[Long], ts: Option[Long]) {
    override def toString: String =
      s"${key.getOrElse("null")}:${value.fold("null")(_.toString)}@${ts.fold("null")(_.toString)}"
  }

  /** kstate's processors for one state partition, over the state `state` kept across batches. */
  final class Run(p: Pipeline, state: TableState[String, V], counters: Counters) {
    private val sendOld = p.source != Unmaterialized
    private val source = new TableSourceProcessor(new TableSource(state), counters)
    private val steps: Seq[TableChange[String, V] => TableChange[String, V]] = p.steps.map {
      case Filter => new TableFilterProcessor(predicate, p.source.versioned, sendOld, counters).process _
      case FilterNot => TableFilterProcessor.filterNot(predicate, p.source.versioned, sendOld, counters).process _
      case MapValues => new TableMapValuesProcessor(mapper, sendOld).process _
    }

    /** The change reaching the end of the chain, or null. */
    def process(r: Rec): TableChange[String, V] = {
      var c = source.process(
        r.key.orNull,
        r.key.isEmpty,
        r.value.map(java.lang.Long.valueOf).orNull,
        r.ts.getOrElse(0L),
        r.ts.isEmpty
      )
      val it = steps.iterator
      while (c != null && it.hasNext) c = it.next()(c)
      c
    }
  }

  def newState(s: Source): TableState[String, V] = s match {
    case Versioned(r, g) => InMemoryTableState.versioned[String, V](r, g)
    case _ => InMemoryTableState.unversioned[String, V]()
  }
}
