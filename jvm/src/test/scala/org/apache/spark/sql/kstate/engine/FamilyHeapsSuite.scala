package org.apache.spark.sql.kstate.engine

import scala.collection.mutable

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

import org.apache.spark.sql.kstate.engine.UnsignedKeys._

/**
 * [[FamilyHeaps]] must read and write like one store (one sorted key space) whatever the family
 * split, while each family keeps its own sorted index.
 */
class FamilyHeapsSuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 300)

  private def sorted(m: mutable.Map[List[Int], Array[Byte]]): List[(List[Int], List[Byte])] =
    m.toList.sortWith((a, b) => less(a._1, b._1)).map { case (k, v) => k -> v.toList }

  /** Family ids 0, 1, 2 and 300 (a second prefix byte and a first one), then 0-2 key bytes. */
  private val familyGen: Gen[List[Int]] = Gen.oneOf(List(0, 0), List(0, 1), List(0, 2), List(1, 44))
  private val keyGen: Gen[List[Int]] = for {
    f <- familyGen
    n <- Gen.choose(0, 2)
    rest <- Gen.listOfN(n, Gen.oneOf(0, 1, 0x80, 0xff))
  } yield f ++ rest

  /** Range bounds: any short byte string, so ranges start and end inside, between and across families. */
  private val boundGen: Gen[List[Int]] =
    Gen.oneOf(keyGen, Gen.choose(0, 1).flatMap(n => Gen.listOfN(n, Gen.oneOf(0, 1, 2, 0xff))))

  private sealed trait Op
  private case class Put(k: List[Int], v: Array[Byte]) extends Op
  private case class Del(k: List[Int]) extends Op
  private case class DelRange(from: List[Int], until: Option[List[Int]]) extends Op
  private case class Version(changes: Map[List[Int], Option[Array[Byte]]], sortedRun: Boolean, seed: Long) extends Op
  private case class Scan(from: List[Int], until: Option[List[Int]]) extends Op
  private case class WithPrefix(prefix: List[Int]) extends Op

  private val opGen: Gen[Op] = Gen.frequency(
    4 -> (for (k <- keyGen; n <- Gen.choose(0, 9)) yield Put(k, Array.fill(n)(n.toByte))),
    2 -> keyGen.map(Del),
    1 -> (for (f <- boundGen; u <- Gen.option(boundGen)) yield DelRange(f, u)),
    4 -> (for {
      changes <-
        Gen.mapOf(for (k <- keyGen; v <- Gen.option(Gen.choose(0, 5).map(n => Array.fill(n)(3.toByte)))) yield k -> v)
      sortedRun <- Gen.oneOf(true, false)
      seed <- Gen.long
    } yield Version(changes, sortedRun, seed)),
    2 -> (for (f <- boundGen; u <- Gen.option(boundGen)) yield Scan(f, u)),
    1 -> boundGen.map(p => WithPrefix(p.take(3)))
  )

  private def read(s: StateScan): List[(List[Int], List[Byte])] = {
    val out = mutable.ListBuffer.empty[(List[Int], List[Byte])]
    try while (s.valid) { out += ints(s.key) -> s.value.toList; s.next() }
    finally s.close()
    out.toList
  }

  test("property: reads, writes, range deletes and counts across families agree with one sorted model") {
    forAll(Gen.listOf(opGen), boundGen, Gen.option(boundGen), Gen.oneOf(0L, 64L, HeapState.MinGarbageBytes)) {
      (ops, from, until, threshold) =>
        val h = new FamilyHeaps(threshold)
        val m = mutable.Map.empty[List[Int], Array[Byte]]
        // scans opened along the way, read at the end: each must still show the state it was opened at
        val frozen = mutable.ListBuffer.empty[(StateScan, List[(List[Int], List[Byte])])]
        ops.foreach {
          case Put(k, v) => h.put(bytes(k), v.clone()); m(k) = v
          case Del(k) => h.delete(bytes(k)); m.remove(k)
          case DelRange(f, u) =>
            val gone = m.keys.filter(inRange(_, f, u)).toList
            assert(h.deleteRange(bytes(f), u.map(bytes)) == gone.size)
            gone.foreach(m.remove)
          case Version(changes, sortedRun, seed) =>
            val before = m.size
            val delta =
              if (sortedRun) h.applySorted(entries(changes), changes.size)
              else h.applyChanges(new scala.util.Random(seed).shuffle(entries(changes).toList).toArray)
            changes.foreach { case (k, v) => v.fold(m.remove(k))(x => m.put(k, x)) }
            assert(delta == m.size - before)
          case Scan(f, u) =>
            frozen += h.scan(bytes(f), u.map(bytes)) -> sorted(m).filter { case (k, _) => inRange(k, f, u) }
          case WithPrefix(p) =>
            val got = h.entriesWithPrefix(bytes(p), _ => false).map { case (k, v) => ints(k) -> v.toList }.toList
            assert(got.sortWith((a, b) => less(a._1, b._1)) == sorted(m).filter(_._1.startsWith(p)))
        }
        frozen.foreach { case (s, want) => assert(read(s) == want) }
        assert(h.size == m.size)
        m.foreach { case (k, v) =>
          assert(h.get(new HashedKey(bytes(k))).toList == v.toList && h.contains(new HashedKey(bytes(k))))
        }
        val ranged = sorted(m).filter { case (k, _) => inRange(k, from, until) }
        assert(read(h.scan(bytes(from), until.map(bytes))) == ranged)
        assert(h.count(bytes(from), until.map(bytes)) == ranged.size)
        assert(read(h.scan(Array.emptyByteArray, None)) == sorted(m))
        val all = mutable.ListBuffer.empty[List[Int]]
        h.foreach((k, _) => all += ints(k))
        assert(all.toList.sortWith(less) == sorted(m).map(_._1))
        assert(h.frozenEntries().map(e => ints(e._1)).toList.sortWith(less) == sorted(m).map(_._1))
    }
  }

  private def change(family: Int, k: Int, v: Int): WriteSet.Entry =
    new WriteSet.Entry(new HashedKey(Array(0.toByte, family.toByte, k.toByte)), Array(v.toByte), WriteSet.Unknown)

  test("each family keeps its sorted index only while ordered reads use that family") {
    val h = new FamilyHeaps
    assert(h.applyChanges(Array(change(2, 5, 1), change(1, 9, 1), change(1, 3, 1), change(2, 1, 1))) == 4)
    assert(!h.keepsIndex(1) && !h.keepsIndex(2))
    // an ordered read of family 1 only
    val s = h.scan(Array[Byte](0, 1), Some(Array[Byte](0, 2)))
    assert(read(s).map(_._1) == List(List(0, 1, 3), List(0, 1, 9)))
    assert(h.keepsIndex(1) && !h.keepsIndex(2))
    // the next version: family 1's changes are sorted into its index, family 2's are not
    assert(h.applyChanges(Array(change(1, 7, 2), change(2, 4, 2), change(1, 0, 2))) == 3)
    assert(!h.keepsIndex(1) && !h.keepsIndex(2)) // nothing read in order since
    assert(read(h.scan(Array[Byte](0, 1), Some(Array[Byte](0, 2)))).map(_._1.last) == List(0, 3, 7, 9))
    assert(read(h.scan(Array[Byte](0, 2), None)).map(_._1.last) == List(1, 4, 5))
  }

  test("an unordered iteration of one family reads that family only, and a dropped family is gone") {
    val h = new FamilyHeaps
    h.applyChanges(Array(change(1, 1, 1), change(2, 2, 2), change(3, 3, 3)))
    assert(h.entriesWithPrefix(Array[Byte](0, 2), _ => false).map(e => ints(e._1)).toList == List(List(0, 2, 2)))
    val before = h.heapBytes
    assert(h.deleteRange(Array[Byte](0, 2), Some(Array[Byte](0, 3))) == 1)
    assert(h.heapBytes < before)
    assert(h.get(new HashedKey(Array[Byte](0, 2, 2))) == null && h.size == 2)
    assert(h.count(Array.emptyByteArray, None) == 2)
  }

  test("a key without a family prefix is refused") {
    val e = intercept[IllegalArgumentException](new FamilyHeaps().put(Array[Byte](1), Array[Byte](1)))
    assert(e.getMessage.contains("2-byte family prefix"))
  }
}
