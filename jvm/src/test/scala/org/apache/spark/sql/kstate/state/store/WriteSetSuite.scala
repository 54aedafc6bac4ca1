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

  /** Model: key -> Some(value) for a write, None for a delete; notes are not changes. */
  private def modelRange(m: mutable.Map[Int, Option[Int]], from: Int, until: Option[Int]) =
    m.toList.filter { case (k, _) => k >= from && until.forall(k < _) }.sortBy(_._1)

  private def bytesOf(v: Option[Int]): Array[Byte] = v.map(x => Array.fill(x)(x.toByte)).getOrElse(WriteSet.Deleted)
  private def valueOf(b: Array[Byte]): Option[Int] = if (b eq WriteSet.Deleted) None else Some(b.length)

  /** A key space: int keys (their order is the encoded keys' unsigned byte order) and how to scan. */
  private case class Keys(enc: Int => Array[Byte], dec: Array[Byte] => Int, gen: Gen[Int],
      /** a scan op's (from, until) as bytes; ints, for the model */
      bounds: Scan => (Array[Byte], Option[Array[Byte]], Int, Option[Int]))

  // Keys as 2 bytes, unsigned order = numeric order of 0..65535; a few hundred distinct ones,
  // so the tail of the sorted view both stays small and gets merged. Every key is a family of
  // its own: most scans cross families (the global view), `[k, k + 1)` stays in one.
  private val twoByteKeys = Keys(key, unkey, keyGen,
    sc => (key(sc.from), sc.until.map(key), sc.from, sc.until))

  // Keys as 3 bytes: 4 families (the first two bytes, as FamilyCodec prefixes them, including the
  // last possible one, FF FF, whose end is the keyspace's), 256 keys each. Scans are family
  // scans (from a key to another of its family or to the family's end, as KStateStore scans)
  // or, for a few, across families.
  private val prefixes = Seq((0, 0), (0, 1), (0, 255), (255, 255))
  private def key3(k: Int): Array[Byte] = {
    val (a, b) = prefixes(k / 256)
    Array(a.toByte, b.toByte, (k % 256).toByte)
  }
  private def unkey3(x: Array[Byte]): Int =
    prefixes.indexOf(((x(0) & 0xFF), (x(1) & 0xFF))) * 256 + (x(2) & 0xFF)
  private val threeByteKeys = Keys(key3, unkey3, Gen.choose(0, 4 * 256 - 1), { sc =>
    val fam = sc.from / 256
    sc.until match {
      case Some(u) if u % 5 == 0 => (key3(sc.from), Some(key3(u)), sc.from, Some(u)) // across families
      case Some(u) if u / 256 == fam => (key3(sc.from), Some(key3(u)), sc.from, Some(u))
      case _ =>
        val p = key3(fam * 256).take(2)
        (key3(sc.from), Bytes.prefixEnd(p), sc.from, if (fam == 3) None else Some((fam + 1) * 256))
    }
  })

  test("property: ordered views agree with a model across interleaved writes, notes and scans") {
    checkViews(twoByteKeys)
  }

  test("property: family views agree with a model when scans stay in one family or cross them") {
    checkViews(threeByteKeys)
  }

  test("family of a key range: one when both ends share the first two bytes or the end is the family's") {
    assert(WriteSet.singleFamily(Array[Byte](0, 1, 5), Some(Array[Byte](0, 1, 9))) == 1)
    assert(WriteSet.singleFamily(Array[Byte](0, 1), Some(Array[Byte](0, 2))) == 1)
    assert(WriteSet.singleFamily(Array[Byte](0, -1, 3), Some(Array[Byte](1))) == 255)
    assert(WriteSet.singleFamily(Array[Byte](-1, -1, 3), None) == 0xFFFF)
    assert(WriteSet.singleFamily(Array[Byte](0, 1, 5), Some(Array[Byte](0, 2, 0))) == -1)
    assert(WriteSet.singleFamily(Array[Byte](0, 1, 5), None) == -1)
    assert(WriteSet.singleFamily(Array[Byte](0), Some(Array[Byte](0, 0, 1))) == -1)
  }

  private def checkViews(keys: Keys): Unit = {
    val opGen: Gen[Op] = Gen.frequency(
      12 -> (for (k <- keys.gen; v <- Gen.option(Gen.choose(0, 20))) yield Write(k, v)),
      3 -> (for (k <- keys.gen; e <- Gen.oneOf(true, false)) yield Note(k, e)),
      3 -> (for (f <- keys.gen; u <- Gen.option(keys.gen)) yield Scan(f, u)),
      1 -> (for (f <- keys.gen; u <- Gen.option(keys.gen)) yield ClearRange(f, u)))
    val key = keys.enc
    val unkey = keys.dec
    forAll(Gen.choose(0, 1500).flatMap(n => Gen.listOfN(n, opGen))) { ops =>
      val ws = new WriteSet
      val changes = mutable.Map.empty[Int, Option[Int]]
      val noted = mutable.Map.empty[Int, Boolean]
      ops.foreach {
        case Write(k, v) => ws.write(key(k), bytesOf(v)); changes(k) = v; noted.remove(k)
        case Note(k, e) =>
          ws.noteRead(new HashedKey(key(k)), e)
          if (!changes.contains(k) && !noted.contains(k)) noted(k) = e
        case sc: Scan =>
          val (from, until, f, u) = keys.bounds(sc)
          val got = ws.changesIn(from, until).toList.map { case (k, v) => unkey(k) -> valueOf(v) }
          assert(got == modelRange(changes, f, u))
          val limit = 1 + (f % 7)
          val first = ws.changesIn(from, until, limit).toList.map { case (k, v) => unkey(k) -> valueOf(v) }
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
      // an entry is in at most two sorted views: the global one and its family's
      assert(ws.heapBytes >= entriesHeap + table &&
        ws.heapBytes <= entriesHeap + table + 2 * ws.numEntries * (WriteSet.SlotBytes + WriteSet.IndexEntryBytes))
      ws.clear()
      assert(ws.heapBytes == ws.tableBytes && ws.tableBytes < 512 && ws.numEntries == 0 && ws.changesIn(key(0), None).isEmpty)
    }
  }
}
