package io.kstate.buffer

import scala.collection.mutable

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

class HeapTimeOrderedBufferSuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  private def b(s: String): Array[Byte] = s.getBytes("UTF-8")
  private def s(a: Array[Byte]): String = new String(a, "UTF-8")
  private val overhead = HeapTimeOrderedBuffer.RecordOverheadBytes

  private def drain(buf: HeapTimeOrderedBuffer, upTo: Long): Seq[(String, String, Long, Long)] = {
    val out = mutable.ArrayBuffer.empty[(String, String, Long, Long)]
    buf.evictWhile(buf.minBufferTime <= upTo)(r => out += ((s(r.key), s(r.value), r.bufferTime, r.recordTime)))
    out.toSeq
  }

  test("an update replaces the value but keeps the key's original buffer time") {
    val buf = new HeapTimeOrderedBuffer
    buf.put(b("k"), b("v1"), recordTime = 10, bufferTime = 10)
    buf.put(b("j"), b("w"), recordTime = 15, bufferTime = 15)
    buf.put(b("k"), b("v2"), recordTime = 20, bufferTime = 20)
    assert(buf.minBufferTime === 10L)
    // Evicting up to 12 emits k (buffered at 10) with its latest value and that value's time.
    assert(drain(buf, 12) === Seq(("k", "v2", 10L, 20L)))
    assert(drain(buf, 100) === Seq(("j", "w", 15L, 15L)))
    assert(buf.isEmpty && buf.minBufferTime === Long.MaxValue)
  }

  test("eviction is oldest first; ties by key bytes (unsigned), not by put order") {
    val buf = new HeapTimeOrderedBuffer
    buf.put(Array[Byte](-1), b("hi"), 5, 5) // 0xFF sorts after 0x01 unsigned
    buf.put(Array[Byte](1), b("lo"), 5, 5)
    buf.put(b("z"), b("old"), 1, 1)
    val order = mutable.ArrayBuffer.empty[String]
    buf.evictWhile(true)(r => order += s(r.value))
    assert(order === Seq("old", "lo", "hi"))
  }

  test("byte and record accounting is exact through puts, updates, removes and evictions") {
    val buf = new HeapTimeOrderedBuffer
    buf.put(b("ab"), b("xyz"), 1, 1)
    assert(buf.numRecords === 1 && buf.numBytes === 2 + 3 + overhead)
    buf.put(b("ab"), b("x"), 2, 2) // value shrinks by 2
    assert(buf.numRecords === 1 && buf.numBytes === 2 + 1 + overhead)
    buf.put(b("c"), b(""), 3, 3)
    assert(buf.numRecords === 2 && buf.numBytes === (2 + 1 + overhead) + (1 + 0 + overhead))
    assert(buf.remove(b("ab")).map(r => s(r.value)) === Some("x"))
    assert(buf.remove(b("ab")) === None)
    assert(buf.numRecords === 1 && buf.numBytes === 1 + overhead)
    buf.evictWhile(true)(_ => ())
    assert(buf.numRecords === 0 && buf.numBytes === 0)
  }

  test("evictWhile re-checks its condition before each record (emit early when full)") {
    val buf = new HeapTimeOrderedBuffer
    (1 to 5).foreach(i => buf.put(b(s"k$i"), b("v"), i, i))
    val perRecord = HeapTimeOrderedBuffer.recordBytes(2, 1)
    val evicted = mutable.ArrayBuffer.empty[Long]
    buf.evictWhile(buf.numBytes > 2 * perRecord)(r => evicted += r.bufferTime)
    assert(evicted === Seq(1L, 2L, 3L))
    assert(buf.numRecords === 2)
  }

  test("property: matches a naive model under random puts, removes and evictions") {
    val op = Gen.oneOf(
      for (k <- Gen.choose(0, 6); v <- Gen.alphaStr.map(_.take(5)); t <- Gen.choose(0L, 50L))
        yield ("put", k, v, t),
      Gen.choose(0, 6).map(k => ("remove", k, "", 0L)),
      Gen.choose(0L, 50L).map(t => ("evict", 0, "", t)))
    forAll(Gen.listOf(op)) { ops =>
      val buf = new HeapTimeOrderedBuffer
      // model: key -> (value, bufferTime, recordTime)
      val model = mutable.Map.empty[Int, (String, Long, Long)]
      ops.foreach {
        case ("put", k, v, t) =>
          val bt = model.get(k).map(_._2).getOrElse(t)
          model(k) = (v, bt, t)
          buf.put(Array(k.toByte), b(v), t, t)
        case ("remove", k, _, _) =>
          assert(buf.remove(Array(k.toByte)).map(r => s(r.value)) === model.remove(k).map(_._1))
        case (_, _, _, t) =>
          val expected = model.toSeq.filter(_._2._2 <= t).sortBy { case (k, (_, bt, _)) => (bt, k) }
          val got = mutable.ArrayBuffer.empty[(Int, String, Long, Long)]
          buf.evictWhile(buf.minBufferTime <= t)(r => got += ((r.key(0).toInt, s(r.value), r.bufferTime, r.recordTime)))
          assert(got === expected.map { case (k, (v, bt, rt)) => (k, v, bt, rt) })
          expected.foreach { case (k, _) => model.remove(k) }
      }
      assert(buf.numRecords === model.size)
      assert(buf.numBytes === model.values.map { case (v, _, _) => 1 + b(v).length + overhead }.sum)
    }
  }
}
