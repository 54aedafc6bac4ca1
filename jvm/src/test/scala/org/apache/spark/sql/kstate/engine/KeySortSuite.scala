package org.apache.spark.sql.kstate.engine

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

class KeySortSuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 300)

  /** The order a comparison sort gives (the reference). */
  private def expected(keys: Array[Array[Byte]]): List[List[Byte]] =
    keys.toList.sortWith((a, b) => Bytes.Order.compare(a, b) < 0).map(_.toList)

  private def sorted(keys: Array[Array[Byte]]): List[List[Byte]] =
    KeySort.order(keys, keys.length).toList.map(i => keys(i).toList)

  // Few families, long shared prefixes, keys that are prefixes of others, zero bytes past a
  // shorter key's end, bytes either side of 0x80: everything the packed longs must get right.
  private val byteGen = Gen.oneOf(0, 1, 0x7f, 0x80, 0xff).map(_.toByte)
  private def keyGen(shared: Array[Byte]): Gen[Array[Byte]] = for {
    fam <- Gen.oneOf(0, 1, 2, 0xff)
    body <- Gen.choose(0, 12).flatMap(n => Gen.listOfN(n, byteGen))
    cut <- Gen.choose(0, shared.length)
  } yield Array[Byte](0, fam.toByte) ++ shared.take(cut) ++ body

  test("property: the order equals a comparison sort's, duplicates and short keys included") {
    val gen = for {
      shared <- Gen.choose(0, 20).flatMap(n => Gen.listOfN(n, byteGen)).map(_.toArray)
      n <- Gen.choose(0, 400)
      keys <- Gen.listOfN(n, keyGen(shared))
      short <- Gen.listOf(Gen.oneOf(Array.emptyByteArray, Array[Byte](1)))
      withShort <- Gen.oneOf(true, false)
    } yield (keys ++ (if (withShort) short else Nil)).toArray
    forAll(gen) { keys => assert(sorted(keys) == expected(keys)) }
  }

  test("many keys tied on their first 64 bits, and keys that end inside the compared bits") {
    val r = new scala.util.Random(11)
    val keys = Array.fill(5000) {
      val n = r.nextInt(12)
      Array[Byte](0, 1, 2, 3, 4, 5, 6, 7) ++ Array.fill(n)(if (r.nextBoolean()) 0.toByte else r.nextInt(3).toByte)
    }
    assert(sorted(keys) == expected(keys))
  }

  test("many keys in one family that differ only after a long common prefix") {
    val r = new scala.util.Random(7)
    val keys = Array.fill(20000) {
      val tail = Array.fill(r.nextInt(6))(r.nextInt(256).toByte)
      Array[Byte](0, 3) ++ Array.fill(30)(9.toByte) ++ tail
    }
    assert(sorted(keys) == expected(keys))
  }

  test("only the first n keys are ordered") {
    val keys = (0 until 100).map(i => Array[Byte](0, 0, (99 - i).toByte)).toArray
    val order = KeySort.order(keys, 70)
    assert(order.length == 70 && order.toList == (0 until 70).reverse.toList)
  }
}
