package org.apache.spark.sql.kstate.processor

import org.scalatest.funsuite.AnyFunSuite

class MetricSetSuite extends AnyFunSuite {
  import MetricSetSuite._

  test("declaring a metric returns its handle; counters count per handle, in declaration order") {
    assert(Sample.metrics.map(_.name) === Seq("dropped", "peak", "seen", "internal"))
    val c = Sample.newCounters()
    c.add(Sample.Dropped); c.add(Sample.Dropped, 4L)
    c.raise(Sample.Peak, 7L); c.raise(Sample.Peak, 3L)
    c.add(Sample.Internal, 2L)
    assert(c(Sample.Dropped) === 5L)
    assert(c(Sample.Peak) === 7L, "raise keeps the largest")
    c.set(Sample.Seen, 9L)
    assert(c.reported === Map("dropped" -> 5L, "peak" -> 7L, "seen" -> 9L), "tallies are not reported")
  }

  test("kinds and averages are declared with the metric, not kept in a list beside it") {
    assert(Sample.reported.filter(_.kind == MetricKind.Max).map(_.name) === Seq("peak"))
    assert(Sample.averages === Seq(AverageMetric("avgDropped", "dropped per seen", Sample.Dropped, Sample.Seen)))
  }

  test("a handle of another set is a wiring error, not a silent count in the wrong slot") {
    val c = Sample.newCounters()
    intercept[IllegalArgumentException](c.add(Other.First))
  }

  test("a name declared twice is rejected") {
    val e = intercept[ExceptionInInitializerError](Twice.First)
    assert(e.getCause.isInstanceOf[IllegalArgumentException])
  }
}

object MetricSetSuite {
  object Sample extends MetricSet {
    val Dropped: Metric = sum("dropped", "records dropped")
    val Peak: Metric = max("peak", "largest buffer")
    val Seen: Metric = sum("seen", "records seen")
    val Internal: Metric = tally("internal")
    val AvgDropped: AverageMetric = average("avgDropped", "dropped per seen", Dropped, Seen)
  }
  object Other extends MetricSet {
    val First: Metric = sum("dropped", "same name, other set")
  }
  object Twice extends MetricSet {
    val First: Metric = sum("x", "one")
    val Second: Metric = sum("x", "two")
  }
}
