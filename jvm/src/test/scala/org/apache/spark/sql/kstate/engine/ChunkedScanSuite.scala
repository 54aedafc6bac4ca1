package org.apache.spark.sql.kstate.engine

import java.nio.ByteBuffer

import scala.collection.mutable

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

import org.apache.spark.sql.kstate.provider.ProviderFixture
import org.apache.spark.sql.types.{BinaryType, StructField, StructType}

/** A chunked scan yields what a frozen scan does, across chunk boundaries and committed state. */
class ChunkedScanSuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  private val schema = StructType(Seq(StructField("b", BinaryType)))
  private def key(i: Int): Array[Byte] = ByteBuffer.allocate(4).putInt(i).array()
  private def unkey(b: Array[Byte]): Int = ByteBuffer.wrap(b).getInt

  private def read(it: Iterator[(Array[Byte], Array[Byte])] with AutoCloseable): List[(Int, Int)] =
    try it.map { case (k, v) => unkey(k) -> v.length }.toList
    finally it.close()

  test("property: same entries as a frozen scan, with committed and uncommitted changes") {
    // up to ~20k changes per version: chunks of 16 doubling to 4096, so every size is crossed
    val version = Gen.listOf(Gen.zip(Gen.choose(0, 20000), Gen.option(Gen.choose(1, 5))))
    forAll(Gen.listOfN(2, Gen.zip(Gen.choose(0, 20000), version)), minSuccessful(12)) { versions =>
      val p = ProviderFixture.open(ProviderFixture.tmp(), schema, schema)
      val model = mutable.TreeMap.empty[Int, Int]
      var v = 0L
      versions.zipWithIndex.foreach { case ((bulk, ops), n) =>
        val s = p.getStore(v)
        val fam = s.bytes("t")
        // a dense run of writes (chunks fill up) then random writes and deletes
        (0 until bulk by 3).foreach { i => fam.put(key(i), Array.fill(1 + n)(0)); model(i) = 1 + n }
        ops.foreach {
          case (k, Some(len)) => fam.put(key(k), new Array[Byte](len)); model(k) = len
          case (k, None) => fam.delete(key(k)); model.remove(k)
        }
        Seq(0, 7, 999, 15000).foreach { from =>
          val want = model.iteratorFrom(from).toList
          assert(read(fam.scan(key(from), None, chunked = true)) == want)
          assert(read(fam.scan(key(from), None)) == want)
          assert(read(fam.scan(key(from), Some(key(from + 5000)), chunked = true)) ==
            want.takeWhile(_._1 < from + 5000))
        }
        v = s.commit()
      }
      p.close()
    }
  }
}
