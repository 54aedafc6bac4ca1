package org.apache.spark.sql.kstate.processor.table

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.kstate.processor.StreamTime
import org.apache.spark.sql.kstate.processor.table.TableState.{Latest, NotPut, Versioned}

/** Every rule of [[TableState]]'s contract on the heap implementations, one test per rule. */
class InMemoryTableStateSuite extends AnyFunSuite {
  import TableFixtures._
  private def unversioned() = InMemoryTableState.unversioned[String, java.lang.Long]()
  private def versioned(retention: Long = 100, grace: Long = 100) =
    InMemoryTableState.versioned[String, java.lang.Long](retention, grace)

  // ---- unversioned -------------------------------------------------------------------------

  test("numVersions: an unversioned state holds none; a versioned one counts puts of new timestamps") {
    val u = unversioned()
    u.put("k", L(1), 10); u.put("k", L(2), 11)
    assert(u.numVersions == 0)
    val s = versioned(retention = 100, grace = 5)
    assert(s.numVersions == 0)
    s.put("k", L(1), 10); s.put("k", L(2), 20); s.put("x", L(3), 20)
    assert(s.numVersions == 3)
    s.put("k", L(9), 20) // same timestamp: replaces the version
    s.put("k", L(8), 15) // out of order: a version in history
    s.put("k", Tomb, 25) // a tombstone is a version
    assert(s.numVersions == 5)
    assert(s.put("k", L(7), 19) == NotPut) // older than stream time 25 - grace 5: not stored
    assert(s.numVersions == 5)
  }

  test("unversioned: not versioned; every put returns Latest") {
    val s = unversioned()
    assert(!s.versioned)
    assert(s.put("k", L(1), 10) == Latest)
    assert(s.put("k", L(2), 5) == Latest) // older timestamp: still the latest by processing order
    assert(s.put("k", Tomb, 1) == Latest)
    assert(s.put("x", Tomb, 1) == Latest) // tombstone for an absent key
  }

  test("unversioned: the latest value is the last one put, by processing order, whatever its timestamp") {
    val s = unversioned()
    s.put("k", L(1), 10)
    s.put("k", L(2), 5)
    assert(s.get("k") == Versioned(L(2), 5))
  }

  test("unversioned: a null value deletes the key") {
    val s = unversioned()
    s.put("k", L(1), 10)
    s.put("k", Tomb, 11)
    assert(s.get("k") == null)
    assert(s.get("never") == null)
  }

  test("unversioned: getAsOf is get, whatever the time asked") {
    val s = unversioned()
    s.put("k", L(1), 10)
    s.put("k", L(2), 20)
    Seq(Long.MinValue, 0L, 10L, 15L, 20L, Long.MaxValue).foreach(t => assert(s.getAsOf("k", t) == Versioned(L(2), 20)))
    assert(s.getAsOf("other", 20) == null)
  }

  test("unversioned: stream time is the largest timestamp put, Unknown before the first") {
    val s = unversioned()
    assert(s.streamTime == StreamTime.Unknown)
    s.put("k", L(1), 10); s.put("k", L(1), 4); s.put("j", Tomb, 7)
    assert(s.streamTime == 10)
    s.put("j", Tomb, 12)
    assert(s.streamTime == 12)
  }

  // ---- versioned ---------------------------------------------------------------------------

  test("versioned: is versioned; needs 0 <= grace <= history retention") {
    assert(versioned().versioned)
    intercept[IllegalArgumentException](versioned(retention = 10, grace = 11))
    intercept[IllegalArgumentException](versioned(retention = -1, grace = 0))
    intercept[IllegalArgumentException](versioned(retention = 10, grace = -1))
    assert(versioned(retention = 0, grace = 0).versioned)
  }

  test("versioned: a put older than stream time - grace is NotPut and stores nothing; at the bound it is put") {
    val s = versioned(retention = 100, grace = 20)
    assert(s.put("k", L(1), 50) == Latest)
    assert(s.put("k", L(2), 29) == NotPut)
    assert(s.put("new", L(2), 29) == NotPut)
    assert(s.get("new") == null && s.getAsOf("k", 29) == null)
    assert(s.streamTime == 50)
    assert(s.put("k", L(3), 30) == 50) // exactly stream time - grace: stored, into history
    assert(s.getAsOf("k", 30) == Versioned(L(3), 30))
  }

  test("versioned: nothing is NotPut before the first put (stream time unknown)") {
    val s = versioned(retention = 0, grace = 0)
    assert(s.put("k", L(1), Long.MinValue + 1) == Latest)
  }

  test(
    "versioned: the latest is the largest timestamp; an older put goes into history, returning the next version's time"
  ) {
    val s = versioned()
    assert(s.put("k", L(1), 10) == Latest)
    assert(s.put("k", L(3), 30) == Latest)
    assert(s.put("k", L(2), 20) == 30)
    assert(s.put("k", L(0), 5) == 10)
    assert(s.get("k") == Versioned(L(3), 30))
  }

  test("versioned: a put at an existing version's timestamp replaces its value (and returns its validTo)") {
    val s = versioned()
    s.put("k", L(1), 10); s.put("k", L(3), 30)
    assert(s.put("k", L(11), 10) == 30)
    assert(s.getAsOf("k", 15) == Versioned(L(11), 10))
    assert(s.put("k", L(33), 30) == Latest)
    assert(s.get("k") == Versioned(L(33), 30))
  }

  test("versioned: tombstones are versions: a latest tombstone hides the key, an older put before it ends at it") {
    val s = versioned()
    s.put("k", L(1), 10)
    assert(s.put("k", Tomb, 20) == Latest)
    assert(s.get("k") == null)
    assert(s.put("k", L(2), 15) == 20) // validTo: the tombstone
    assert(s.get("k") == null)
    assert(s.getAsOf("k", 17) == Versioned(L(2), 15))
    assert(s.getAsOf("k", 20) == null)
  }

  test("versioned: getAsOf is the version with the largest timestamp <= asOf (inclusive), null before the first") {
    val s = versioned()
    s.put("k", L(1), 10); s.put("k", L(2), 20)
    assert(s.getAsOf("k", 9) == null)
    assert(s.getAsOf("k", 10) == Versioned(L(1), 10))
    assert(s.getAsOf("k", 19) == Versioned(L(1), 10))
    assert(s.getAsOf("k", 20) == Versioned(L(2), 20))
    assert(s.getAsOf("k", Long.MaxValue) == Versioned(L(2), 20))
    assert(s.getAsOf("absent", 20) == null)
  }

  test("versioned: past stream time - history retention only the latest version answers; at the bound all are served") {
    val s = versioned(retention = 50, grace = 10)
    s.put("k", L(1), 10); s.put("k", L(2), 20); s.put("x", L(9), 100)
    assert(s.getAsOf("k", 15) == null) // 1@10 is history past retention; the latest (20) is newer than 15
    assert(s.getAsOf("k", 49) == Versioned(L(2), 20)) // the latest never expires (Kafka's rule)
    s.put("k", L(3), 95)
    assert(s.getAsOf("k", 49) == null) // 2@20 is history now, past retention
    assert(s.getAsOf("k", 50) == Versioned(L(2), 20))
    assert(s.get("k") == Versioned(L(3), 95)) // get (latest) has no retention bound
  }

  test("versioned: stream time is the largest timestamp put; NotPut does not move it") {
    val s = versioned(retention = 10, grace = 5)
    assert(s.streamTime == StreamTime.Unknown)
    s.put("k", L(1), 100); s.put("k", L(1), 96)
    assert(s.streamTime == 100)
    s.put("k", Tomb, 101)
    assert(s.streamTime == 101)
    assert(s.put("k", L(1), 1) == NotPut && s.streamTime == 101)
  }

  test("versioned: saturating bounds at extreme times (no overflow)") {
    val s = versioned(retention = Long.MaxValue, grace = Long.MaxValue)
    s.put("k", L(1), -5) // -5 - Long.MaxValue saturates at Long.MinValue: nothing is past grace
    assert(s.put("k", L(2), Long.MinValue + 1) == -5)
    assert(s.getAsOf("k", Long.MinValue + 1) == Versioned(L(2), Long.MinValue + 1))
    val t = versioned(retention = 10, grace = 10)
    t.put("k", L(1), Long.MaxValue)
    assert(t.put("k", L(2), Long.MaxValue - 11) == NotPut)
    assert(t.put("k", L(3), Long.MaxValue - 10) == Long.MaxValue)
  }
}
