package org.apache.spark.sql.kstate.processor.table

import org.scalatest.funsuite.AnyFunSuite

/** [[TableSource]]'s contract and [[TableSourceProcessor]]'s rules (null keys/timestamps, metrics). */
class TableSourceSuite extends AnyFunSuite {
  import TableFixtures._
  import TableMetrics._

  test("source, unversioned: old value is the previous one by processing order; every change is the latest") {
    val src = new TableSource(InMemoryTableState.unversioned[String, java.lang.Long]())
    assert(src.update("k", L(1), 10) == C("k", L(1), null, 10))
    assert(src.update("k", L(2), 5) == C("k", L(2), L(1), 5)) // out of order: still the latest
    assert(src.update("k", Tomb, 7) == C("k", null, L(2), 7))
    assert(src.update("k", Tomb, 8) == C("k", null, null, 8)) // a tombstone after a tombstone is forwarded
    assert(src.update("j", Tomb, 1) == C("j", null, null, 1))
  }

  test("source, versioned: old value is the latest by timestamp; an out-of-order change is not the latest") {
    val src = new TableSource(InMemoryTableState.versioned[String, java.lang.Long](100, 100))
    assert(src.update("k", L(1), 10) == C("k", L(1), null, 10))
    assert(src.update("k", L(3), 30) == C("k", L(3), L(1), 30))
    assert(src.update("k", L(2), 20) == C("k", L(2), L(3), 20, latest = false))
    assert(src.update("k", Tomb, 40) == C("k", null, L(3), 40))
    assert(src.update("k", L(4), 35) == C("k", L(4), null, 35, latest = false))
    assert(src.update("k", L(5), 40) == C("k", L(5), null, 40)) // replaces the latest tombstone
  }

  test("source, versioned: an update older than stream time - grace is not put and not forwarded") {
    val state = InMemoryTableState.versioned[String, java.lang.Long](100, 10)
    val src = new TableSource(state)
    src.update("k", L(1), 50)
    assert(src.update("k", L(2), 39) == null)
    assert(state.get("k") == TableState.Versioned(L(1), 50))
    assert(src.update("k", L(2), 40) == C("k", L(2), L(1), 40, latest = false))
  }

  private def processor(versioned: Boolean) = new TableSourceProcessor[String, java.lang.Long](
    new TableSource(if (versioned) InMemoryTableState.versioned[String, java.lang.Long](100, 10)
    else InMemoryTableState.unversioned[String, java.lang.Long]())
  )

  test("rule 1: a null key is dropped and counted; stream time unchanged") {
    Seq(false, true).foreach { v =>
      val p = processor(v)
      assert(p.process(null, keyIsNull = true, L(1), 99, tsIsNull = false) == null)
      assert(p.process(null, keyIsNull = true, L(1), 0, tsIsNull = true) == null) // both null: a null key
      assert(p.counters(NullKeysDropped) == 2 && p.counters(NullTimestampsDropped) == 0)
      assert(p.counters(Updates) == 0)
      // stream time unchanged: an update at 0 is still within grace
      assert(p.process("k", keyIsNull = false, L(1), 0, tsIsNull = false) == C("k", L(1), null, 0))
    }
  }

  test("rule 2 (source difference D1): a null timestamp is dropped and counted; stream time unchanged") {
    Seq(false, true).foreach { v =>
      val p = processor(v)
      assert(p.process("k", keyIsNull = false, L(1), 99, tsIsNull = true) == null)
      assert(p.counters(NullTimestampsDropped) == 1 && p.counters(Updates) == 0)
      assert(p.process("k", keyIsNull = false, L(2), 0, tsIsNull = false) == C("k", L(2), null, 0))
    }
  }

  test("rules 3-5: updates, tombstones, updates not put, versions stored, out-of-order updates counted") {
    val p = processor(versioned = true)
    def put(k: String, v: java.lang.Long, ts: Long) = p.process(k, keyIsNull = false, v, ts, tsIsNull = false)
    put("k", L(1), 50)
    put("k", Tomb, 45) // out of order (history), a tombstone
    put("k", L(2), 39) // past grace: not put
    put("j", Tomb, 60)
    assert(p.counters(Updates) == 4)
    assert(p.counters(Tombstones) == 2)
    assert(p.counters(UpdatesNotPut) == 1)
    assert(p.counters(VersionsStored) == 3)
    assert(p.counters(OutOfOrderUpdates) == 1)
    val u = processor(versioned = false)
    u.process("k", keyIsNull = false, L(1), 50, tsIsNull = false)
    assert(u.process("k", keyIsNull = false, L(2), 1, tsIsNull = false) == C("k", L(2), L(1), 1))
    assert(u.counters(OutOfOrderUpdates) == 0 && u.counters(UpdatesNotPut) == 0 && u.counters(VersionsStored) == 2)
  }

  test("counters of another operator are refused") {
    intercept[IllegalArgumentException](new TableSourceProcessor[String, java.lang.Long](
      new TableSource(InMemoryTableState.unversioned[String, java.lang.Long]()),
      org.apache.spark.sql.kstate.processor.dedup.DedupMetrics.newCounters()
    ))
  }

  test("source difference D2: grace is separate from history retention; an update older than stream time - grace " +
    "but within retention is dropped (Kafka, grace = retention, would put it)") {
    def run(grace: Long) = {
      val p = new TableSourceProcessor[String, java.lang.Long](
        new TableSource(InMemoryTableState.versioned[String, java.lang.Long](100, grace))
      )
      p.process("k", keyIsNull = false, L(1), 50, tsIsNull = false)
      (p.process("k", keyIsNull = false, L(2), 39, tsIsNull = false), p.counters(UpdatesNotPut))
    }
    assert(run(grace = 10) == ((null, 1L)))
    assert(run(grace = 100) == ((C("k", L(2), L(1), 39, latest = false), 0L)))
  }
}
