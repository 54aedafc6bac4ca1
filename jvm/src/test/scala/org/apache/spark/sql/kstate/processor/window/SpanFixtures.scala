package org.apache.spark.sql.kstate.processor.window

import scala.collection.mutable.ArrayBuffer

import org.scalacheck.Gen

import org.apache.spark.sql.kstate.processor.Counters

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

  type Processor = SpanAggregateProcessor[String, Int, Vector[Int]]

  /**
   * Runs `batches` as Spark does: per batch a new processor (`newProcessor(output)`, over state
   * that outlives it), the watermark-follow advance, every record, then `finish`. The hooks see
   * the same input (for a model); `observe(batch index, processor, rows)` runs after each finish.
   */
  def drive(
      batches: Seq[Batch],
      newProcessor: Collect => Processor,
      onBatchStart: () => Unit = () => (),
      onWatermark: Long => Unit = _ => (),
      onRecord: Rec => Unit = _ => ()
  )(
      observe: (Int, Processor, Seq[Out]) => Unit
  ): Unit =
    batches.zipWithIndex.foreach { case (b, bi) =>
      val out = new Collect
      val p = newProcessor(out)
      onBatchStart()
      b.watermark.foreach { w => p.advanceStreamTime(w); onWatermark(w) }
      b.recs.foreach { r =>
        p.process(r.key.orNull, r.key.isEmpty, r.id, r.ts.getOrElse(0L), r.ts.isEmpty)
        onRecord(r)
      }
      p.finish()
      observe(bi, p, out.rows.toSeq)
    }

  /** A run's output per batch, its counters and its stream time at the end. */
  final case class Run[S](outputs: Seq[Seq[Out]], counters: Counters, streamTime: Long, store: S)

  /** [[drive]] collecting the output. */
  def runAll[S](batches: Seq[Batch], store: S, counters: Counters)(newProcessor: Collect => Processor): Run[S] = {
    val outs = Seq.newBuilder[Seq[Out]]
    var time = Long.MinValue
    drive(batches, newProcessor) { (_, p, rows) => outs += rows; time = p.currentStreamTime }
    Run(outs.result(), counters, time, store)
  }

  /**
   * A batch's rows equal the model's up to order and fold order; final results come in end order.
   * Returns the failure message, if any.
   */
  def mismatch(rows: Seq[Out], expected: Seq[Out], finalResults: Boolean): Option[String] =
    if (rows.map(_.normalised).sortBy(_.toString) != expected.sortBy(_.toString)) {
      Some(s"rows ${rows.mkString(", ")}; model ${expected.mkString(", ")}")
    } else if (finalResults && rows.map(_.end) != rows.map(_.end).sorted) Some(s"final results not in end order: $rows")
    else None

  /**
   * The property suites' extreme inputs from a suite's extreme values: timestamps (some null),
   * spans (time difference or gap, and grace) and watermark-follow advances (mostly none).
   */
  def extremeInputs(extreme: Gen[Long]): (Gen[Option[Long]], Gen[Long], Gen[Option[Long]]) = (
    Gen.frequency(8 -> extreme.map(Some(_)), 1 -> Gen.const(None)),
    Gen.oneOf(0L, 1L, 2L, Long.MaxValue / 2, Long.MaxValue - 1, Long.MaxValue),
    Gen.frequency(3 -> Gen.const(None), 1 -> extreme.map(Some(_)))
  )

  /** The heap store of the sliding processor suites, keyed by [[PairKeys]]. */
  type SlidingStore = InMemorySessionStore[(String, Boolean), Vector[Int]]

  /** A sliding processor for one batch over `store`, writing to `out`. */
  def sliding(
      d: Long,
      grace: Long,
      finalResults: Boolean,
      store: SlidingStore,
      aggregator: MergingAggregator[Int, Vector[Int]],
      counters: Counters,
      smallFold: Int = SlidingAggregateProcessor.SmallFold
  )(out: Collect): Processor =
    new SlidingAggregateProcessor[String, (String, Boolean), Int, Vector[Int]](
      d,
      grace,
      finalResults,
      store,
      PairKeys,
      aggregator,
      out,
      identity,
      counters,
      smallFold
    )

  /** The sliding state keys of a heap store in tests: `(key, isWindows)`. */
  object PairKeys extends SlidingStateKeys[String, (String, Boolean)] {
    override def windows(key: String): (String, Boolean) = (key, true)
    override def records(key: String): (String, Boolean) = (key, false)
    override def isWindows(stateKey: (String, Boolean)): Boolean = stateKey._2
    override def keyOf(stateKey: (String, Boolean)): String = stateKey._1
  }
}
