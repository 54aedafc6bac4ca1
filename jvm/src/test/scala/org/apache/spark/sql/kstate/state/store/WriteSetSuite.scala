package org.apache.spark.sql.kstate.state.store

import scala.collection.mutable

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

class WriteSetSuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 100)

  private sealed trait Op
  private case class Write(k: Int, v: Option[Int]) extends Op // None: delete
  private case class Note(k: Int, existed: Boolean) extends Op
  private case class Scan(from: Int, until: Option[Int]) extends Op
  private case class ClearRange(from: Int, until: Option[Int]) extends Op

  // Keys as 2 bytes, unsigned order = numeric order of 0..65535; a few hundred distinct ones,
  // so the tail of the sorted view both stays small and gets merged.
  private def key(k: Int): Array[Byte] = Array((k >> 8).toByte, k.toByte)
  private def unkey(b: Array[Byte]): Int = ((b(0) & 0xFF) << 8) | (b(1) & 0xFF)
  private val keyGen = Gen.frequency(4 -> Gen.choose(0, 400), 1 -> Gen.choose(0, 65535))
  private val opGen: Gen[Op] = Gen.frequency(
    12 -> (for (k <- keyGen; v <- Gen.option(Gen.choose(0, 20))) yield Write(k, v)),
    3 -> (for (k <- keyGen; e <- Gen.oneOf(true, false)) yield Note(k, e)),
    3 -> (for (f <- keyGen; u <- Gen.option(keyGen)) yield Scan(f, u)),
    1 -> (for (f <- keyGen; u <- Gen.option(keyGen)) yield ClearRange(f, u)))

  /** Model: key -> Some(value) for a write, None for a delete; notes are not changes. */
  private def modelRange(m: mutable.Map[Int, Option[Int]], from: Int, until: Option[Int]) =
    m.toList.filter { case (k, _) => k >= from && until.forall(k < _) }.sortBy(_._1)

  private def bytesOf(v: Option[Int]): Array[Byte] = v.map(x => Array.fill(x)(x.toByte)).getOrElse(WriteSet.Deleted)
  private def valueOf(b: Array[Byte]): Option[Int] = if (b eq WriteSet.Deleted) None else Some(b.length)

  test("property: ordered views agree with a model across interleaved writes, notes and scans") {
    forAll(Gen.choose(0, 1500).flatMap(n => Gen.listOfN(n, opGen))) { ops =>
      val ws = new WriteSet
      val changes = mutable.Map.empty[Int, Option[Int]]
      val noted = mutable.Map.empty[Int, Boolean]
      ops.foreach {
        case Write(k, v) => ws.write(key(k), bytesOf(v)); changes(k) = v; noted.remove(k)
        case Note(k, e) =>
          ws.noteRead(new HashedKey(key(k)), e)
          if (!changes.contains(k) && !noted.contains(k)) noted(k) = e
        case Scan(f, u) =>
          val got = ws.changesIn(key(f), u.map(key)).toList.map { case (k, v) => unkey(k) -> valueOf(v) }
          assert(got == modelRange(changes, f, u))
          val limit = 1 + (f % 7)
          val first = ws.changesIn(key(f), u.map(key), limit).toList.map { case (k, v) => unkey(k) -> valueOf(v) }
          assert(first == modelRange(changes, f, u).take(limit))
        case ClearRange(f, u) =>
          ws.clearRange(key(f), u.map(key))
          changes.keys.filter(k => k >= f && u.forall(k < _)).toList.foreach(changes.remove)
          noted.keys.filter(k => k >= f && u.forall(k < _)).toList.foreach(noted.remove)
      }
      val sorted = ws.sortedChanges.toList.map(e => unkey(e.key) -> valueOf(e.value))
      assert(sorted == modelRange(changes, 0, None))
      noted.foreach { case (k, e) =>
        val entry = ws.lookup(new HashedKey(key(k)))
        assert(entry != null && entry.value == null && entry.existed == (if (e) WriteSet.Present else WriteSet.Absent))
      }
      assert(ws.numEntries == (changes.keySet ++ noted.keySet).size)
      val entriesHeap = (changes.map { case (k, v) => WriteSet.heapBytesOf(key(k), bytesOf(v)) } ++
        noted.keys.toSeq.map(k => WriteSet.heapBytesOf(key(k), null))).sum
      // the table's arrays: two slots (int and reference) per table slot at most MaxLoad full,
      // and the insertion order, which at most doubles past the entries
      val table = ws.tableBytes
      assert(table <= 48L + 8L * AddressTable.capacityFor(2 * ws.numEntries.toInt) + 4L * math.max(16L, 2 * ws.numEntries))
      assert(table >= 48L + 8L * ws.numEntries / AddressTable.MaxLoad + 4L * ws.numEntries)
      assert(ws.heapBytes >= entriesHeap + table &&
        ws.heapBytes <= entriesHeap + table + ws.numEntries * (WriteSet.SlotBytes + WriteSet.IndexEntryBytes))
      ws.clear()
      assert(ws.heapBytes == ws.tableBytes && ws.tableBytes < 512 && ws.numEntries == 0 && ws.changesIn(key(0), None).isEmpty)
    }
  }
}
