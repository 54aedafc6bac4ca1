package org.apache.spark.sql.kstate.processor.table

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

import org.apache.spark.sql.kstate.processor.MicroBatches

import TablePipeline._

/**
 * kstate's table source, filter and mapValues processors against the naive [[TableModel]]:
 * random keys (a, b, c and null), values, tombstones, null timestamps, out-of-order and late
 * updates, cut into random micro-batches (new processors per batch over one shared state):
 * every forwarded change (key, new value, old value, timestamp, isLatest) and every metric equal.
 */
class TablePropertySuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  import TablePropertySuite._

  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 500)

  private def check(p: Pipeline, batches: Seq[MicroBatches.Batch[Rec]]): Unit = {
    val model = new TableModel(p)
    val state = newState(p.source)
    val counters = TableMetrics.newCounters()
    batches.zipWithIndex.foreach { case (batch, bi) =>
      val run = new Run(p, state, counters)
      batch.recs.zipWithIndex.foreach { case (r, ri) =>
        val expected = model.process(r)
        val got = Option(run.process(r)).map(c =>
          (c.key, Option(c.newValue).map(_.longValue), Option(c.oldValue).map(_.longValue), c.timestamp, c.isLatest)
        )
        assert(got == expected, s"batch $bi record $ri $r; pipeline $p; batches $batches")
      }
    }
    import TableMetrics._
    assert(counters(NullKeysDropped) == model.nullKeys)
    assert(counters(NullTimestampsDropped) == model.nullTimestamps)
    assert(counters(Updates) == model.updates)
    assert(counters(Tombstones) == model.tombstones)
    assert(counters(UpdatesNotPut) == model.notPut)
    assert(counters(VersionsStored) == model.updates - model.notPut)
    assert(counters(DuplicateTombstonesDropped) == model.duplicateTombstones)
  }

  test("random pipelines and changelogs, random batch boundaries: same changes and metrics as the naive model") {
    forAll(pipelineGen, batchesGen) { (p, batches) => check(p, batches) }
  }

  test("one batch vs one record per batch: identical changes") {
    forAll(pipelineGen, Gen.listOf(recGen)) { (p, recs) =>
      check(p, Seq(MicroBatches.Batch(None, recs)))
      check(p, recs.map(r => MicroBatches.Batch(None, Seq(r))))
    }
  }
}

object TablePropertySuite {
  val sourceGen: Gen[Source] = Gen.frequency(
    1 -> Gen.const(Unmaterialized),
    2 -> Gen.const(Unversioned),
    3 -> (for (g <- Gen.choose(0L, 15L); extra <- Gen.choose(0L, 15L)) yield Versioned(g + extra, g))
  )

  val pipelineGen: Gen[Pipeline] = for {
    s <- sourceGen
    n <- Gen.choose(0, 3)
    steps <- Gen.listOfN(n, Gen.oneOf(Filter, FilterNot, MapValues))
  } yield Pipeline(s, steps)

  val recGen: Gen[Rec] = for {
    k <- Gen.frequency(8 -> Gen.oneOf("a", "b", "c").map(Some(_)), 1 -> Gen.const(None))
    v <- Gen.frequency(3 -> Gen.choose(0L, 9L).map(Some(_)), 1 -> Gen.const(None))
    t <- Gen.frequency(10 -> Gen.choose(0L, 40L).map(Some(_)), 1 -> Gen.const(None))
  } yield Rec(k, v, t)

  /** Records with non-null timestamps only (Kafka cannot carry a null one). */
  val timedRecGen: Gen[Rec] = recGen.map(r => if (r.ts.isEmpty) r.copy(ts = Some(20L)) else r)

  val batchesGen: Gen[Seq[MicroBatches.Batch[Rec]]] = MicroBatches.gen(recGen, Gen.const(None))
}
