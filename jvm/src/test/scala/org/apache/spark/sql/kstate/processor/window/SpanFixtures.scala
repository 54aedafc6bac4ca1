package org.apache.spark.sql.kstate.processor.window

import scala.collection.mutable.ArrayBuffer

/**
 * Plain-value fixtures for the session and sliding processor suites: records are ids (`Int`),
 * an aggregate is the ids folded into it in fold order, and output is collected as [[Out]] rows.
 */
object SpanFixtures {
  /** The records of an aggregate, in the order they were folded and merged. */
  object IdsAggregator extends MergingAggregator[Int, Vector[Int]] {
    override def initial(): Vector[Int] = Vector.empty
    override def add(agg: Vector[Int], record: Int): Vector[Int] = agg :+ record
    override def merge(a: Vector[Int], b: Vector[Int]): Vector[Int] = a ++ b
  }

  /** One output row; `ids` is None for a tombstone. */
  final case class Out(key: String, start: Long, end: Long, ids: Option[Vector[Int]], maxTs: Long) {
    /** The same row with its ids sorted (when fold order does not matter). */
    def normalised: Out = copy(ids = ids.map(_.sorted))
    override def toString: String =
      s"$key[$start,$end]=${ids.fold("tombstone")(_.mkString("{", ",", "}"))}@$maxTs"
  }

  final class Collect extends SpanOutput[String, Vector[Int]] {
    val rows: ArrayBuffer[Out] = ArrayBuffer.empty
    override def result(key: String, start: Long, end: Long, agg: Vector[Int], maxTs: Long): Unit =
      rows += Out(key, start, end, Some(agg), maxTs)
    override def tombstone(key: String, start: Long, end: Long, maxTs: Long): Unit =
      rows += Out(key, start, end, None, maxTs)
  }

  /** A record of a generated or hand-written input: `key` / `ts` None = null. */
  final case class Rec(id: Int, key: Option[String], ts: Option[Long]) {
    override def toString: String = s"#$id ${key.getOrElse("null")}@${ts.fold("null")(_.toString)}"
  }

  /** A micro-batch: an optional watermark-follow advance, then its records. */
  final case class Batch(watermark: Option[Long], recs: Seq[Rec]) {
    override def toString: String = watermark.fold("")(w => s"wm=$w ") + recs.mkString("[", ", ", "]")
  }

  /** `(key, ts)` pairs as records numbered from 1 in order, in one batch. */
  def batch(recs: (String, Long)*): Seq[(String, Long)] = recs

  /** Numbers the records of `batches` from 1 across batches. */
  def numbered(batches: Seq[Seq[(String, Long)]]): Seq[Batch] = {
    var id = 0
    batches.map(b => Batch(None, b.map { case (k, t) => id += 1; Rec(id, Some(k), Some(t)) }))
  }

  /** The sliding state keys of a heap store in tests: `(key, isWindows)`. */
  object PairKeys extends SlidingStateKeys[String, (String, Boolean)] {
    override def windows(key: String): (String, Boolean) = (key, true)
    override def records(key: String): (String, Boolean) = (key, false)
    override def isWindows(stateKey: (String, Boolean)): Boolean = stateKey._2
    override def keyOf(stateKey: (String, Boolean)): String = stateKey._1
  }
}
