package org.apache.spark.sql.kstate.processor.tableagg

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.kstate.processor.table.{InMemoryTableState, TableChange, TableSource}
import org.scalatest.funsuite.AnyFunSuite

/**
 * Unit tests of [[TableRegroupProcessor]] (stage 1, Kafka's `KTableRepartitionMap`), one per
 * rule, and KIP-914's aggregate example at this stage. Table values are strings "group=value"
 * ("-" for a null group or value); group values are the Longs after '='.
 */
class TableRegroupProcessorSuite extends AnyFunSuite {
  import TableRegroupProcessorSuite._

  private def regroup(
      versioned: Boolean,
      changes: TableChange[String, String]*
  ): (Seq[GC], TableRegroupProcessor[String, String, String, java.lang.Long]) = {
    val p = new TableRegroupProcessor(selector, versioned)
    val out = ArrayBuffer.empty[GC]
    changes.foreach(p.process(_, out += _))
    (out.toSeq, p)
  }

  private def ch(newV: String, oldV: String, ts: Long = 7L, latest: Boolean = true) =
    TableChange("k", newV, oldV, ts, latest)
  private def gc(g: String, newV: java.lang.Long, oldV: java.lang.Long, ts: Long = 7L) = GroupChange(g, newV, oldV, ts)

  test("rule 1: an out-of-order change of a versioned table is ignored entirely, and counted") {
    val (out, p) = regroup(versioned = true, ch("x=2", "x=1", latest = false), ch("y=2", "x=1", latest = false))
    assert(out === Nil)
    assert(p.counters(TableRegroupMetrics.OutOfOrderIgnored) === 2)
    assert(p.counters(TableRegroupMetrics.GroupChanges) === 0)
  }

  test("rule 1: on an unversioned table every change is regrouped (isLatest is not consulted)") {
    val (out, p) = regroup(versioned = false, ch("x=2", "x=1", latest = false))
    assert(out === Seq(gc("x", 2L, 1L)))
    assert(p.counters(TableRegroupMetrics.OutOfOrderIgnored) === 0)
  }

  test("rule 2: a value whose group or group value is null contributes to no group, and is counted") {
    val (out, p) = regroup(
      versioned = false,
      ch("-=2", "x=1"), // new value has no group: only the subtract
      ch("x=2", "x=-"), // old value contributes nothing: only the add
      ch("-=2", "x=-")
    ) // neither: nothing
    assert(out === Seq(gc("x", null, 1L), gc("x", 2L, null)))
    assert(p.counters(TableRegroupMetrics.NoGroup) === 4)
  }

  test("rule 3: old and new value in the same group: one change carrying both") {
    val (out, _) = regroup(versioned = true, ch("x=2", "x=1"))
    assert(out === Seq(gc("x", 2L, 1L)))
  }

  test("rule 3: the group is compared with the selector's sameGroup, not ==") {
    val bytes = new GroupSelector[String, String, Array[Byte], java.lang.Long] {
      override def select(key: String, value: String): GroupedValue[Array[Byte], java.lang.Long] =
        GroupedValue(
          value.takeWhile(_ != '=').getBytes("UTF-8"),
          java.lang.Long.valueOf(value.dropWhile(_ != '=').drop(1))
        )
      override def sameGroup(a: Array[Byte], b: Array[Byte]): Boolean = java.util.Arrays.equals(a, b)
    }
    val p = new TableRegroupProcessor(bytes, versionedTable = false)
    val out = ArrayBuffer.empty[GroupChange[Array[Byte], java.lang.Long]]
    p.process(ch("x=2", "x=1"), out += _)
    assert(out.map(c => (new String(c.group, "UTF-8"), c.newValue, c.oldValue)) === Seq(("x", 2L, 1L)))
  }

  test("rule 4: a re-grouped row is subtracted from its old group first, then added to its new one") {
    val (out, p) = regroup(versioned = false, ch("y=2", "x=1"))
    assert(out === Seq(gc("x", null, 1L), gc("y", 2L, null)))
    assert(p.counters(TableRegroupMetrics.GroupChanges) === 2)
  }

  test("rule 4: a key's first value sends only an add, a tombstone only a subtract, a tombstone of nothing nothing") {
    val (out, _) = regroup(versioned = false, ch("x=1", null), ch(null, "x=1"), ch(null, null))
    assert(out === Seq(gc("x", 1L, null), gc("x", null, 1L)))
  }

  test("rule 5: every change sent carries the table change's timestamp") {
    val (out, _) = regroup(versioned = false, ch("y=2", "x=1", ts = 42L), ch("y=3", "y=2", ts = 3L))
    assert(out === Seq(gc("x", null, 1L, 42L), gc("y", 2L, null, 42L), gc("y", 3L, 2L, 3L)))
  }

  // KIP-914's table: (v1, ts=1), (v2, ts=10), (v3, ts=5), all with the same key
  private def kip(versioned: Boolean, v1: String, v2: String, v3: String): Seq[Seq[GC]] = {
    val source = new TableSource(if (versioned) InMemoryTableState.versioned[String, String](100L, 100L)
    else InMemoryTableState.unversioned[String, String]())
    val p = new TableRegroupProcessor(selector, versioned)
    Seq((v1, 1L), (v2, 10L), (v3, 5L)).map { case (v, ts) =>
      val out = ArrayBuffer.empty[GC]
      p.process(source.update("k", v, ts), out += _)
      out.toSeq
    }
  }

  test("KIP-914 example, unversioned: add v1; remove v1, add v2; remove v2, add v3") {
    assert(kip(versioned = false, "a=1", "b=2", "c=3") === Seq(
      Seq(gc("a", 1L, null, 1L)),
      Seq(gc("a", null, 1L, 10L), gc("b", 2L, null, 10L)),
      Seq(gc("b", null, 2L, 5L), gc("c", 3L, null, 5L))
    ))
    // one group: each update is one change carrying both values
    assert(kip(versioned = false, "s=1", "s=2", "s=3") === Seq(
      Seq(gc("s", 1L, null, 1L)),
      Seq(gc("s", 2L, 1L, 10L)),
      Seq(gc("s", 3L, 2L, 5L))
    ))
  }

  test("KIP-914 example, versioned: add v1; remove v1, add v2; nothing for v3 (older than v2)") {
    assert(kip(versioned = true, "a=1", "b=2", "c=3") === Seq(
      Seq(gc("a", 1L, null, 1L)),
      Seq(gc("a", null, 1L, 10L), gc("b", 2L, null, 10L)),
      Nil
    ))
    assert(kip(versioned = true, "s=1", "s=2", "s=3") === Seq(
      Seq(gc("s", 1L, null, 1L)),
      Seq(gc("s", 2L, 1L, 10L)),
      Nil
    ))
  }
}

object TableRegroupProcessorSuite {
  type GC = GroupChange[String, java.lang.Long]

  /** "group=value", "-" for null. */
  val selector: GroupSelector[String, String, String, java.lang.Long] =
    new GroupSelector[String, String, String, java.lang.Long] {
      override def select(key: String, value: String): GroupedValue[String, java.lang.Long] = {
        val Array(g, v) = value.split("=", 2)
        GroupedValue(if (g == "-") null else g, if (v == "-") null else java.lang.Long.valueOf(v))
      }
      override def sameGroup(a: String, b: String): Boolean = a == b
    }
}
