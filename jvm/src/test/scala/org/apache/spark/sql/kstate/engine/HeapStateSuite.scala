package org.apache.spark.sql.kstate.engine

import scala.collection.mutable

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

import org.apache.spark.sql.kstate.engine.UnsignedKeys._

class HeapStateSuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 300)

  /** Keys as unsigned byte strings; the model orders them as lists of ints 0..255. */
  private def model(m: mutable.Map[List[Int], Array[Byte]]): List[(List[Int], List[Byte])] =
    m.toList.sortWith((a, b) => less(a._1, b._1)).map { case (k, v) => k -> v.toList }

  private def hk(k: List[Int]): HashedKey = new HashedKey(bytes(k))

  private sealed trait Op
  private case class Put(k: List[Int], v: Array[Byte]) extends Op
  private case class Del(k: List[Int]) extends Op
  private case class DelRange(from: List[Int], until: Option[List[Int]]) extends Op

  /**
   * One version's changes (None: delete): applied sorted through applySorted, or shuffled
   * through applyUnsorted (which drops the sorted index).
   */
  private case class Version(changes: Map[List[Int], Option[Array[Byte]]], sorted: Boolean, seed: Long)
      extends Op

  /** The entries under a prefix, in any order, without those of a few skipped keys. */
  private case class WithPrefix(prefix: List[Int], skip: Set[List[Int]]) extends Op

  // Few distinct byte values (with 0x00, 0x7F, 0x80 and 0xFF) so keys collide and sign matters.
  private val keyGen: Gen[List[Int]] =
    Gen.choose(0, 3).flatMap(n => Gen.listOfN(n, Gen.oneOf(0, 1, 0x7f, 0x80, 0xff)))
  private val opGen: Gen[Op] = Gen.frequency(
    5 -> (for (k <- keyGen; n <- Gen.choose(0, 40)) yield Put(k, Array.fill(n)(n.toByte))),
    2 -> keyGen.map(Del),
    1 -> (for (f <- keyGen; u <- Gen.option(keyGen)) yield DelRange(f, u)),
    3 -> (for {
      changes <-
        Gen.mapOf(for (k <- keyGen; v <- Gen.option(Gen.choose(0, 9).map(n => Array.fill(n)(7.toByte)))) yield k -> v)
      sorted <- Gen.oneOf(true, false)
      seed <- Gen.long
    } yield Version(changes, sorted, seed)),
    1 -> (for (p <- keyGen; skip <- Gen.listOf(keyGen)) yield WithPrefix(p.take(2), skip.toSet))
  )

  /** Bytes of the model's entries as records in the arena. */
  private def liveBytes(m: mutable.Map[List[Int], Array[Byte]]): Long =
    m.map { case (k, v) => EntryArena.recordBytes(k.length, v.length) }.sum

  /**
   * The heap accounting: live record bytes match the model, the heap held covers them, and
   * garbage never outgrows the live bytes by more than the compaction threshold.
   */
  private def checkHeap(h: HeapState, m: mutable.Map[List[Int], Array[Byte]]): Unit = {
    assert(h.liveBytes == liveBytes(m))
    assert(h.heapBytes >= h.arenaUsedBytes)
    assert(h.arenaUsedBytes - h.liveBytes <= h.garbageAllowed)
    assert(h.garbageAllowed == Seq(h.liveBytes / 4, HeapState.GarbagePerEntry * h.size, h.minGarbageBytes).max)
  }

  private def scanAll(h: HeapState, from: List[Int], until: Option[List[Int]]): List[(List[Int], List[Byte])] = {
    val s = h.scan(bytes(from), until.map(bytes))
    val out = mutable.ListBuffer.empty[(List[Int], List[Byte])]
    try while (s.valid) { out += ints(s.key) -> s.value.toList; s.next() }
    finally s.close()
    out.toList
  }

  test("property: gets, scans, counts and heap estimate agree with a sorted model") {
    // a tiny compaction threshold in most cases, so that compactions run often, mid-sequence
    // first, in half the cases, a restore's load: distinct keys in key order, in runs, into the
    // empty state (the hash index is then built when first needed, whatever the next op is)
    val loadGen = Gen.oneOf(Gen.const(Nil), Gen.listOf(keyGen).map(_.distinct.sortWith(less)))
    forAll(
      Gen.listOf(opGen),
      keyGen,
      Gen.option(keyGen),
      Gen.oneOf(0L, 16L, 200L, HeapState.MinGarbageBytes),
      loadGen
    ) {
      (ops, from, until, threshold, load) =>
        val h = new HeapState(threshold)
        val m = mutable.Map.empty[List[Int], Array[Byte]]
        load.grouped(3).foreach { run =>
          val changes = run.map(k => new WriteSet.Entry(hk(k), Array.fill(k.length)(5.toByte), WriteSet.Unknown))
          assert(h.applySorted(changes.toArray) == run.size)
          run.foreach(k => m(k) = Array.fill(k.length)(5.toByte))
        }
        assert(h.hashIndexDeferred == load.nonEmpty)
        assert(h.size == m.size)
        checkHeap(h, m)
        var frozen: Option[(StateScan, List[(List[Int], List[Byte])])] = None
        val unordered = mutable.ListBuffer.empty[(Iterator[(Array[Byte], Array[Byte])], List[(List[Int], List[Byte])])]
        ops.zipWithIndex.foreach { case (op, i) =>
          // Now and then a scan opened here must still show this state at the end.
          if (frozen.isEmpty && i % 3 == 2) frozen = Some(h.scan(Array.emptyByteArray, None) -> model(m))
          op match {
            case Put(k, v) => h.put(bytes(k), v.clone()); m(k) = v
            case Del(k) => h.delete(bytes(k)); m.remove(k)
            case DelRange(f, u) =>
              val gone = m.keys.filter(inRange(_, f, u)).toList
              assert(h.deleteRange(bytes(f), u.map(bytes)) == gone.size)
              gone.foreach(m.remove)
            case Version(changes, sorted, seed) =>
              val sizeBefore = m.size
              val delta =
                if (sorted) h.applySorted(entries(changes))
                else h.applyUnsorted(new scala.util.Random(seed).shuffle(entries(changes).toList).toArray)
              changes.foreach { case (k, v) => v.fold(m.remove(k))(x => m.put(k, x)) }
              assert(delta == m.size - sizeBefore)
              if (!sorted) assert(!h.keepsIndex)
            case WithPrefix(p, skip) =>
              // read at the end, after later changes: it must still show this version
              val want = model(m).filter { case (k, _) => k.startsWith(p) && !skip.contains(k) }
              unordered += h.entriesWithPrefix(bytes(p), k => skip.contains(ints(k.bytes))) -> want
          }
        }
        unordered.foreach { case (it, want) =>
          val got = it.map { case (k, v) =>
            val out = ints(k) -> v.toList; java.util.Arrays.fill(v, 9.toByte); out
          }.toList
          assert(got.sortWith((a, b) => less(a._1, b._1)) == want) // and the arrays were copies: see below
        }
        frozen.foreach { case (s, expected) =>
          val out = mutable.ListBuffer.empty[(List[Int], List[Byte])]
          while (s.valid) { out += ints(s.key) -> s.value.toList; s.next() }
          assert(out.toList == expected)
        }
        assert(h.size == m.size)
        checkHeap(h, m)
        m.foreach { case (k, v) => assert(h.get(hk(k)).toList == v.toList && h.contains(hk(k))) }
        assert(scanAll(h, Nil, None) == model(m))
        val ranged = model(m).filter { case (k, _) => inRange(k, from, until) }
        assert(scanAll(h, from, until) == ranged)
        assert(h.count(bytes(from), until.map(bytes)) == ranged.size)
        // after the ordered reads above, the index is valid: foreach walks it in key order
        val all = mutable.ListBuffer.empty[List[Int]]
        h.foreach((k, _) => all += ints(k))
        assert(all.toList == model(m).map(_._1))
    }
  }

  test("the sorted index is kept only while ordered reads use it") {
    val h = new HeapState
    def change(k: Int, v: Option[Int]): WriteSet.Entry =
      new WriteSet.Entry(
        new HashedKey(Array(k.toByte)),
        v.map(x => Array(x.toByte)).getOrElse(WriteSet.Deleted),
        WriteSet.Unknown
      )
    assert(h.applySorted(Array(change(1, Some(10)), change(2, Some(20)))) == 2)
    assert(!h.keepsIndex) // nothing read it in order yet
    assert(scanAll(h, Nil, None).map(_._1) == List(List(1), List(2)))
    assert(h.keepsIndex) // a scan used it since the last version
    assert(h.applySorted(Array(change(3, Some(30)))) == 1)
    assert(!h.keepsIndex)
    // unsorted changes update the map and drop the index; foreach then walks the map
    assert(h.applyUnsorted(Array(change(5, Some(50)), change(1, None), change(4, Some(40)))) == 1)
    assert(!h.keepsIndex)
    val unordered = mutable.ListBuffer.empty[Int]
    h.foreach((k, _) => unordered += k(0))
    assert(unordered.sorted.toList == List(2, 3, 4, 5))
    assert(h.get(hk(List(1))) == null && h.get(hk(List(4))).toList == List[Byte](40))
    // the next ordered read rebuilds the index with one sort
    assert(h.count(Array.emptyByteArray, None) == 4)
    assert(h.keepsIndex)
    assert(scanAll(h, List(3), None).map(_._1) == List(List(3), List(4), List(5)))
    checkHeap(h, mutable.Map(List(2, 3, 4, 5).map(k => List(k) -> Array((k * 10).toByte)): _*))
  }

  test("a scan is frozen when opened, and hands out copies") {
    val h = new HeapState
    h.put(Array[Byte](1), Array[Byte](10))
    h.put(Array[Byte](2), Array[Byte](20))
    val s = h.scan(Array.emptyByteArray, None)
    h.put(Array[Byte](3), Array[Byte](30))
    h.delete(Array[Byte](1))
    val seen = mutable.ListBuffer.empty[Int]
    while (s.valid) { val v = s.value; seen += v(0); v(0) = 0; s.next() }
    assert(seen.toList == List(10, 20))
    val g = h.get(new HashedKey(Array[Byte](2))); g(0) = 0
    assert(h.get(new HashedKey(Array[Byte](2))).toList == List[Byte](20))
  }

  test("runs of increasing keys are appended to the index; scans opened before stay frozen") {
    val h = new HeapState
    def run(ks: Seq[Int]): Array[WriteSet.Entry] =
      ks.map(k => new WriteSet.Entry(new HashedKey(bytes(List(k))), Array(k.toByte), WriteSet.Unknown)).toArray
    assert(h.applySorted(run(Seq(1, 2, 3))) == 3)
    val before = h.scan(Array.emptyByteArray, None)
    assert(h.applySorted(run(Seq(5, 7)), 0, 1) == 1) // only the first entry of the array
    assert(h.applySorted(run(Seq(9, 10, 11))) == 3) // appended again
    assert(h.applySorted(run(Seq(4, 6))) == 2) // merged
    val seen = mutable.ListBuffer.empty[Int]
    while (before.valid) { seen += before.key(0); before.next() }
    assert(seen.toList == List(1, 2, 3))
    assert(scanAll(h, Nil, None).map(_._1) == List(1, 2, 3, 4, 5, 6, 9, 10, 11).map(List(_)))
    assert(h.count(bytes(List(4)), Some(bytes(List(10)))) == 4)
    assert(h.deleteRange(bytes(List(2)), Some(bytes(List(5)))) == 3)
    assert(scanAll(h, Nil, None).map(_._1) == List(1, 5, 6, 9, 10, 11).map(List(_)))
    checkHeap(h, mutable.Map(List(1, 5, 6, 9, 10, 11).map(k => List(k) -> Array(k.toByte)): _*))
  }

  test("keys appended in order to an empty state get their hash index at first use, sized as counted") {
    val h = new HeapState
    def run(ks: Range): Array[WriteSet.Entry] =
      ks.map(k => new WriteSet.Entry(new HashedKey(bytes(List(k >> 8, k & 0xff))), Array(k.toByte), WriteSet.Unknown))
        .toArray
    assert(h.applySorted(run(0 until 1500)) == 1500)
    assert(h.applySorted(run(1500 until 3000)) == 1500)
    assert(h.hashIndexDeferred && h.size == 3000)
    val counted = h.heapBytes
    // a scan needs only the sorted index
    assert(scanAll(h, Nil, None).size == 3000 && h.hashIndexDeferred)
    assert(h.get(new HashedKey(bytes(List(2999 >> 8, 2999 & 0xff)))).toList == List(2999.toByte))
    assert(!h.hashIndexDeferred)
    // counted before: the table now built, plus the hashes that waited for it
    assert(counted == h.heapBytes + 16L + 4L * 3000)
    (0 until 3000).foreach(k => assert(h.contains(new HashedKey(bytes(List(k >> 8, k & 0xff))))))
    // an append into a state that is not empty goes to the hash index at once
    assert(h.applySorted(run(3000 until 3010)) == 10)
    assert(!h.hashIndexDeferred && h.size == 3010)
  }

  test("bytesFor, the estimate from a table's entry count and raw bytes, is at most what the heap state holds") {
    for (n <- Seq(1, 100, 1000, 9830, 9831, 50000); width <- Seq(1, 24)) {
      val h = new HeapState
      val entries = (0 until n).map { i =>
        val key = java.nio.ByteBuffer.allocate(4 + width).putInt(i).array()
        new WriteSet.Entry(new HashedKey(key), new Array[Byte](width), WriteSet.Unknown)
      }.toArray
      h.applySorted(entries)
      h.buildHashIndex()
      val raw = entries.map(e => e.key.length + e.value.length).sum.toLong
      val estimate = HeapState.bytesFor(n, raw)
      assert(estimate <= h.heapBytes, s"$n entries of width $width: $estimate > ${h.heapBytes}")
      // and not far below: the arena's free room and the index's slack only
      assert(h.heapBytes <= 2 * estimate + (1L << 16), s"$n entries of width $width: ${h.heapBytes} against $estimate")
    }
  }

  test("large records rewritten often compact at a quarter of the live bytes in garbage") {
    val h = new HeapState(minGarbageBytes = 0)
    def version(ks: Seq[Int], v: Int): Array[WriteSet.Entry] =
      ks.map(k =>
        new WriteSet.Entry(new HashedKey(bytes(List(k))), Array.fill(391)(v.toByte), WriteSet.Unknown)
      ).toArray
    h.applyUnsorted(version(1 to 100, 1)) // 100 records of 400 bytes: 40,000 live, 10,000 allowed
    assert(h.liveBytes == 40000 && h.garbageAllowed == 10000)
    h.applyUnsorted(version(1 to 25, 2)) // 10,000 of garbage: not yet
    assert(h.arenaUsedBytes == 50000)
    h.applyUnsorted(version(26 to 26, 2)) // 10,400: compacted
    assert(h.arenaUsedBytes == h.liveBytes && h.heapBytes <= 1.25 * h.liveBytes + (1L << 16))
    (1 to 100).foreach(k => assert(h.get(hk(List(k)))(0) == (if (k <= 26) 2 else 1)))
  }

  test("compaction copies only live records; scans opened before it still read their version") {
    val h = new HeapState(minGarbageBytes = 0)
    def version(ks: Seq[Int], v: Int): Array[WriteSet.Entry] =
      ks.map(k => new WriteSet.Entry(new HashedKey(bytes(List(k))), Array.fill(10)(v.toByte), WriteSet.Unknown)).toArray
    h.applySorted(version(1 to 20, 1))
    assert(scanAll(h, Nil, None).size == 20) // keeps the sorted index from now on
    val before = h.scan(Array.emptyByteArray, None)
    val usedBefore = h.arenaUsedBytes
    // small records (19 bytes): a compaction waits for 48 bytes of garbage per live entry, 960
    h.applySorted(version(1 to 20, 2)) // every record replaced: garbage 380, no compaction yet
    assert(h.arenaUsedBytes == 2 * usedBefore && usedBefore == 380)
    h.applySorted(version(1 to 20, 2)) // 760
    assert(h.arenaUsedBytes == 3 * usedBefore)
    h.applySorted(version(1 to 11, 3)) // 969 > 960: compacted, in key order
    assert(h.arenaUsedBytes == h.liveBytes && h.liveBytes == usedBefore)
    assert(scanAll(h, Nil, None) == (1 to 20).toList.map(k => List(k) -> List.fill(10)((if (k <= 11) 3 else 2).toByte)))
    (1 to 20).foreach(k => assert(h.get(hk(List(k)))(0) == (if (k <= 11) 3 else 2)))
    val seen = mutable.ListBuffer.empty[(Int, Byte)]
    while (before.valid) { seen += before.key(0).toInt -> before.value(0); before.next() }
    assert(seen.toList == (1 to 20).toList.map(_ -> 1.toByte))
    // without the sorted index, the hash index's addresses are moved in place
    h.applyUnsorted(version(20 to 1 by -1, 4))
    h.applyUnsorted(version(1 to 20, 5))
    assert(h.arenaUsedBytes == 3 * h.liveBytes)
    h.applyUnsorted(version(1 to 20, 6)) // 1140 > 960: compacted
    assert(h.arenaUsedBytes == h.liveBytes)
    (1 to 20).foreach(k => assert(h.get(hk(List(k)))(0) == 6))
    h.delete(bytes(List(7)))
    assert(h.size == 19 && h.get(hk(List(7))) == null)
  }

  test("the budget admits reservations up to the limit and takes releases back") {
    val base = HeapStateBudget.reserved
    assert(HeapStateBudget.tryReserve(100, base + 150))
    assert(!HeapStateBudget.tryReserve(51, base + 150))
    assert(HeapStateBudget.tryReserve(50, base + 150))
    assert(!HeapStateBudget.tryReserve(1, 0))
    HeapStateBudget.release(150)
    assert(HeapStateBudget.reserved == base)
  }
}
