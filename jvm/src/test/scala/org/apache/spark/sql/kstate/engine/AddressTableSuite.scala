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

  test("property: a table built in one pass finds every key, whatever the hashes, and then takes changes") {
    // sizes on both sides of build's grouped path (1,024 entries and more)
    forAll(hashGen, Gen.oneOf(0, 1, 7, 1023, 1024, 4000), Gen.choose(0, 60), minSuccessful(100)) { (hash, n, removed) =>
      val arena = new EntryArena
      def keyOf(k: Int): Array[Byte] = Array((k >> 16).toByte, (k >> 8).toByte, k.toByte)
      val poor = (k: Int) => hash(k % 61) ^ (k / 61) // the generator's collisions, repeated per block of 61
      val addrs = Array.tabulate(n)(k => arena.append(keyOf(k), Array[Byte](1)))
      val t = AddressTable.build(Array.tabulate(n)(poor), addrs, n)
      assert(t.size == n && t.slots == AddressTable.capacityFor(n))
      (0 until n).foreach(k => assert(t.get(arena.pages, keyOf(k), poor(k)) == addrs(k), s"key $k of $n"))
      assert(t.get(arena.pages, keyOf(n), poor(n)) == AddressTable.Empty)
      // removals' backward shift works on a built table as on one filled key by key
      val gone = (0 until math.min(n, removed)).map(_ * 7 % math.max(n, 1)).distinct
      gone.foreach(k => assert(t.remove(arena.pages, keyOf(k), poor(k)) == addrs(k)))
      assert(t.size == n - gone.size)
      (0 until n).foreach { k =>
        assert(t.get(arena.pages, keyOf(k), poor(k)) == (if (gone.contains(k)) AddressTable.Empty else addrs(k)))
      }
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
