package org.apache.spark.sql.kstate.repartition

import java.nio.ByteBuffer

import scala.util.Random

import io.kstate.KStateException
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, GenericInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.execution.streaming.state.{PrefixKeyScanStateEncoderSpec, RangeKeyScanStateEncoderSpec}
import org.apache.spark.sql.kstate.reader.RecordedOperator
import org.apache.spark.sql.kstate.operatorstate.StateMeta
import org.apache.spark.sql.kstate.engine.FamilyCodec
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

/**
 * Where repartitioning finds the operator key in each column family's entries (written here as
 * kstate's structures write them), the new partition it computes (against Spark's own
 * `HashPartitioning`), and how per-partition scalars merge.
 */
class OperatorLayoutSuite extends AnyFunSuite {
  private val keySchema =
    StructType(Seq(StructField("key", StringType), StructField("window_start", LongType, nullable = false)))
  private val valueSchema = StructType(Seq(StructField("n", LongType), StructField("max_ts", LongType)))
  private def layout(
      kind: String,
      extra: Map[String, String] = Map.empty,
      ks: StructType = keySchema,
      vs: StructType = valueSchema
  ) = OperatorLayout(RecordedOperator(1000000001L, Map("kind" -> kind) ++ extra), ks, vs)

  private def keyRow(k: String): UnsafeRow =
    UnsafeProjection.create(
      Array[DataType](StringType)
    ).apply(new GenericInternalRow(Array[Any](UTF8String.fromString(k)))).copy()

  /** The operator key a route finds in an entry. */
  private def keyOf(
      l: OperatorLayout,
      family: String,
      key: Array[Byte],
      value: Array[Byte] = Array.emptyByteArray
  ): String =
    l.route(family) match {
      case FamilyRoute.ByKey(rowOf, ordinal) => rowOf(key, value).getUTF8String(ordinal).toString
      case other => fail(s"$family routes $other")
    }

  test("the new partition is Spark's HashPartitioning partition of the operator key, for keys of several types") {
    val types = Seq[DataType](
      StringType,
      IntegerType,
      LongType,
      DoubleType,
      BinaryType,
      StructType(Seq(StructField("a", StringType), StructField("b", IntegerType)))
    )
    val rnd = new Random(42)
    def value(t: DataType): Any = t match {
      case StringType => UTF8String.fromString(rnd.alphanumeric.take(rnd.nextInt(12)).mkString)
      case IntegerType => rnd.nextInt()
      case LongType => rnd.nextLong()
      case DoubleType => rnd.nextDouble() * 1e6
      case BinaryType => Array.fill(rnd.nextInt(9))(rnd.nextInt().toByte)
      case s: StructType => new GenericInternalRow(s.fields.map(f => value(f.dataType)))
    }
    for (t <- types; m <- Seq(1, 2, 3, 5, 7, 200)) {
      val l = layout("deduplicate_by_key", ks = StructType(Seq(StructField("identity_0", t))))
      val of = RepartitionJob.partitionOf(l, m)
      val spark = HashPartitioning(Seq(BoundReference(0, t, nullable = true)), m).partitionIdExpression
      (1 to 200).foreach { _ =>
        val row = InternalRow(value(t))
        assert(of(row, 0) == spark.eval(row), s"$t, $m partitions")
      }
    }
  }

  test("the operator key of every family kstate's structures write") {
    val l = layout("windowed_aggregate")
    val k = keyRow("alice").getBytes
    val stateKey = UnsafeProjection.create(keySchema).apply(
      new GenericInternalRow(Array[Any](UTF8String.fromString("alice"), 7L))
    ).copy()
    assert(keyOf(l, "default", stateKey.getBytes) == "alice")
    // the time index: (time, key, window_start), range-encoded by Spark's encoder
    val indexSchema = StructType(StructField("time", LongType, nullable = false) +: keySchema.fields)
    val indexCodec = new FamilyCodec(
      3,
      "kstate_expiry",
      indexSchema,
      StructType(Nil),
      RangeKeyScanStateEncoderSpec(indexSchema, Seq(0)),
      false
    )
    val indexKey = indexCodec.encodeKey(UnsafeProjection.create(indexSchema).apply(
      new GenericInternalRow(Array[Any](-5L, UTF8String.fromString("alice"), 7L))
    ))
    assert(keyOf(l, "kstate_expiry", indexKey.drop(2)) == "alice")
    for (
      f <- Seq(
        "kstate_table",
        "kstate_tj_left",
        "kstate_tj_right",
        "kstate_fk_right",
        "kstate_fk_result",
        "kstate_buf_suppress-0_key",
        "kstate_vs_table_latest"
      )
    ) assert(keyOf(l, f, k) == "alice", f)
    assert(keyOf(
      l,
      "kstate_buf_suppress-0_time",
      ByteBuffer.allocate(8 + k.length).putLong(3L).put(k).array()
    ) == "alice")
    assert(keyOf(
      l,
      "kstate_vs_table_history",
      ByteBuffer.allocate(4 + k.length + 8).putInt(k.length).put(k).putLong(~9L).array()
    ) == "alice")
    assert(keyOf(
      l,
      "kstate_vs_stj_table_expiry",
      ByteBuffer.allocate(9 + k.length).putLong(1L).put(1: Byte).put(k).array()
    ) == "alice")
    val bufferKey = ByteBuffer.allocate(8 + 7 + 10).putLong(1L).array()
    val stjValue = ByteBuffer.allocate(4 + k.length + 3).putInt(k.length).put(k).put(Array[Byte](1, 2, 3)).array()
    assert(keyOf(l, "kstate_stj_join_buffer", bufferKey, stjValue) == "alice")
    for (f <- Seq("kstate_meta", "kstate_buf_x_meta", "kstate_vs_table_meta", "kstate_stj_join_meta")) {
      assert(l.route(f).isInstanceOf[FamilyRoute.PerPartition], f)
    }
  }

  test("the foreign-key join's subscriptions: the foreign key, read with the recorded left key type") {
    val fk = StructType(Seq(StructField("foreignKey", StringType)))
    val l = layout(
      "fk_join_subscriptions",
      Map("subscriptionType" ->
        "struct<fk:string,key:bigint,instruction:int,value:struct<lv:bigint>,version:bigint>"),
      ks = fk
    )
    val schema = StructType(Seq(StructField("foreignKey", StringType), StructField("key", LongType)))
    val codec = new FamilyCodec(
      4,
      "kstate_fk_subscriptions",
      schema,
      StructType(Nil),
      PrefixKeyScanStateEncoderSpec(schema, 1),
      false
    )
    val key = codec.encodeKey(UnsafeProjection.create(schema).apply(
      new GenericInternalRow(Array[Any](UTF8String.fromString("c1"), 42L))
    ))
    assert(keyOf(l, "kstate_fk_subscriptions", key.drop(2)) == "c1")
    assert(l.counting == Counting.Subscriptions)
  }

  test("a family this kstate cannot move is KSTATE_REPARTITION_UNSUPPORTED_STATE, naming it") {
    val e = intercept[KStateException](layout("deduplicate").route("kstate_future_index"))
    assert(e.errorClass == "KSTATE_REPARTITION_UNSUPPORTED_STATE")
    assert(e.getMessage.contains("kstate_future_index") && e.getMessage.contains("Nothing was written"))
  }

  test("what each operator counts in kstate_meta") {
    assert(layout("deduplicate_by_key_value").counting == Counting.DefaultEntries)
    assert(layout("windowed_aggregate").counting == Counting.WindowAggregate)
    val sessions = StructType(Seq(StructField("sessions", ArrayType(LongType))))
    assert(layout("windowed_aggregate", vs = sessions).counting == Counting.SpanAggregate)
    assert(layout("distinct", vs = sessions).counting == Counting.SessionDistinct)
    assert(layout("distinct").counting == Counting.DefaultEntries)
    assert(layout("table_join").counting == Counting.None)
  }

  // ---- merging per-partition scalars ----------------------------------------------------------

  private def slot(s: Int): Array[Byte] = {
    val w = new org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter(1); w.reset(); w.zeroOutNullBytes();
    w.write(0, s); w.getRow.getBytes
  }
  private def long(v: Long): Array[Byte] = {
    val w = new org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter(1); w.reset(); w.zeroOutNullBytes();
    w.write(0, v); w.getRow.getBytes
  }
  private def longOf(b: Array[Byte]): Long = { val r = new UnsafeRow(1); r.pointTo(b, b.length); r.getLong(0) }
  private def slotOf(b: Array[Byte]): Int = { val r = new UnsafeRow(1); r.pointTo(b, b.length); r.getInt(0) }

  test("kstate_meta: stream time the largest, counters recounted, running totals kept in sum, sweep bound dropped") {
    val l = layout("windowed_aggregate")
    val tally = new EntryTally(l)
    tally.observe("default", Array.fill(16)(1), Array.fill(24)(2))
    tally.observe("default", Array.fill(16)(1), Array.fill(32)(2))
    val olds = Seq(
      (0, slot(StateMeta.StreamTime), long(50)),
      (1, slot(StateMeta.StreamTime), long(100)),
      (2, slot(StateMeta.StreamTime), long(70)),
      (0, slot(StateMeta.Entries), long(9)),
      (1, slot(StateMeta.Entries), long(9)),
      (0, slot(StateMeta.Bytes), long(999)),
      (2, slot(StateMeta.LastPurgeBound), long(40)),
      (0, slot(StateMeta.LateDroppedTotal), long(3)),
      (1, slot(StateMeta.LateDroppedTotal), long(5)),
      (2, slot(StateMeta.LateDroppedTotal), long(11))
    )
    val totals = (0 until 2).map { p =>
      val merged = MetaMerge(MetaKind.OperatorMeta, "kstate_meta", "op", olds, tally, l.counting, p, 2)
        .map { case (k, v) => slotOf(k) -> longOf(v) }.toMap
      assert(merged(StateMeta.StreamTime) == 100)
      assert(merged(StateMeta.Entries) == 2 && merged(StateMeta.Bytes) == 16 + 24 + 16 + 32)
      assert(!merged.contains(StateMeta.LastPurgeBound))
      merged(StateMeta.LateDroppedTotal)
    }
    assert(totals == Seq(3 + 11, 5)) // old 0 and 2 -> new 0, old 1 -> new 1: the sum stays 19
    val unknown = Seq((0, slot(9), long(1)))
    assert(intercept[KStateException](MetaMerge(
      MetaKind.OperatorMeta,
      "kstate_meta",
      "op",
      unknown,
      tally,
      l.counting,
      0,
      2
    )).errorClass == "KSTATE_REPARTITION_UNSUPPORTED_STATE")
  }

  test(
    "the versioned store's meta: stream time and cleaned-through the largest, lowest segment the smallest, versions recounted (with those latest entries hold), layout 3; layout 1 is refused"
  ) {
    val l = layout("versioned_table")
    val tally = new EntryTally(l)
    // latest entries: validFrom:8 indexed:8 tomb:1 count byte; layout 3 (bit 6) holding 2 versions, layout 2 listing 1
    def latest(dir: Int, rest: Int) =
      ByteBuffer.allocate(18 + rest).putLong(30).putLong(0).put(0: Byte).put(dir.toByte).array()
    tally.observe("kstate_vs_table_latest", Array(1), latest(0x40 | 2, 6))
    tally.observe("kstate_vs_table_latest", Array(2), latest(1, 8))
    tally.observe("kstate_vs_table_history", Array(3), Array(2))
    def meta(st: Long, low: Long, cleaned: Long, versions: Long, layout: Byte) =
      ByteBuffer.allocate(33).putLong(st).putLong(low).putLong(cleaned).putLong(versions).put(layout).array()
    val olds = Seq((0, "t".getBytes, meta(100, 7, 5, 40, 3)), (1, "t".getBytes, meta(60, 3, 8, 20, 2)))
    val Seq((k, v)) = MetaMerge(MetaKind.VersionedMeta, "kstate_vs_table_meta", "op", olds, tally, l.counting, 0, 3)
    val b = ByteBuffer.wrap(v)
    assert(new String(k) == "t" && b.getLong == 100 && b.getLong == 3 && b.getLong == 8 && b.getLong == 5 && b.get == 3)
    val newer = Seq((0, "t".getBytes, meta(100, 7, 5, 40, 4)))
    assert(intercept[KStateException](
      MetaMerge(MetaKind.VersionedMeta, "kstate_vs_table_meta", "op", newer, tally, l.counting, 0, 3)
    ).getMessage.contains("newer kstate (versioned store layout 4)"))
    val layout1 = Seq((0, "t".getBytes, ByteBuffer.allocate(32).array()))
    assert(intercept[KStateException](MetaMerge(
      MetaKind.VersionedMeta,
      "kstate_vs_table_meta",
      "op",
      layout1,
      tally,
      l.counting,
      0,
      3
    )).getMessage.contains("layout 1"))
  }

  test("the buffers' meta: records and bytes recounted from the time family; the join buffer's arrivals the largest") {
    val l = layout("suppress")
    val tally = new EntryTally(l)
    tally.observe("kstate_buf_s_time", Array.fill(8 + 10)(0), Array.fill(8 + 30)(0))
    tally.observe("kstate_buf_s_time", Array.fill(8 + 12)(0), Array.fill(8 + 1)(0))
    val olds = Seq((0, "c".getBytes, ByteBuffer.allocate(16).putLong(9).putLong(9).array()))
    val Seq((_, v)) = MetaMerge(MetaKind.BufferMeta, "kstate_buf_s_meta", "op", olds, tally, l.counting, 0, 2)
    val b = ByteBuffer.wrap(v)
    assert(b.getLong == 2 && b.getLong == (10 + 30 + 24) + (12 + 1 + 24))
    tally.observe("kstate_stj_join_buffer", Array(1), Array(2))
    val joins = Seq(
      (0, "m".getBytes, ByteBuffer.allocate(24).putLong(10).putLong(500).putLong(7).array()),
      (1, "m".getBytes, ByteBuffer.allocate(24).putLong(30).putLong(200).putLong(7).array())
    )
    val Seq((_, j)) = MetaMerge(MetaKind.JoinBufferMeta, "kstate_stj_join_meta", "op", joins, tally, l.counting, 1, 2)
    val jb = ByteBuffer.wrap(j)
    assert(jb.getLong == 30 && jb.getLong == 500 && jb.getLong == 1)
  }
}
