package org.apache.spark.sql.kstate.processor.window

/**
 * How a windowed aggregation folds records of type `R` into aggregates of type `A`, with no
 * Spark in it: the exec implements it over Spark's aggregate buffers, the unit tests over plain
 * values (a sum, a list of the records).
 *
 * Contract: every method returns an aggregate the caller owns (it may keep it across calls);
 * arguments are not modified and not kept. Not thread-safe; one per task.
 */
trait Aggregator[R, A] {

  /** A fresh aggregate of no records (Kafka's initializer). */
  def initial(): A

  /** `agg` with one more record (Kafka's aggregator). */
  def add(agg: A, record: R): A
}

/** An [[Aggregator]] that can also combine two aggregates (session merger, sliding windows). */
trait MergingAggregator[R, A] extends Aggregator[R, A] {

  /** The aggregate of the records of both (Kafka's session merger). */
  def merge(a: A, b: A): A

  /**
   * The aggregate of the first `n` (at least 1) of `parts`, merged left to right: what `merge`
   * gives folded over them, without the intermediate results' own copies an implementation may
   * avoid. With `n` = 1 it is `parts(0)` itself (aggregates are never modified, so sharing one is
   * safe). `parts` holds aggregates (an `Array[Any]`, so that a caller with no class tag of `A`
   * can fill it) and is only read.
   */
  def mergeAll(parts: Array[Any], n: Int): A = {
    checkMergeAll(parts, n)
    var acc = parts(0).asInstanceOf[A]
    var i = 1
    while (i < n) { acc = merge(acc, parts(i).asInstanceOf[A]); i += 1 }
    acc
  }

  /** `mergeAll`'s argument rule, for its implementations. */
  protected final def checkMergeAll(parts: Array[Any], n: Int): Unit =
    require(n >= 1 && n <= parts.length, s"mergeAll of $n of ${parts.length} aggregates")

  /**
   * True when an aggregate of a set of records is the same whatever the order and grouping in
   * which they were added and merged (a count; a sum of integers; a minimum or maximum of
   * values other than floating point): a processor may then fold records in whatever grouping is
   * cheapest. False (the default) keeps the order the processor's contract states.
   */
  def orderInsensitive: Boolean = false
}
