package org.apache.spark.sql.kstate.processor.table

import org.scalatest.funsuite.AnyFunSuite

/** [[TableMapValuesProcessor]]'s rules, one test each. */
class TableMapValuesProcessorSuite extends AnyFunSuite {
  import TableFixtures._
  private val show: (String, java.lang.Long) => String = (k, v) => s"$k=$v"

  test("rule 1: the new value is mapped with its key; a tombstone stays a tombstone, the mapper is not called") {
    var calls = 0
    val m = new TableMapValuesProcessor[String, java.lang.Long, String]((k, v) => { calls += 1; show(k, v) })
    assert(m.process(C("k", L(1), Tomb, 5)) == TableChange("k", "k=1", null, 5, true))
    assert(calls == 1)
    assert(m.process(C("k", Tomb, Tomb, 6)) == TableChange[String, String]("k", null, null, 6, true))
    assert(calls == 1)
  }

  test("rule 1: a mapper returning null turns the update into a tombstone") {
    val m = new TableMapValuesProcessor[String, java.lang.Long, String]((_, v) => if (v > 5) null else "small")
    assert(m.process(C("k", L(9), L(1), 5)) == TableChange("k", null, "small", 5, true))
  }

  test("rule 2: the old value is mapped when sendOldValues, else null and not mapped; new value mapped first") {
    var calls = List.empty[java.lang.Long]
    val m = new TableMapValuesProcessor[String, java.lang.Long, String]((k, v) => { calls :+= v; show(k, v) })
    assert(m.process(C("k", L(2), L(1), 5)) == TableChange("k", "k=2", "k=1", 5, true))
    assert(calls == List(L(2), L(1)))
    calls = Nil
    val n = new TableMapValuesProcessor[String, java.lang.Long, String](
      (k, v) => { calls :+= v; show(k, v) },
      sendOldValues = false
    )
    assert(n.process(C("k", L(2), L(1), 5)) == TableChange("k", "k=2", null, 5, true))
    assert(calls == List(L(2)))
  }

  test("rule 3: always forwarded, duplicate tombstones included; key, timestamp and isLatest unchanged") {
    val m = new TableMapValuesProcessor[String, java.lang.Long, String](show)
    assert(m.process(C("k", Tomb, Tomb, 3, latest = false)) == TableChange[String, String]("k", null, null, 3, false))
    assert(m.process(C("x", L(7), L(8), -1, latest = false)) == TableChange("x", "x=7", "x=8", -1, false))
  }
}
