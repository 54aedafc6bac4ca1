package org.apache.spark.sql.kstate.engine

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
  private def unkey(b: Array[Byte]): Int = ((b(0) & 0xff) << 8) | (b(1) & 0xff)
  private val keyGen = Gen.frequency(4 -> Gen.choose(0, 400), 1 -> Gen.choose(0, 65535))

  /** Model: key -> Some(value) for a write, None for a delete; notes are not changes. */
  private def modelRange(m: mutable.Map[Int, Option[Int]], from: Int, until: Option[Int]) =
    m.toList.filter { case (k, _) => k >= from && until.forall(k < _) }.sortBy(_._1)

  private def bytesOf(v: Option[Int]): Array[Byte] = v.map(x => Array.fill(x)(x.toByte)).getOrElse(WriteSet.Deleted)
  private def valueOf(b: Array[Byte]): Option[Int] = if (b eq WriteSet.Deleted) None else Some(b.length)

  /** A key space: int keys (their order is the encoded keys' unsigned byte order) and how to scan. */
  private case class Keys(
      enc: Int => Array[Byte],
      dec: Array[Byte] => Int,
      gen: Gen[Int],
      /** a scan op's (from, until) as bytes; ints, for the model */
      bounds: Scan => (Array[Byte], Option[Array[Byte]], Int, Option[Int])
  )

  // Keys as 2 bytes, unsigned order = numeric order of 0..65535; a few hundred distinct ones,
  // so the tail of the sorted view both stays small and gets merged. Every key is a family of
  // its own: most scans cross families (the global view), `[k, k + 1)` stays in one.
  private val twoByteKeys = Keys(
    key,
    unkey,
    keyGen,
    sc => (key(sc.from), sc.until.map(key), sc.from, sc.until)
  )

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
    prefixes.indexOf(((x(0) & 0xff), (x(1) & 0xff))) * 256 + (x(2) & 0xff)
  private val threeByteKeys = Keys(
    key3,
    unkey3,
    Gen.choose(0, 4 * 256 - 1),
    { sc =>
      val fam = sc.from / 256
      sc.until match {
        case Some(u) if u % 5 == 0 => (key3(sc.from), Some(key3(u)), sc.from, Some(u)) // across families
        case Some(u) if u / 256 == fam => (key3(sc.from), Some(key3(u)), sc.from, Some(u))
        case _ =>
          val p = key3(fam * 256).take(2)
          (key3(sc.from), Bytes.prefixEnd(p), sc.from, if (fam == 3) None else Some((fam + 1) * 256))
      }
    }
  )

  test("property: ordered views agree with a model across interleaved writes, notes and scans") {
    checkViews(twoByteKeys)
  }

  test("property: family views agree with a model when scans stay in one family or cross them") {
    checkViews(threeByteKeys)
  }

  test("deleteWhere deletes in place the written entries of one prefix that match, and nothing else") {
    val ws = new WriteSet()
    // family 0: keys 0..9 written with length-k values; 10 deleted; 11 a read note. Family 1: 0..9 written
    (0 until 10).foreach(k => ws.write(Array[Byte](0, 0, k.toByte), Array.fill(k + 1)(1.toByte)))
    ws.write(Array[Byte](0, 0, 10), WriteSet.Deleted)
    ws.noteRead(new HashedKey(Array[Byte](0, 0, 11)), existed = true)
    (0 until 10).foreach(k => ws.write(Array[Byte](0, 1, k.toByte), Array.fill(k + 1)(1.toByte)))
    val changedBefore = ws.keysWithPrefix(Array[Byte](0, 0))
    assert(changedBefore.size === 11) // the note is not a change
    val heapBefore = ws.heapBytes
    assert(ws.deleteWhere(Array[Byte](0, 0))(v => v.length <= 5) === 5)
    assert(ws.heapBytes === heapBefore - (1 to 5).map(n => WriteSet.arrayBytes(new Array[Byte](n))).sum)
    val byKey = ws.sortedChanges.map(e => (e.key.toList, e.value)).toMap
    (0 until 10).foreach { k =>
      assert((byKey(List[Byte](0, 0, k.toByte)) eq WriteSet.Deleted) === (k < 5), s"family 0, key $k")
      assert(byKey(List[Byte](0, 1, k.toByte)).length === k + 1, s"family 1, key $k")
    }
    assert(byKey(List[Byte](0, 0, 10)) eq WriteSet.Deleted)
    assert(!byKey.contains(List[Byte](0, 0, 11)))
    assert(ws.numEntries === 22)
    assert(ws.deleteWhere(Array[Byte](0, 0))(_ => true) === 5) // deletes are not deleted twice
  }

  test("family of a key range: one when both ends share the first two bytes or the end is the family's") {
    assert(WriteSet.singleFamily(Array[Byte](0, 1, 5), Some(Array[Byte](0, 1, 9))) == 1)
    assert(WriteSet.singleFamily(Array[Byte](0, 1), Some(Array[Byte](0, 2))) == 1)
    assert(WriteSet.singleFamily(Array[Byte](0, -1, 3), Some(Array[Byte](1))) == 255)
    assert(WriteSet.singleFamily(Array[Byte](-1, -1, 3), None) == 0xffff)
    assert(WriteSet.singleFamily(Array[Byte](0, 1, 5), Some(Array[Byte](0, 2, 0))) == -1)
    assert(WriteSet.singleFamily(Array[Byte](0, 1, 5), None) == -1)
    assert(WriteSet.singleFamily(Array[Byte](0), Some(Array[Byte](0, 0, 1))) == -1)
  }

  // Grouped keys, as the versioned store's history: family 00 07, then klen:4 key (klen 0..3,
  // bytes from {00, 01, 7F, FF}), then a version byte; keys of family 00 06 and 00 08 around it.
  private val groupBytes = Gen.listOf(Gen.oneOf(Seq[Byte](0, 1, 0x7f, -1))).map(_.take(3).toArray)
  private def grouped(key: Array[Byte], version: Int): Array[Byte] =
    java.nio.ByteBuffer.allocate(2 + 4 + key.length + 1).put(0.toByte).put(7.toByte).putInt(key.length).put(key)
      .put(version.toByte).array()
  private def group(key: Array[Byte]): Array[Byte] = grouped(key, 0).dropRight(1)

  private sealed trait GroupOp
  private case class GWrite(key: Array[Byte], version: Int, value: Option[Int]) extends GroupOp
  private case class GOther(family: Int, b: Byte, value: Option[Int]) extends GroupOp
  private case class GNote(key: Array[Byte], version: Int) extends GroupOp
  private case class GScan(key: Array[Byte], from: Option[Int], until: Option[Int]) extends GroupOp
  private case object GFamilyScan extends GroupOp
  private case object GClear extends GroupOp

  test("property: group scans see what ordered scans see, with family views and clears in between") {
    val version = Gen.choose(0, 255)
    val opGen: Gen[GroupOp] = Gen.frequency(
      10 -> (for (k <- groupBytes; v <- version; x <- Gen.option(Gen.choose(0, 9))) yield GWrite(k, v, x)),
      2 -> (for (f <- Gen.oneOf(6, 8); b <- Gen.choose(-128, 127); x <- Gen.option(Gen.choose(0, 9)))
        yield GOther(f, b.toByte, x)),
      2 -> (for (k <- groupBytes; v <- version) yield GNote(k, v)),
      6 -> (for (k <- groupBytes; f <- Gen.option(version); u <- Gen.option(version)) yield GScan(k, f, u)),
      1 -> Gen.const(GFamilyScan),
      1 -> Gen.const(GClear)
    )
    forAll(Gen.choose(0, 600).flatMap(n => Gen.listOfN(n, opGen))) { ops =>
      val ws = new WriteSet
      ops.foreach {
        case GWrite(k, v, x) => ws.write(grouped(k, v), bytesOf(x))
        case GOther(f, b, x) => ws.write(Array[Byte](0, f.toByte, b), bytesOf(x))
        case GNote(k, v) => ws.noteRead(new HashedKey(grouped(k, v)), existed = true)
        case GScan(k, f, u) =>
          val g = group(k)
          val from = f.fold(g)(grouped(k, _))
          val until = u.fold(Bytes.prefixEnd(g))(v => Some(grouped(k, v)))
          val expected = ws.changesIn(from, until).toList.map { case (a, b) => (a.toSeq, valueOf(b)) }
          val got = ws.changesInGroup(g, KeyGroups.LengthPrefixed, 2, from, until).toList
            .map { case (a, b) => (a.toSeq, valueOf(b)) }
          assert(got == expected, s"group ${g.toSeq} from ${from.toSeq} until ${until.map(_.toSeq)}")
        case GFamilyScan => ws.changesIn(Array[Byte](0, 7), Some(Array[Byte](0, 8)))
        case GClear => ws.clear()
      }
    }
  }

  test("length-prefixed key groups: the length, then that many bytes; a short key is its own group") {
    val k = Array[Byte](9, 9, 0, 0, 0, 2, 5, 6, 1, 2)
    assert(KeyGroups.LengthPrefixed.length(k, 2) == 6)
    assert(KeyGroups.LengthPrefixed.length(Array[Byte](9, 9, 0, 0), 2) == 2)
    assert(KeyGroups.LengthPrefixed.length(Array[Byte](9, 9, 0, 0, 0, 9, 1), 2) == 5)
  }

  private def checkViews(keys: Keys): Unit = {
    val opGen: Gen[Op] = Gen.frequency(
      12 -> (for (k <- keys.gen; v <- Gen.option(Gen.choose(0, 20))) yield Write(k, v)),
      3 -> (for (k <- keys.gen; e <- Gen.oneOf(true, false)) yield Note(k, e)),
      3 -> (for (f <- keys.gen; u <- Gen.option(keys.gen)) yield Scan(f, u)),
      1 -> (for (f <- keys.gen; u <- Gen.option(keys.gen)) yield ClearRange(f, u))
    )
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
      assert(table <= 48L + 8L * AddressTable.capacityFor(2 * ws.numEntries.toInt) + 4L * math.max(
        16L,
        2 * ws.numEntries
      ))
      assert(table >= 48L + 8L * ws.numEntries / AddressTable.MaxLoad + 4L * ws.numEntries)
      // an entry is in at most two sorted views: the global one and its family's
      assert(ws.heapBytes >= entriesHeap + table &&
        ws.heapBytes <= entriesHeap + table + 2 * ws.numEntries * (WriteSet.SlotBytes + WriteSet.IndexEntryBytes))
      ws.clear()
      assert(ws.heapBytes == ws.tableBytes && ws.tableBytes < 512 && ws.numEntries == 0 && ws.changesIn(
        key(0),
        None
      ).isEmpty)
    }
  }
}
