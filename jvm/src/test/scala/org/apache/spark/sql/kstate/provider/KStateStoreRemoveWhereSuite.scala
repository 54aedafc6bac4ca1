package org.apache.spark.sql.kstate.provider

import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.kstate.config.KStateConf
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

/**
 * `KStateStore.removeWhere` (deduplication's purge) removes what iterating the family and
 * removing the matching keys would: compared with a model on every working copy (the heap,
 * RocksDB, a write set that spilled) and after a restore in a new provider.
 */
class KStateStoreRemoveWhereSuite extends AnyFunSuite {
  import ProviderFixture.{conf, tmp}

  private val keySchema = StructType(Seq(StructField("k", StringType)))
  private val valueSchema = StructType(Seq(StructField("v", LongType)))
  private val valueProj = UnsafeProjection.create(valueSchema)

  /** Key rows from a projection that reuses its output row, as Spark's operators' keys are. */
  private final class KeyRows {
    private val proj = UnsafeProjection.create(keySchema)
    def apply(s: String): UnsafeRow = proj(InternalRow(UTF8String.fromString(s)))
  }
  private def value(v: Long): UnsafeRow = valueProj(InternalRow(v)).copy()

  private def contents(s: StateStore, cf: String = StateStore.DEFAULT_COL_FAMILY_NAME): Map[String, Long] =
    s.iterator(cf).map(p => p.key.getUTF8String(0).toString -> p.value.getLong(0)).toMap

  private val workingCopies: Seq[(String, StateStoreConf)] = Seq(
    "heap" -> conf(),
    "RocksDB" -> conf(extra = Map(KStateConf.HeapStateBytes.key -> "0")),
    "spilled write set" -> conf(extra = Map(KStateConf.MaxWriteSetBytes.key -> "4k"))
  )

  private def open(root: String, c: StateStoreConf): KStateStoreProvider =
    ProviderFixture.open(root, keySchema, valueSchema, c)

  /** Fails unless the store ran on the working copy `copy` names (else the case tests nothing new). */
  private def assertWorkingCopy(copy: String, p: KStateStoreProvider, s: StateStore): Unit = copy match {
    case "heap" => assert(p.onHeap)
    case "RocksDB" => assert(!p.onHeap)
    case _ => assert(s.asInstanceOf[KStateStore].counters.spills > 0, "the write set never spilled")
  }

  test("removeWhere removes what iterating and removing would, counts it, and the result restores") {
    for ((copy, c) <- workingCopies) withClue(s"$copy: ") {
      val root = tmp()
      val p = open(root, c)
      val rnd = new Random(11)
      val keys = new KeyRows
      var model = Map.empty[String, Long]
      for (v <- 0 until 6) {
        val s = p.getStore(v).asInstanceOf[KStateStore]
        // this version's own changes mixed with the committed entries: puts, overwrites, removes
        for (_ <- 0 until 1500) {
          val name = s"k${rnd.nextInt(2000)}"
          if (rnd.nextInt(6) == 0) { s.remove(keys(name)); model -= name }
          else { val x = rnd.nextInt(1000).toLong; s.put(keys(name), value(x)); model += name -> x }
        }
        val bound = rnd.nextInt(1000).toLong
        val expired = model.filter(_._2 < bound)
        assert(s.removeWhere(StateStore.DEFAULT_COL_FAMILY_NAME)(_.getLong(0) < bound) == expired.size)
        model --= expired.keys
        assert(contents(s) == model)
        // removed keys written again in the same version
        expired.keys.take(20).foreach { k => s.put(keys(k), value(5000)); model += k -> 5000L }
        assert(contents(s) == model)
        assertWorkingCopy(copy, p, s)
        assert(s.commit() == v + 1)
      }
      p.close()
      val q = open(root, c)
      assert(contents(q.getStore(6)) == model)
      q.close()
    }
  }

  test("removeWhere leaves other families alone and refuses a family of several values per key") {
    val p = open(tmp(), conf())
    val s = p.getStore(0).asInstanceOf[KStateStore]
    s.createColFamilyIfAbsent("other", keySchema, valueSchema, NoPrefixKeyStateEncoderSpec(keySchema))
    s.createColFamilyIfAbsent(
      "lists",
      keySchema,
      valueSchema,
      NoPrefixKeyStateEncoderSpec(keySchema),
      useMultipleValuesPerKey = true
    )
    val keys = new KeyRows
    (0 until 10).foreach { i =>
      s.put(keys(s"k$i"), value(i)); s.put(keys(s"k$i"), value(i), "other")
    }
    assert(s.removeWhere(StateStore.DEFAULT_COL_FAMILY_NAME)(_.getLong(0) < 5) == 5)
    assert(contents(s) == (5 until 10).map(i => s"k$i" -> i.toLong).toMap)
    assert(contents(s, "other") == (0 until 10).map(i => s"k$i" -> i.toLong).toMap)
    val e = intercept[IllegalArgumentException](s.removeWhere("lists")(_ => true))
    assert(e.getMessage.contains("plain-key, single-value family: lists"))
    s.abort()
    p.close()
  }
}
