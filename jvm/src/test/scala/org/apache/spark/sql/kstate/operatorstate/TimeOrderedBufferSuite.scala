package org.apache.spark.sql.kstate.operatorstate

import scala.collection.mutable

import io.kstate.KStateException
import io.kstate.suppress.WhenFull
import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

import org.apache.spark.sql.kstate.processor.suppress.BufferLimits
import org.apache.spark.sql.kstate.provider.{KStateStore, KStateStoreProvider, ProviderFixture}
import org.apache.spark.sql.types.{LongType, StructField, StructType}

class TimeOrderedBufferSuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  private def b(s: String): Array[Byte] = s.getBytes("UTF-8")
  private def s(a: Array[Byte]): String = new String(a, "UTF-8")
  private val overhead = TimeOrderedBuffer.RecordOverheadBytes
  private val schema = StructType(Seq(StructField("x", LongType)))

  private def provider(root: String = ProviderFixture.tmp()): KStateStoreProvider =
    ProviderFixture.open(root, schema, schema)

  /** A buffer on a fresh store at version 0. */
  private def fresh(limits: BufferLimits = BufferLimits()): (KStateStore, TimeOrderedBuffer) = {
    val store = provider().getStore(0)
    (store, new TimeOrderedBuffer(store, "b", limits))
  }

  private def drain(buf: TimeOrderedBuffer, upTo: Long): Seq[(String, String, Long, Long)] = {
    val out = mutable.ArrayBuffer.empty[(String, String, Long, Long)]
    buf.evictUpTo(upTo)(r => out += ((s(r.key), s(r.value), r.bufferTime, r.recordTime)))
    out.toSeq
  }

  test("an update replaces the value but keeps the key's original buffer time") {
    val (_, buf) = fresh()
    buf.put(b("k"), b("v1"), recordTime = 10, bufferTime = 10)
    buf.put(b("j"), b("w"), recordTime = 15, bufferTime = 15)
    buf.put(b("k"), b("v2"), recordTime = 20, bufferTime = 20)
    assert(buf.minBufferTime === 10L)
    assert(buf.get(b("k")).map(r => (s(r.value), r.bufferTime, r.recordTime)) === Some(("v2", 10L, 20L)))
    // Evicting up to 12 emits k (buffered at 10) with its latest value and that value's time.
    assert(drain(buf, 12) === Seq(("k", "v2", 10L, 20L)))
    assert(drain(buf, 100) === Seq(("j", "w", 15L, 15L)))
    assert(buf.isEmpty && buf.minBufferTime === Long.MaxValue)
  }

  test("eviction is oldest first; ties by key bytes (unsigned), not by put order") {
    val (_, buf) = fresh()
    buf.put(Array[Byte](-1), b("hi"), 5, 5) // 0xFF sorts after 0x01 unsigned
    buf.put(Array[Byte](1), b("lo"), 5, 5)
    buf.put(b("z"), b("old"), 1, 1)
    buf.put(b("neg"), b("oldest"), -7, -7) // negative times sort before positive ones
    val order = mutable.ArrayBuffer.empty[String]
    buf.evictWhile(true)(r => order += s(r.value))
    assert(order === Seq("oldest", "old", "lo", "hi"))
  }

  test("byte and record accounting is exact through puts, updates, removes and evictions") {
    val (_, buf) = fresh()
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

  test("contents and counters are checkpointed with the store and restored after a restart") {
    val root = ProviderFixture.tmp()
    val p = provider(root)
    val s0 = p.getStore(0)
    val buf0 = new TimeOrderedBuffer(s0, "b", BufferLimits())
    buf0.put(b("a"), b("1"), 5, 5)
    buf0.put(b("b"), b("22"), 3, 3)
    s0.commit()
    p.close()
    val q = provider(root)
    val buf1 = new TimeOrderedBuffer(q.getStore(1), "b", BufferLimits())
    assert(buf1.numRecords === 2 && buf1.numBytes === 1 + 1 + 1 + 2 + 2 * overhead)
    assert(buf1.minBufferTime === 3L)
    assert(drain(buf1, 10) === Seq(("b", "22", 3L, 3L), ("a", "1", 5L, 5L)))
  }

  test("evictWhile re-checks its condition before each record (emit early when full)") {
    val (_, buf) = fresh()
    (1 to 5).foreach(i => buf.put(b(s"k$i"), b("v"), i, i))
    val perRecord = TimeOrderedBuffer.recordBytes(2, 1)
    val evicted = mutable.ArrayBuffer.empty[Long]
    buf.evictWhile(buf.numBytes > 2 * perRecord)(r => evicted += r.bufferTime)
    assert(evicted === Seq(1L, 2L, 3L))
    assert(buf.numRecords === 2)
  }

  test("emit early when full: the oldest records leave until the buffer is within its limits") {
    val (_, buf) = fresh(BufferLimits(maxRecords = 3, whenFull = WhenFull.EmitEarly))
    val early = mutable.ArrayBuffer.empty[String]
    Seq("e" -> 50L, "a" -> 10L, "c" -> 30L, "b" -> 20L, "d" -> 40L).foreach { case (k, t) =>
      buf.put(b(k), b(k), t, t)
      buf.enforceLimits(r => early += s(r.key))
    }
    assert(early === Seq("a", "b"))
    assert(buf.numRecords === 3)
    assert(!buf.limits.isStrict)
  }

  test("shut down when full fails with KSTATE_BUFFER_FULL; nothing is lost, a larger buffer redoes the batch") {
    val root = ProviderFixture.tmp()
    val p = provider(root)
    val limits = BufferLimits(maxBytes = 3 * TimeOrderedBuffer.recordBytes(2, 2), whenFull = WhenFull.ShutDown)
    val s0 = p.getStore(0)
    val buf0 = new TimeOrderedBuffer(s0, "b", limits)
    (1 to 3).foreach { i => buf0.put(b(s"k$i"), b("vv"), i, i); buf0.enforceLimits(_ => fail("emitted")) }
    s0.commit()
    val s1 = p.getStore(1)
    val buf1 = new TimeOrderedBuffer(s1, "b", limits)
    buf1.put(b("k9"), b("vv"), 9, 9)
    val e = intercept[KStateException](buf1.enforceLimits(_ => fail("emitted")))
    assert(e.errorClass === "KSTATE_BUFFER_FULL")
    assert(e.getMessage.contains("'b'") && e.getMessage.contains("4 records") &&
      e.getMessage.contains(s"max_bytes=${limits.maxBytes}"))
    s1.abort()
    // Restart with a larger buffer: version 1 is intact and the batch can be redone.
    val bigger = limits.copy(maxBytes = 10 * limits.maxBytes)
    val s1b = p.getStore(1)
    val buf1b = new TimeOrderedBuffer(s1b, "b", bigger)
    assert(buf1b.numRecords === 3 && buf1b.get(b("k9")).isEmpty)
    buf1b.put(b("k9"), b("vv"), 9, 9)
    buf1b.enforceLimits(_ => fail("emitted"))
    assert(s1b.commit() === 2)
    assert(drain(new TimeOrderedBuffer(p.getStore(2), "b", bigger), 100).map(_._1) ===
      Seq("k1", "k2", "k3", "k9"))
  }

  test("spill to disk when full keeps every record and spills the store's changes past the limit") {
    val limits = BufferLimits(maxBytes = 64L << 10, whenFull = WhenFull.SpillToDisk)
    val root = ProviderFixture.tmp()
    val p = provider(root)
    val store = p.getStore(0)
    val buf = new TimeOrderedBuffer(store, "b", limits)
    val n = 16000 // over 10x what 64 KB holds
    (0 until n).foreach { i =>
      buf.put(b(f"key$i%06d"), b(s"value-$i"), i, i)
      buf.enforceLimits(_ => fail("a strict buffer emitted early"))
    }
    assert(buf.numRecords === n)
    assert(buf.numBytes > 10 * limits.maxBytes)
    assert(store.changes.heapBytes <= limits.maxBytes)
    assert(store.counters.spills > 0)
    assert(buf.limits.isStrict)
    store.commit()
    p.close()
    val reopened = provider(root)
    val all = drain(new TimeOrderedBuffer(reopened.getStore(1), "b", limits), Long.MaxValue)
    assert(all.map(_._1) === (0 until n).map(i => f"key$i%06d"))
    assert(all.map(_._2) === (0 until n).map(i => s"value-$i"))
  }

  test("on the heap: records that leave in the version that buffered them never reach the changelog") {
    def run(mirrorMax: Int, from: Int = 0): (Long, Seq[(String, String, Long, Long)]) = {
      val p = provider()
      val store = p.getStore(0)
      val buf = new TimeOrderedBuffer(store, "b", BufferLimits(), mirrorMax)
      (from until 100).foreach(i => buf.put(b(f"k$i%03d"), b(s"v$i"), i.toLong, i.toLong))
      buf.put(b("k095"), b("updated"), 200L, 200L) // keeps its buffer time 95
      val evicted = drain(buf, 89L)
      assert(evicted.map(_._1) === (from until 90).map(i => f"k$i%03d"))
      val version = store.commit()
      val changelogRecords = store.counters.changelogRecords
      val rest = drain(new TimeOrderedBuffer(p.getStore(version), "b", BufferLimits(), mirrorMax), Long.MaxValue)
      p.close()
      (changelogRecords, rest)
    }
    val (onHeap, restOnHeap) = run(TimeOrderedBuffer.HeapMirrorMax)
    val (inStore, restInStore) = run(0)
    // the same 10 records put alone, in the store: what the version has to write for them
    val (alone, _) = run(0, from = 90)
    val expected =
      (90 until 100).map(i => if (i == 95) ("k095", "updated", 95L, 200L) else (f"k$i%03d", s"v$i", i.toLong, i.toLong))
    assert(restOnHeap === expected)
    assert(restInStore === expected)
    // the 10 records still buffered (time and key entries), the counters and the store's own
    // entries; nothing of the 90 that left (the store path wrote each of them too)
    assert(onHeap === alone)
    assert(inStore > alone + 90)
  }

  test("on the heap: a record of an earlier version is updated and deleted in the store as it changes") {
    val p = provider()
    val s0 = p.getStore(0)
    val b0 = new TimeOrderedBuffer(s0, "b", BufferLimits())
    (0 until 5).foreach(i => b0.put(b(s"k$i"), b(s"v$i"), i.toLong, i.toLong))
    val v1 = s0.commit()
    val s1 = p.getStore(v1)
    val b1 = new TimeOrderedBuffer(s1, "b", BufferLimits())
    b1.put(b("k3"), b("longer-value"), 30L, 30L)
    assert(drain(b1, 1L).map(_._1) === Seq("k0", "k1"))
    assert(b1.remove(b("k4")).map(r => s(r.value)) === Some("v4"))
    b1.put(b("k9"), b("v9"), 9L, 9L)
    assert(b1.numBytes === Seq("k2v2", "k3longer-value", "k9v9").map(_.length + overhead).sum)
    val v2 = s1.commit()
    val b2 = new TimeOrderedBuffer(p.getStore(v2), "b", BufferLimits(), heapMirrorMax = 0)
    assert(b2.numRecords === 3)
    assert(drain(
      b2,
      Long.MaxValue
    ) === Seq(("k2", "v2", 2L, 2L), ("k3", "longer-value", 3L, 30L), ("k9", "v9", 9L, 9L)))
    p.close()
  }

  test("property: matches a naive model across puts, removes, evictions, spills, commits, aborts and restarts") {
    val op: Gen[(String, Int, String, Long)] = Gen.frequency(
      6 -> (for (k <- Gen.choose(0, 30); v <- Gen.alphaStr.map(_.take(6)); t <- Gen.choose(-5L, 60L))
        yield ("put", k, v, t)),
      1 -> Gen.choose(0, 30).map(k => ("remove", k, "", 0L)),
      2 -> Gen.choose(-5L, 60L).map(t => ("evict", 0, "", t)),
      1 -> Gen.const(("commit", 0, "", 0L)),
      1 -> Gen.const(("abort", 0, "", 0L)),
      1 -> Gen.const(("restart", 0, "", 0L))
    )
    val heapLimits = Gen.oneOf(
      BufferLimits(),
      BufferLimits(maxBytes = 600, whenFull = WhenFull.SpillToDisk),
      BufferLimits(maxRecords = 2, whenFull = WhenFull.SpillToDisk)
    )
    // the heap mirror: dropped at the first new record (0), outgrown on the way (3), or kept
    val mirrorMax = Gen.oneOf(0, 3, TimeOrderedBuffer.HeapMirrorMax)
    var spills = 0L
    forAll(Gen.listOf(op), heapLimits, mirrorMax, minSuccessful(60)) { (ops, limits, mirrorMax) =>
      val root = ProviderFixture.tmp()
      var p = provider(root)
      var version = 0L
      type Model = Map[Int, (String, Long, Long)] // key -> (value, bufferTime, recordTime)
      var committed: Model = Map.empty
      var model: Model = Map.empty
      var store = p.getStore(version)
      var buf = new TimeOrderedBuffer(store, "b", limits, mirrorMax)
      def reopen(): Unit = {
        spills += store.counters.spills
        store = p.getStore(version)
        buf = new TimeOrderedBuffer(store, "b", limits, mirrorMax)
      }
      ops.foreach {
        case ("put", k, v, t) =>
          val bt = model.get(k).map(_._2).getOrElse(t)
          model += k -> ((v, bt, t))
          buf.put(Array(k.toByte), b(v), t, t)
        case ("remove", k, _, _) =>
          assert(buf.remove(Array(k.toByte)).map(r => s(r.value)) === model.get(k).map(_._1))
          model -= k
        case ("evict", _, _, t) =>
          val expected = model.toSeq.filter(_._2._2 <= t).sortBy { case (k, (_, bt, _)) => (bt, k) }
          val got = mutable.ArrayBuffer.empty[(Int, String, Long, Long)]
          buf.evictUpTo(t)(r => got += ((r.key(0).toInt, s(r.value), r.bufferTime, r.recordTime)))
          assert(got === expected.map { case (k, (v, bt, rt)) => (k, v, bt, rt) })
          model --= expected.map(_._1)
        case ("commit", _, _, _) =>
          version = store.commit(); committed = model; reopen()
        case ("abort", _, _, _) =>
          store.abort(); model = committed; reopen()
        case _ =>
          store.abort(); p.close(); p = provider(root); model = committed; reopen()
      }
      assert(buf.numRecords === model.size)
      assert(buf.numBytes === model.values.map { case (v, _, _) => 1 + b(v).length + overhead }.sum)
      assert(buf.minBufferTime === (if (model.isEmpty) Long.MaxValue else model.values.map(_._2).min))
      p.close()
    }
    assert(spills > 0, "the generated runs never spilled")
  }
}
