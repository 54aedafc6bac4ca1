package org.apache.spark.sql.kstate.operatorstate

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.kstate.config.KStateConf
import org.apache.spark.sql.kstate.provider.ProviderFixture
import org.apache.spark.sql.types.{LongType, StringType, StructField, StructType}
import org.apache.spark.unsafe.types.UTF8String

/**
 * [[StoreTableState]] on kstate's store: a value row `get` returned keeps its value when the key
 * is written again, deleted, or the version commits, on the heap and on the RocksDB working copy
 * (the join and the table source keep such rows as a change's old value); a key row reused for
 * another key reads and writes that key (the state encodes a key once for a get and a put).
 */
class StoreTableStateSuite extends AnyFunSuite {
  private val keySchema = StructType(Seq(StructField("k", StringType)))
  private val valueSchema = StructType(Seq(StructField("name", StringType), StructField("n", LongType)))
  // projections reuse their output rows, as operators' do
  private val keyProj = UnsafeProjection.create(keySchema)
  private val valueProj = UnsafeProjection.create(valueSchema)
  private def key(s: String): UnsafeRow = keyProj(InternalRow(UTF8String.fromString(s)))
  private def value(s: String, n: Long): UnsafeRow = valueProj(InternalRow(UTF8String.fromString(s), n))
  private def read(r: UnsafeRow): (String, Long) = (r.getUTF8String(0).toString, r.getLong(1))

  for (
    (copy, extra) <- Seq("heap" -> Map.empty[String, String], "RocksDB" -> Map(KStateConf.HeapStateBytes.key -> "0"))
  ) {
    test(s"a value read stays as read while the key is rewritten, deleted and committed ($copy)") {
      val p = ProviderFixture.open(ProviderFixture.tmp(), keySchema, keySchema, ProviderFixture.conf(extra = extra))
      val s0 = p.getStore(0)
      val t0 = new StoreTableState(s0, keySchema, valueFields = 2)
      t0.put(key("a"), value("first", 1L), 10L)
      val fromWrites = t0.get(key("a")) // this version's own write
      t0.put(key("a"), value("second-and-longer", 2L), 11L)
      assert(read(fromWrites.value) === ("first", 1L))
      assert(fromWrites.timestamp === 10L)
      assert(read(t0.get(key("a")).value) === ("second-and-longer", 2L))
      val v1 = s0.commit()

      val s1 = p.getStore(v1)
      val t1 = new StoreTableState(s1, keySchema, valueFields = 2)
      val committed = t1.get(key("a")) // the working copy's
      t1.put(key("a"), value("third", 3L), 12L)
      t1.put(key("a"), null, 13L)
      assert(read(committed.value) === ("second-and-longer", 2L))
      assert(committed.timestamp === 11L)
      assert(t1.get(key("a")) === null)
      t1.put(key("b"), value("b", 4L), 14L)
      val fromB = t1.get(key("b"))
      // one reused key row, read as a then written as b: each write goes to its own key
      assert(t1.get(key("a")) === null)
      t1.put(key("b"), value("b2", 5L), 15L)
      assert(t1.get(key("a")) === null && read(t1.get(key("b")).value) === ("b2", 5L))
      s1.commit()
      assert(read(fromB.value) === ("b", 4L))
      p.close()
    }
  }

  test("values of every size are stored as written, also a row exactly the size of the writer's buffer") {
    // the state writes (timestamp, value bytes) rows with one writer: 24 fixed bytes plus 64
    // bytes of buffer for the binary field, so a 64-byte value fills the buffer exactly, and
    // the row's bytes would be the writer's own array unless copied
    val p = ProviderFixture.open(ProviderFixture.tmp(), keySchema, keySchema)
    try {
      val s0 = p.getStore(0)
      val t0 = new StoreTableState(s0, keySchema, valueFields = 2)
      def padded(s: String, n: Long): UnsafeRow = value(s.padTo(40, '.'), n)
      assert(padded("a", 1L).getSizeInBytes === 64) // 8 null bits + 2 x 8 fixed + 40 bytes padded
      val written = (1 to 5).map(i => s"k$i" -> (s"v$i", i.toLong)).toMap
      written.foreach { case (k, (v, n)) => t0.put(key(k), padded(v, n), n) }
      written.foreach { case (k, (v, n)) => assert(read(t0.get(key(k)).value) === (v.padTo(40, '.'), n)) }
      // and after a rewrite of every value (a schema change's conversion), committed and read back
      val rewrite = (b: Array[Byte]) => {
        val r = new UnsafeRow(2); r.pointTo(b, b.length)
        padded(r.getUTF8String(0).toString.take(2).toUpperCase, r.getLong(1) * 10).getBytes.clone()
      }
      StoreTableState.mapValues(s0, StoreTableState.Cf, rewrite)
      val v1 = s0.commit()
      val t1 = new StoreTableState(p.getStore(v1), keySchema, valueFields = 2)
      written.foreach { case (k, (v, n)) =>
        assert(read(t1.get(key(k)).value) === (v.toUpperCase.padTo(40, '.'), n * 10))
      }
    } finally p.close()
  }
}
