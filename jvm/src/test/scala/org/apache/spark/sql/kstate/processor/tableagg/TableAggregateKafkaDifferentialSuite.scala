package org.apache.spark.sql.kstate.processor.tableagg

import io.kstate.oracle.{Ev, KafkaTableAggregateOracle, TableAggCase}
import io.kstate.oracle.KafkaTableAggregateOracle.AggOut
import org.scalacheck.Gen
import org.scalacheck.rng.Seed
import org.scalatest.funsuite.AnyFunSuite

/**
 * Kafka Streams 4.3.1 as the oracle for table aggregations: the same random changelog, split
 * into the same micro-batches, through `builder.table(in, versioned or not).groupBy(...)` +
 * `count()` / `reduce` / `aggregate` → `toStream()` in a `TopologyTestDriver` (caches off), and
 * through [[TableAggregationDriver]] on one table partition and one group partition (Kafka's one
 * input partition): every emitted record (group, aggregate or tombstone, timestamp), in order,
 * per micro-batch, is identical. Old values are not compared here (`toStream()` does not expose
 * them; the property suite checks them against the naive model). Kafka's grace is its history
 * retention, so kstate's versioned table runs with grace = retention.
 *
 * No deliberate difference shows on this input: kstate's one (null timestamps are dropped at the
 * table source) has no Kafka counterpart (a Kafka record always has a timestamp), and is asserted
 * in `TableAggregateProcessorSuite`.
 */
class TableAggregateKafkaDifferentialSuite extends AnyFunSuite {
  private def sample[A](g: Gen[A], seed: Long): A = g.pureApply(Gen.Parameters.default, Seed(seed))

  /** Compares both engines; returns kstate's driver (for its counters) and Kafka's output. */
  private def compare(
      c: TableAggCase,
      retention: Option[Long],
      input: Seq[Seq[Ev]],
      aggregatorOf: TableAggCase => TableAggregator[String, java.lang.Long, java.lang.Long] =
        TableAggFixtures.aggregator
  )
      : (TableAggFixtures.Driver, Seq[Seq[AggOut]]) = {
    val kafka = KafkaTableAggregateOracle.run(c, retention, input)
    val d = TableAggFixtures.driver(c, retention, aggregatorOf = aggregatorOf)
    val ours = input.map(b => d.runBatch(b.map(TableAggFixtures.update(_))).map(TableAggFixtures.out))
    withClue(
      s"case $c retention $retention\ninput ${input.map(_.mkString(" ")).mkString(" | ")}\nkafka  $kafka\nkstate $ours\n"
    ) {
      assert(ours === kafka)
    }
    (d, kafka)
  }

  private def e(k: String, ts: Long, v: Long): Ev = Ev(k, ts, Some(v))

  test("KIP-914's three rows (v1@1, v2@10, v3@5) as Kafka, versioned and not, every aggregation") {
    for (c <- TableAggCase.all; r <- Seq(None, Some(100L))) {
      compare(c, r, Seq(Seq(e("k", 1, 0)), Seq(e("k", 10, 1)), Seq(e("k", 5, 3)))) // re-grouped
      compare(c, r, Seq(Seq(e("k", 1, 3), e("k", 10, 6), e("k", 5, 0)))) // one group
    }
  }

  test("Kafka's rules at the edges: count 0 kept, deleting reduce, no group, tombstones, past grace") {
    val in = Seq(
      Seq(e("a", 5, 3), e("a", 6, 4), Ev("a", 7, None), Ev("a", 8, None)), // g0, no group, tombstone twice
      Seq(e("b", 9, 2), e("c", 9, 2), e("b", 10, 5), e("c", 11, 8)), // g2 twice, moves within g2, value 8: no value
      Seq(e("d", 30, 0), e("a", 12, 3), e("b", 2, 1))
    ) // a and b behind stream time 30
    for (c <- TableAggCase.all; r <- Seq(None, Some(0L), Some(20L))) compare(c, r, in)
  }

  for (c <- TableAggCase.all; versioned <- Seq(false, true))
    test(s"$c, ${if (versioned) "versioned" else "unversioned"} table: as Kafka on random input") {
      val runs = (1 to 6).map { i =>
        val r = if (versioned) Some(sample(Gen.choose(0L, 15L), i)) else None
        compare(c, r, sample(TableAggInputs.batches(16), i * 31L + (if (versioned) 7 else 0)))
      }
      // the inputs reach the rules that matter: re-grouped rows, tombstones, and on a versioned
      // table out-of-order records ignored and records past grace dropped
      def total(m: org.apache.spark.sql.kstate.processor.Metric): Long = runs.map(_._1.regroupCounters(m)).sum
      assert(runs.map(_._2.flatten.length).sum > 30)
      assert(total(TableRegroupMetrics.GroupChanges) > total(TableRegroupMetrics.NoGroup))
      if (versioned) {
        assert(total(TableRegroupMetrics.OutOfOrderIgnored) > 0)
        assert(total(TableRegroupMetrics.NotPut) > 0)
      }
      if (c == TableAggCase.DeletingReduce || c == TableAggCase.Chain)
        assert(runs.exists(_._2.flatten.exists(_.value.isEmpty)), "some group was deleted")
    }

  for (versioned <- Seq(false, true))
    test(s"aggregate as Column expressions (the exec's evaluation), ${if (versioned) "versioned" else "unversioned"} " +
      "table: as Kafka's aggregate on random input") {
      val runs = (1 to 6).map { i =>
        val r = if (versioned) Some(sample(Gen.choose(0L, 15L), i + 50)) else None
        compare(
          TableAggCase.Chain,
          r,
          sample(TableAggInputs.batches(16), i * 37L + (if (versioned) 11 else 0)),
          _ => TableAggFixtures.expressionChain
        )
      }
      assert(runs.map(_._2.flatten.length).sum > 30)
      assert(runs.exists(_._2.flatten.exists(_.value.isEmpty)), "some group was deleted by the subtractor")
    }
}
