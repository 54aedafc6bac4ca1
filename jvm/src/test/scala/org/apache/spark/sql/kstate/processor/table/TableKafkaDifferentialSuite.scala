package org.apache.spark.sql.kstate.processor.table

import io.kstate.oracle.KafkaTableOracle
import io.kstate.oracle.KafkaTableOracle.{Out, OutWithOld}
import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

import org.apache.spark.sql.kstate.processor.MicroBatches

import TablePipeline._

/**
 * Kafka Streams as the oracle: `builder.table(in, unmaterialized | unversioned | versioned)` →
 * filter / filterNot / mapValues → `toStream()` in a TopologyTestDriver, against kstate's table
 * source and processors on the same random changelogs cut into random micro-batches: identical
 * records (key, value, timestamp, in order). Kafka's versioned store ties grace to history
 * retention, so the versioned cases use grace = retention; kstate's separate grace is covered by
 * [[TablePropertySuite]]. The same changelogs also run over the state a streaming query keeps
 * ([[StoreBackedTable]]: kstate's store, one store version per micro-batch).
 */
class TableKafkaDifferentialSuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  import TablePropertySuite._

  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 150)

  /** kstate's changes: a new [[Run]] per micro-batch over one state. */
  private def changes(p: Pipeline, batches: Seq[Seq[Rec]]): Seq[TableChange[String, V]] = {
    val state = newState(p.source)
    val counters = TableMetrics.newCounters()
    batches.flatMap { batch =>
      val run = new Run(p, state, counters)
      batch.flatMap(r => Option(run.process(r)))
    }
  }

  /** As [[changes]], over kstate's store ([[StoreBackedTable]]), a store version per micro-batch. */
  private def changesOnStore(p: Pipeline, batches: Seq[Seq[Rec]], heapStateBytes: Option[Long])
      : Seq[TableChange[String, V]] = {
    val state = new StoreBackedTable(p.source, heapStateBytes)
    val counters = TableMetrics.newCounters()
    try
      batches.flatMap { batch =>
        state.beginBatch()
        val run = new Run(p, state, counters)
        val out = batch.flatMap(r => Option(run.process(r)))
        state.endBatch()
        out
      }
    finally state.close()
  }
  private def opt(v: V): Option[Long] = Option(v).map(_.longValue)
  private def kstate(p: Pipeline, batches: Seq[Seq[Rec]]): Seq[Out] =
    changes(p, batches).map(c => Out(c.key, opt(c.newValue), c.timestamp))

  private val kafkaPipelineGen: Gen[Pipeline] = pipelineGen.map { p =>
    p.source match {
      case Versioned(r, _) => p.copy(source = Versioned(r, r))
      case _ => p
    }
  }
  private val batchesGen = MicroBatches.gen(timedRecGen, Gen.const(None)).map(_.map(_.recs))

  /**
   * The inputs on which Kafka's versioned store and kstate's agree (difference D3 of
   * [[TableSourceProcessor]]): on a versioned table, no tombstone at the timestamp of an earlier
   * update of its key (Kafka's RocksDB versioned store then forgets the tombstone).
   */
  private def comparable(p: Pipeline, batches: Seq[Seq[Rec]]): Seq[Seq[Rec]] =
    if (!p.source.versioned) batches
    else {
      var seen = Set.empty[(Option[String], Option[Long])]
      batches.map(_.filter { r =>
        val sameTimeTombstone = r.value.isEmpty && seen((r.key, r.ts))
        seen += ((r.key, r.ts))
        !sameTimeTombstone
      })
    }

  test("random pipelines, changelogs and batch boundaries: kstate forwards exactly what Kafka Streams does") {
    forAll(kafkaPipelineGen, batchesGen) { (p, all) =>
      val batches = comparable(p, all)
      val expected = KafkaTableOracle.run(p, batches.flatten)
      assert(kstate(p, batches) == expected, s"pipeline $p; batches $batches")
    }
  }

  test("on kstate's store (heap or RocksDB working copy, a store version per micro-batch): Kafka's records, old " +
    "values too") {
    val materialized = kafkaPipelineGen.suchThat(_.source != Unmaterialized)
    forAll(materialized, batchesGen, Gen.oneOf(None, Some(0L))) { (p, all, heapStateBytes) =>
      val batches = comparable(p, all)
      val got = changesOnStore(p, batches, heapStateBytes)
        .map(c => OutWithOld(c.key, opt(c.newValue), opt(c.oldValue), c.timestamp))
      assert(got == KafkaTableOracle.runWithOldValues(p, batches.flatten), s"pipeline $p; $heapStateBytes; $batches")
    }
  }

  test("timestamps spread over many of Kafka's versioned-store segments (2 s each): same records, old values too") {
    val scale = 500L // retention <= 15 s: Kafka's segment interval is 2 s, timestamps span 20 s
    def scaled(p: Pipeline): Pipeline = p.source match {
      case Versioned(r, g) => p.copy(source = Versioned(r * scale, g * scale))
      case _ => p
    }
    val versionedPipelines = kafkaPipelineGen.suchThat(_.source.versioned).map(scaled)
    forAll(versionedPipelines, batchesGen) { (p, all) =>
      val batches = comparable(p, all.map(_.map(r => r.copy(ts = r.ts.map(_ * scale)))))
      assert(kstate(p, batches) == KafkaTableOracle.run(p, batches.flatten), s"pipeline $p; batches $batches")
      val got = changes(p, batches).map(c => OutWithOld(c.key, opt(c.newValue), opt(c.oldValue), c.timestamp))
      assert(got == KafkaTableOracle.runWithOldValues(p, batches.flatten), s"pipeline $p; batches $batches")
    }
  }

  test("materialized sources: the old values kstate forwards are Kafka's (exposed by a probing transformValues)") {
    val materialized = kafkaPipelineGen.suchThat(_.source != Unmaterialized)
    forAll(materialized, batchesGen) { (p, all) =>
      val batches = comparable(p, all)
      val got = changes(p, batches).map(c => OutWithOld(c.key, opt(c.newValue), opt(c.oldValue), c.timestamp))
      assert(got == KafkaTableOracle.runWithOldValues(p, batches.flatten), s"pipeline $p; batches $batches")
    }
  }

  test("source difference D3: Kafka's versioned store forgets a tombstone replacing the latest version at its own " +
    "timestamp; kstate keeps it, so a later out-of-order update's old value is null, not the older version") {
    val p = Pipeline(Versioned(15, 15), Seq(MapValues))
    val recs = Seq(
      Rec(Some("c"), Some(6), Some(33)),
      Rec(Some("c"), None, Some(33)),
      Rec(Some("c"), Some(3), Some(19)),
      Rec(Some("c"), Some(7), Some(26))
    )
    val kafka = KafkaTableOracle.runWithOldValues(p, recs)
    val ours = changes(p, Seq(recs)).map(c => OutWithOld(c.key, opt(c.newValue), opt(c.oldValue), c.timestamp))
    assert(ours == Seq(
      OutWithOld("c", Some(60), None, 33),
      OutWithOld("c", None, Some(60), 33),
      OutWithOld("c", Some(30), None, 19),
      OutWithOld("c", None, None, 26)
    )) // 7 maps to null
    assert(kafka == ours.init :+ OutWithOld("c", None, Some(30), 26)) // Kafka: 3 @19 became the latest
    // kstate's 3 @19 went into history, before the tombstone @33
    val src = changes(Pipeline(Versioned(15, 15), Nil), Seq(recs.take(3)))
    assert(src.last.isLatest == false)
  }

  test("every source kind and step, on one fixed changelog with out-of-order, late and duplicate tombstones") {
    val recs = Seq(
      Rec(Some("a"), Some(2), Some(10)),
      Rec(Some("a"), Some(3), Some(12)),
      Rec(Some("a"), None, Some(14)),
      Rec(Some("a"), None, Some(15)),
      Rec(Some("a"), Some(4), Some(13)),
      Rec(Some("b"), Some(7), Some(30)),
      Rec(None, Some(1), Some(31)),
      Rec(Some("a"), Some(6), Some(1)),
      Rec(Some("c"), Some(5), Some(25)),
      Rec(Some("c"), None, Some(26)),
      Rec(Some("b"), None, Some(29))
    )
    for {
      src <- Seq(Unmaterialized, Unversioned, Versioned(10, 10))
      steps <- Seq(Nil, Seq(Filter), Seq(FilterNot), Seq(MapValues), Seq(MapValues, Filter), Seq(Filter, MapValues))
    } {
      val p = Pipeline(src, steps)
      assert(kstate(p, Seq(recs)) == KafkaTableOracle.run(p, recs), s"pipeline $p")
    }
  }

  test(
    "filter difference D1: kstate's tables are always materialized, so over Kafka's unmaterialized source a filter " +
      "also drops duplicate tombstones: Kafka's output minus exactly the tombstones after a tombstone"
  ) {
    val filterLast = Gen.oneOf(Seq(Filter), Seq(FilterNot), Seq(MapValues, Filter), Seq(Filter, FilterNot))
    forAll(filterLast, batchesGen) { (steps, batches) =>
      val kafka = KafkaTableOracle.run(Pipeline(Unmaterialized, steps), batches.flatten)
      var last = Map.empty[String, Option[Long]]
      val withoutDuplicates = kafka.filter { o =>
        val duplicate = o.value.isEmpty && last.get(o.key).forall(_.isEmpty)
        last += o.key -> o.value
        !duplicate
      }
      assert(kstate(Pipeline(Unversioned, steps), batches) == withoutDuplicates, s"steps $steps; batches $batches")
      assert(kstate(Pipeline(Unmaterialized, steps), batches) == kafka) // sendOldValues = false: Kafka's
    }
  }
}
