package org.apache.spark.sql.kstate.engine

import scala.collection.mutable

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

class AddressTableSuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 300)

  private sealed trait Op
  private case class Put(k: Int, v: Int) extends Op
  private case class Remove(k: Int) extends Op
  private case class RemoveByAddress(k: Int) extends Op

  private def bytes(k: Int): Array[Byte] = Array((k >> 8).toByte, k.toByte)

  /**
   * Deliberately poor hashes (few distinct values, high bits only, negatives) so that probe runs
   * are long, wrap around the table's end and hold keys of different home slots: what removal's
   * backward shift must get right.
   */
  private val hashGen: Gen[Int => Int] = Gen.oneOf[Int => Int](
    (k: Int) => k % 3,
    (k: Int) => (k % 5) << 28,
    (k: Int) => -k,
    (k: Int) => 15 - (k % 4),
    (k: Int) => HashedKey.hashOf(bytes(k))
  )

  private val opGen: Gen[Op] = Gen.frequency(
    4 -> (for (k <- Gen.choose(0, 60); v <- Gen.choose(0, 1000)) yield Put(k, v)),
    2 -> Gen.choose(0, 60).map(Remove),
    1 -> Gen.choose(0, 60).map(RemoveByAddress)
  )

  test("property: puts and removes agree with a hash map, whatever the hash collisions") {
    forAll(hashGen, Gen.listOf(opGen)) { (hash, ops) =>
      val arena = new EntryArena
      val t = new AddressTable
      val model = mutable.Map.empty[Int, Int]
      def valueAt(a: Long): Option[Int] =
        if (a == AddressTable.Empty) None else Some(new String(EntryArena.value(arena.pages, a), "UTF-8").toInt)
      ops.foreach {
        case Put(k, v) =>
          val a = arena.append(bytes(k), v.toString.getBytes("UTF-8"))
          assert(valueAt(t.put(arena.pages, bytes(k), hash(k), a)) == model.put(k, v))
        case Remove(k) =>
          assert(valueAt(t.remove(arena.pages, bytes(k), hash(k))) == model.remove(k))
        case RemoveByAddress(k) =>
          val a = t.get(arena.pages, bytes(k), hash(k))
          if (a != AddressTable.Empty) { t.removeAddress(hash(k), a); model.remove(k) }
      }
      assert(t.size == model.size)
      val occupied = (0 until t.slots).filter(t.addressAt(_) != AddressTable.Empty)
      assert(occupied.size == model.size)
      occupied.foreach { s =>
        val k = EntryArena.key(arena.pages, t.addressAt(s))
        assert(t.hashAt(s) == hash((k(0) & 0xff) << 8 | (k(1) & 0xff)))
      }
      (0 to 60).foreach(k => assert(valueAt(t.get(arena.pages, bytes(k), hash(k))) == model.get(k), s"key $k"))
      assert(t.size <= t.slots * AddressTable.MaxLoad)
    }
  }

  test("grows past its load factor, presizes on request, and rebuilds from known-absent keys") {
    val arena = new EntryArena
    val t = new AddressTable
    val addrs = (0 until 1000).map { k =>
      val a = arena.append(bytes(k), Array[Byte](1))
      t.put(arena.pages, bytes(k), HashedKey.hashOf(bytes(k)), a)
      a
    }
    assert(t.size == 1000 && t.slots == 2048)
    assert(t.tableBytes == AddressTable.tableBytesOf(2048))
    t.ensureCapacity(5000)
    assert(t.slots == 16384 && t.size == 1000)
    (0 until 1000).foreach(k => assert(t.get(arena.pages, bytes(k), HashedKey.hashOf(bytes(k))) == addrs(k)))
    val rebuilt = new AddressTable(1000)
    assert(rebuilt.slots == 2048)
    addrs.foreach(a => rebuilt.putNew(EntryArena.keyHash(arena.pages, a), a))
    (0 until 1000).foreach(k => assert(rebuilt.get(arena.pages, bytes(k), HashedKey.hashOf(bytes(k))) == addrs(k)))
  }
}
