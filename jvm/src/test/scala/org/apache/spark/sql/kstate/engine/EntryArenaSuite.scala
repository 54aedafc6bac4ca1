package org.apache.spark.sql.kstate.engine

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

class EntryArenaSuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  private val entryGen: Gen[(Array[Byte], Array[Byte])] = for {
    kn <- Gen.frequency(5 -> Gen.choose(0, 40), 1 -> Gen.choose(0, 3 * EntryArena.PageBytes / 2))
    vn <- Gen.frequency(5 -> Gen.choose(0, 100), 1 -> Gen.choose(0, EntryArena.PageBytes))
    kb <- Gen.choose(-128, 127)
  } yield (Array.tabulate(kn)(i => (kb + i).toByte), Array.fill(vn)(kb.toByte))

  test("property: records read back as written, from the live and from a captured page table") {
    forAll(Gen.listOfN(12, entryGen), Gen.choose(0, 11)) { (entries, captureAt) =>
      val arena = new EntryArena
      var captured: Array[Array[Byte]] = null
      val addrs = entries.zipWithIndex.map { case ((k, v), i) =>
        val a = arena.append(k, v)
        if (i == captureAt) captured = arena.pages
        a
      }
      entries.zip(addrs).zipWithIndex.foreach { case (((k, v), a), i) =>
        val tables = if (i <= captureAt) Seq(arena.pages, captured) else Seq(arena.pages)
        tables.foreach { p =>
          assert(EntryArena.key(p, a).sameElements(k) && EntryArena.value(p, a).sameElements(v))
          assert(EntryArena.keyLength(p, a) == k.length && EntryArena.valueLength(p, a) == v.length)
          assert(EntryArena.keyEquals(p, a, k) && !EntryArena.keyEquals(p, a, k :+ 0.toByte))
          assert(EntryArena.compareKey(p, a, k) == 0 && EntryArena.compareKey(p, a, k :+ 0.toByte) < 0)
          assert(EntryArena.startsWith(p, a, k.take(3)))
          assert(EntryArena.keyHash(p, a) == HashedKey.hashOf(k))
          assert(EntryArena.recordBytes(p, a) == EntryArena.HeaderBytes + k.length + v.length)
        }
      }
      assert(arena.usedBytes == entries.map { case (k, v) => EntryArena.recordBytes(k.length, v.length) }.sum)
      assert(arena.allocatedBytes >= arena.usedBytes)
      val copy = new EntryArena(arena.usedBytes)
      addrs.zip(entries).foreach { case (a, (k, v)) =>
        val b = copy.copyOf(arena.pages, a)
        assert(EntryArena.key(copy.pages, b).sameElements(k) && EntryArena.value(copy.pages, b).sameElements(v))
      }
    }
  }

  test("pages grow from a few kilobytes to the page size, so a small state stays small") {
    val arena = new EntryArena
    arena.append(Array[Byte](1), Array[Byte](2))
    assert(arena.allocatedBytes < 8 * 1024)
    (0 until 100000).foreach(i => arena.append(Array(i.toByte, (i >> 8).toByte), new Array[Byte](30)))
    assert(arena.pages.forall(_.length <= EntryArena.PageBytes))
    assert(arena.pages.count(_.length == EntryArena.PageBytes) >= 2)
    assert(arena.allocatedBytes < 2 * arena.usedBytes + 2L * EntryArena.PageBytes)
  }
}
