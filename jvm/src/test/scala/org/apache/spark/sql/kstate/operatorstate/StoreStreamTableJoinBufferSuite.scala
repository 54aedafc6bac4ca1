package org.apache.spark.sql.kstate.operatorstate

import org.apache.spark.sql.kstate.provider.ProviderFixture

import scala.collection.mutable.ArrayBuffer

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.kstate.execution.KStateStreamTableJoinExec
import org.apache.spark.sql.kstate.processor.StreamTime
import org.apache.spark.sql.kstate.processor.join.{InMemoryStreamTableJoinBuffer, StreamTableJoinBuffer}
import org.apache.spark.sql.types.{BinaryType, LongType, StringType, StructField, StructType}
import org.apache.spark.unsafe.types.UTF8String

/**
 * [[StoreStreamTableJoinBuffer]]: the same evictions, in the same order, as the heap buffer with
 * the same key order (unsigned key bytes) over random puts and eviction bounds spread over store
 * versions (commit, reopen), with its heap mirror never used, outgrown midway, or always used; stream time, arrival order and size persist; its record keys order
 * by (timestamp, key bytes, arrival) for keys of any length and content.
 */
class StoreStreamTableJoinBufferSuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  private val keySchema = StructType(Seq(StructField("k", BinaryType)))
  private val valueSchema = StructType(Seq(StructField("v", StringType), StructField("n", LongType)))
  private val keyProj = UnsafeProjection.create(keySchema)
  private val valueProj = UnsafeProjection.create(valueSchema)

  private def key(bytes: Array[Byte]): UnsafeRow = keyProj(InternalRow(bytes)).copy()
  private def value(s: String, n: Long): UnsafeRow = valueProj(InternalRow(UTF8String.fromString(s), n)).copy()

  private sealed trait Op
  private final case class Put(k: Array[Byte], v: String, ts: Long) extends Op
  private final case class Evict(upTo: Long) extends Op
  private case object Commit extends Op

  private val bytes: Gen[Array[Byte]] = Gen.listOf(Gen.oneOf(Seq[Byte](0, 1, -1, 0x7f))).map(_.take(4).toArray)
  private val op: Gen[Op] = Gen.frequency(
    6 -> (for { k <- bytes; v <- Gen.alphaStr.map(_.take(3)); ts <- Gen.choose(-5L, 15L) } yield Put(k, v, ts)),
    2 -> Gen.frequency(5 -> Gen.choose(-6L, 16L), 1 -> Gen.const(Long.MaxValue)).map(Evict(_)),
    1 -> Gen.const(Commit)
  )

  private def drain(
      b: StreamTableJoinBuffer[UnsafeRow, UnsafeRow],
      upTo: Long
  ): Seq[(Seq[Byte], String, Long, Long)] = {
    val out = ArrayBuffer.empty[(Seq[Byte], String, Long, Long)]
    b.evictUpTo(upTo)((k: UnsafeRow, v: UnsafeRow, ts: Long) =>
      out += ((k.getBinary(0).toSeq, v.getUTF8String(0).toString, v.getLong(1), ts))
    )
    out.toSeq
  }

  test("random puts, evictions and commits: the heap buffer's evictions, in its order; state persists") {
    // the heap mirror: never (0 records), outgrown on the way (3 records, or 100 bytes: about
    // three records of these rows), always (the defaults)
    val limits = Gen.oneOf(
      (0, StoreStreamTableJoinBuffer.HeapMirrorBytes),
      (3, StoreStreamTableJoinBuffer.HeapMirrorBytes),
      (StoreStreamTableJoinBuffer.HeapMirrorMax, 100L),
      (StoreStreamTableJoinBuffer.HeapMirrorMax, StoreStreamTableJoinBuffer.HeapMirrorBytes)
    )
    forAll(Gen.listOf(op), limits) { case (ops, (mirrorMax, mirrorBytes)) =>
      val provider = ProviderFixture.open(ProviderFixture.tmp(), keySchema, valueSchema)
      try {
        var version = 0L
        var store = provider.getStore(version)
        var stored = new StoreStreamTableJoinBuffer(store, "b", 1, 2, mirrorMax, mirrorBytes)
        val heap = new InMemoryStreamTableJoinBuffer[UnsafeRow, UnsafeRow]()(KStateStreamTableJoinExec.ByBytes)
        var n = 0L
        ops.foreach {
          case Put(k, v, ts) =>
            n += 1
            stored.put(key(k), value(v, n), ts); heap.put(key(k), value(v, n), ts)
            stored.streamTime = math.max(stored.streamTime, ts); heap.streamTime = math.max(heap.streamTime, ts)
          case Evict(t) => assert(drain(stored, t) === drain(heap, t), s"evict up to $t in $ops")
          case Commit =>
            version = store.commit()
            store = provider.getStore(version)
            stored = new StoreStreamTableJoinBuffer(store, "b", 1, 2, mirrorMax, mirrorBytes)
        }
        assert(stored.numRecords === heap.numRecords)
        assert(stored.streamTime === heap.streamTime)
        assert(drain(stored, Long.MaxValue) === drain(heap, Long.MaxValue), "what is left, across the last commit")
      } finally provider.close()
    }
  }

  test("records that arrive and leave in one store version never reach the store; the rest are written at its commit") {
    val provider = ProviderFixture.open(ProviderFixture.tmp(), keySchema, valueSchema)
    def inStore(store: org.apache.spark.sql.kstate.provider.KStateStore): Int = {
      val it = store.bytes("kstate_stj_b_buffer").scan(Array.emptyByteArray, None)
      try it.size
      finally it.close()
    }
    try {
      val s0 = provider.getStore(0)
      val b0 = new StoreStreamTableJoinBuffer(s0, "b", 1, 2)
      (1 to 5).foreach(i => b0.put(key(Array(i.toByte)), value(s"v$i", i), i))
      assert(drain(b0, 3).map(_._4) == Seq(1L, 2L, 3L))
      assert(inStore(s0) == 0) // held on the heap only
      val v1 = s0.commit()
      val s1 = provider.getStore(v1)
      assert(inStore(s1) == 2) // 4 and 5, written at the commit
      val b1 = new StoreStreamTableJoinBuffer(s1, "b", 1, 2)
      b1.put(key(Array(6.toByte)), value("v6", 6), 6)
      assert(drain(b1, 4).map(_._4) == Seq(4L) && inStore(s1) == 1) // a committed record: deleted
      val v2 = s1.commit()
      val b2 = new StoreStreamTableJoinBuffer(provider.getStore(v2), "b", 1, 2)
      assert(b2.numRecords == 2 && drain(b2, Long.MaxValue).map(r => (r._2, r._4)) == Seq(("v5", 5L), ("v6", 6L)))
      // past the heap limit the store holds every record, those of this version included
      val s3 = provider.getStore(v2)
      val b3 = new StoreStreamTableJoinBuffer(s3, "b", 1, 2, heapMirrorMax = 4)
      (7 to 8).foreach(i => b3.put(key(Array(i.toByte)), value(s"v$i", i), i))
      assert(inStore(s3) == 2) // 5 and 6 (committed); 7 and 8 held on the heap
      b3.put(key(Array(9.toByte)), value("v9", 9), 9) // a fifth record: the heap mirror is dropped
      assert(inStore(s3) == 5)
      assert(drain(b3, 7).map(_._4) == Seq(5L, 6L, 7L) && inStore(s3) == 2)
      // past the heap's byte limit too: 8 and 9 held (committed above), 10 and 11 put here
      val v4 = s3.commit()
      val s4 = provider.getStore(v4)
      val rowBytes =
        StoreStreamTableJoinBuffer.recordBytes(key(Array(8.toByte)).getSizeInBytes, value("v8", 8).getSizeInBytes)
      val b4 = new StoreStreamTableJoinBuffer(s4, "b", 1, 2, heapMirrorBytes = 3 * rowBytes)
      b4.put(key(Array(10.toByte)), value("v10", 10), 10)
      assert(inStore(s4) == 2) // 8 and 9; 10 held on the heap (three records' bytes at most)
      b4.put(key(Array(11.toByte)), value("v11", 11), 11) // a fourth record: the heap is dropped
      assert(inStore(s4) == 4)
      assert(drain(b4, Long.MaxValue).map(_._4) == Seq(8L, 9L, 10L, 11L) && inStore(s4) == 0)
    } finally provider.close()
  }

  test("a fresh buffer: unknown stream time, empty") {
    val provider = ProviderFixture.open(ProviderFixture.tmp(), keySchema, valueSchema)
    try {
      val b = new StoreStreamTableJoinBuffer(provider.getStore(0), "b", 1, 2)
      assert(b.streamTime === StreamTime.Unknown && b.numRecords === 0L && drain(b, Long.MaxValue).isEmpty)
    } finally provider.close()
  }

  test("record keys order by (timestamp, key bytes unsigned, arrival) whatever the keys' lengths and zero bytes") {
    val arrival = Gen.choose(0L, 3L)
    val ts = Gen.oneOf(Long.MinValue + 1, -1L, 0L, 1L, Long.MaxValue)
    forAll(ts, bytes, arrival, ts, bytes, arrival) { (t1, k1, a1, t2, k2, a2) =>
      val byKeys = java.util.Arrays.compareUnsigned(k1, k2)
      val expected = if (t1 != t2) t1.compare(t2) else if (byKeys != 0) byKeys else a1.compare(a2)
      val got = java.util.Arrays.compareUnsigned(
        StoreStreamTableJoinBuffer.recordKey(t1, k1, a1),
        StoreStreamTableJoinBuffer.recordKey(t2, k2, a2)
      )
      assert(got.sign === expected.sign, s"($t1, ${k1.toSeq}, $a1) vs ($t2, ${k2.toSeq}, $a2)")
    }
  }
}
