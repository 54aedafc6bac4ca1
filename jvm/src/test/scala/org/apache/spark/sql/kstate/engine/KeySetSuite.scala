package org.apache.spark.sql.kstate.engine

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

class KeySetSuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  private def bytes(k: Int): Array[Byte] = Array((k >> 8).toByte, k.toByte)

  // poor hashes too: long probe runs that wrap around the table's end
  private val hashGen: Gen[Int => Int] = Gen.oneOf[Int => Int](
    (k: Int) => k % 3,
    (k: Int) => -k,
    (k: Int) => (k % 5) << 28,
    (k: Int) => HashedKey.hashOf(bytes(k))
  )

  test("property: contains exactly the keys added, with repeats, whatever the hash") {
    forAll(Gen.listOf(Gen.choose(0, 400)), Gen.listOf(Gen.choose(0, 400)), hashGen, minSuccessful(200)) {
      (added, probed, hash) =>
        val set = new KeySet(added.distinct.size)
        added.foreach(k => set.add(bytes(k), hash(k)))
        assert(set.size === added.distinct.size)
        (added ++ probed).foreach { k =>
          assert(set.contains(HashedKey.withHash(bytes(k), hash(k))) === added.contains(k), s"key $k")
        }
    }
  }

  test("a set sized for n keys refuses the n+1st distinct key, and takes repeats") {
    val set = new KeySet(2)
    set.add(bytes(1), 1)
    set.add(bytes(2), 2)
    set.add(bytes(1), 1)
    assert(set.size === 2)
    assert(intercept[IllegalStateException](set.add(bytes(3), 3)).getMessage.contains("full"))
    val empty = new KeySet(0)
    assert(!empty.contains(HashedKey.withHash(bytes(1), 1)))
  }
}
