package org.apache.spark.sql.kstate.processor

import org.scalacheck.Gen

/**
 * Random micro-batches for the processors' property tests: records cut at random batch
 * boundaries (empty batches included), each batch optionally starting with a watermark advance
 * (the watermark-follow option), as Spark runs a new processor per micro-batch over one state.
 */
object MicroBatches {
  final case class Batch[R](watermark: Option[Long], recs: Seq[R]) {
    override def toString: String = watermark.fold("")(w => s"wm=$w ") + recs.mkString("[", ", ", "]")
  }

  /** 1 to 6 batches of 0 to 25 records from `rec`, each with a watermark from `wm`. */
  def gen[R](rec: Gen[R], wm: Gen[Option[Long]]): Gen[Seq[Batch[R]]] = {
    val batch = for {
      w <- wm
      n <- Gen.frequency(1 -> Gen.const(0), 6 -> Gen.choose(1, 8), 1 -> Gen.choose(9, 25))
      recs <- Gen.listOfN(n, rec)
    } yield Batch(w, recs)
    Gen.choose(1, 6).flatMap(Gen.listOfN(_, batch))
  }

  /** A nullable timestamp as the tests print it. */
  def showTs(ts: Option[Long]): String = ts.fold("null")(_.toString)
}
