package org.apache.spark.sql.kstate.operatorstate

import scala.collection.immutable.TreeMap

import io.kstate.KStateException
import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

import org.apache.spark.sql.kstate.provider.{KStateStore, KStateStoreProvider, ProviderFixture}
import org.apache.spark.sql.kstate.engine.Bytes
import org.apache.spark.sql.types.{BinaryType, StructField, StructType}

/** KIP-889/914 rules of the versioned store, and a property test against a naive model. */
class VersionedKeyValueStoreSuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  import VersionedKeyValueStore.{Latest, NotPut}

  private val schema = StructType(Seq(StructField("b", BinaryType)))
  private def provider(root: String = ProviderFixture.tmp()): KStateStoreProvider =
    ProviderFixture.open(root, schema, schema)
  private def b(s: String): Array[Byte] = s.getBytes("UTF-8")
  private def str(r: VersionedRecord): Option[(String, Long, Option[Long])] =
    Option(r).map(x => (new String(x.value, "UTF-8"), x.timestamp, x.validTo))

  private def withStore(retention: Long = 100, grace: Long = 100, segment: Long = 10)(
      f: VersionedKeyValueStore => Unit
  ): Unit = {
    val p = provider()
    val s = p.getStore(0)
    f(new VersionedKeyValueStore(s, "t", retention, grace, segment))
    p.close()
  }

  test("put returns -1 for a new latest version, validTo for history, MIN_VALUE past grace") {
    withStore(retention = 100, grace = 20) { vs =>
      assert(vs.put(b("k"), b("a"), 10) == Latest)
      assert(vs.put(b("k"), b("c"), 30) == Latest)
      assert(vs.put(b("k"), b("b"), 20) == 30) // out of order: valid until the next version
      assert(vs.put(b("x"), b("z"), 60) == Latest) // another key advances stream time to 60
      assert(vs.put(b("k"), b("old"), 39) == NotPut) // 39 < 60 - 20
      assert(vs.put(b("k"), b("ok"), 40) == Latest) // exactly at the grace bound: accepted
      assert(str(vs.get(b("k"))) == Some(("ok", 40L, None)))
    }
  }

  test("get as of a time is inclusive and returns validTo; before the first version is null") {
    withStore() { vs =>
      vs.put(b("k"), b("a"), 10); vs.put(b("k"), b("b"), 20)
      assert(str(vs.get(b("k"), 9)).isEmpty)
      assert(str(vs.get(b("k"), 10)) == Some(("a", 10L, Some(20L))))
      assert(str(vs.get(b("k"), 19)) == Some(("a", 10L, Some(20L))))
      assert(str(vs.get(b("k"), 20)) == Some(("b", 20L, None)))
      assert(str(vs.get(b("k"), 1000)) == Some(("b", 20L, None)))
    }
  }

  test("tombstones are versions: they hide the value from their timestamp on") {
    withStore() { vs =>
      vs.put(b("k"), b("a"), 10)
      assert(str(vs.delete(b("k"), 20)) == Some(("a", 10L, None)))
      assert(vs.get(b("k")) == null)
      assert(str(vs.get(b("k"), 15)) == Some(("a", 10L, Some(20L))))
      assert(vs.get(b("k"), 25) == null)
      // an out-of-order put before the tombstone is valid only until the tombstone
      assert(vs.put(b("k"), b("m"), 15) == 20)
      assert(str(vs.get(b("k"), 17)) == Some(("m", 15L, Some(20L))))
      assert(vs.get(b("k"), 20) == null)
    }
  }

  test("same timestamp replaces the version's value and keeps its validTo") {
    withStore() { vs =>
      vs.put(b("k"), b("a"), 10); vs.put(b("k"), b("c"), 30)
      assert(vs.put(b("k"), b("a2"), 10) == 30)
      assert(str(vs.get(b("k"), 10)) == Some(("a2", 10L, Some(30L))))
      assert(vs.put(b("k"), b("c2"), 30) == Latest)
      assert(str(vs.get(b("k"))) == Some(("c2", 30L, None)))
    }
  }

  test("history older than retention is not served and cleanup removes only expired entries") {
    withStore(retention = 50, grace = 10, segment = 10) { vs =>
      vs.put(b("k"), b("a"), 10); vs.put(b("k"), b("b"), 20)
      vs.put(b("d"), b("x"), 30); vs.delete(b("d"), 40)
      assert(vs.put(b("k"), b("c"), 100) == Latest)
      // stream time 100, cutoff 50: a [10,20) and b [20,100): b is still needed for as-of 50..99
      assert(vs.get(b("k"), 49) == null)
      assert(str(vs.get(b("k"), 50)) == Some(("b", 20L, Some(100L))))
      // segments of 10: 0..4 end at or before the cutoff 50; a (validTo 20), x (validTo 40) and d's
      // tombstone (at 40) are in them, b (validTo 100) is not
      val removed = vs.cleanup()
      assert(removed == 3)
      assert(vs.cleanup() == 0)
      assert(str(vs.get(b("k"), 50)) == Some(("b", 20L, Some(100L))))
      assert(vs.get(b("d")) == null)
    }
  }

  test("past the history retention only the latest version answers, if it is old enough (Kafka's rule)") {
    withStore(retention = 50, grace = 10, segment = 10) { vs =>
      vs.put(b("k"), b("a"), 10)
      vs.put(b("x"), b("x"), 100) // stream time 100, cutoff 50
      assert(str(vs.get(b("k"), 20)) == Some(("a", 10L, None))) // the latest never expires
      assert(vs.get(b("k"), 5) == null) // older than the latest version: nothing
      vs.put(b("k"), b("b"), 95)
      assert(vs.get(b("k"), 20) == null) // a, now history past retention, no longer answers
      vs.delete(b("x"), 99)
      assert(vs.get(b("x"), 40) == null) // a latest tombstone answers nothing
    }
  }

  test("put's 'latest' result is no timestamp: a version may end at -1") {
    withStore() { vs =>
      assert(vs.put(b("k"), b("a"), -1) == Latest)
      assert(vs.put(b("k"), b("b"), -2) == -1L) // out of order: valid until -1, not "latest"
      assert(Latest != -1L)
    }
  }

  test("the expiry index holds one history entry per key, not one per version or segment") {
    val p = provider()
    val s = p.getStore(0)
    val vs = new VersionedKeyValueStore(s, "t", 1000, 1000, 100)
    (1 to 9).foreach(i => vs.put(b("k"), b(s"v$i"), i * 10L)) // 8 versions end in segment 0
    def index = {
      val it = s.bytes("kstate_vs_t_expiry").scan(Array.emptyByteArray, None);
      try it.size
      finally it.close()
    }
    assert(index == 1)
    vs.put(b("k"), b("v10"), 150) // v9 ends at 150, segment 1: the key is indexed already, at 0
    assert(index == 1)
    (1 to 8).foreach(i => assert(str(vs.get(b("k"), i * 10L + 5)) == Some((s"v$i", i * 10L, Some(i * 10L + 10)))))
    vs.put(b("x"), b("x"), 1200) // cutoff 200: segments 0 and 1 are expired
    assert(vs.cleanup() == 9 && index == 0)
    assert(str(vs.get(b("k"))) == Some(("v10", 150L, None)))
    vs.put(b("k"), b("v11"), 1250) // v10 ends at 1250, segment 12: one new entry
    assert(index == 1)
    p.close()
  }

  test("a cleanup that leaves history indexes the key again where its oldest remaining version ends") {
    val p = provider()
    val s = p.getStore(0)
    val vs = new VersionedKeyValueStore(s, "t", 100, 100, 10)
    Seq(10L, 20L, 55L, 90L).foreach(t => vs.put(b("k"), b(s"v$t"), t)) // history ends at 20, 55, 90
    def indexed = {
      val it = s.bytes("kstate_vs_t_expiry").scan(Array.emptyByteArray, None)
      try it.collect { case (k, _) if k.last == 'k' => java.nio.ByteBuffer.wrap(k).getLong ^ Long.MinValue }.toList
      finally it.close()
    }
    assert(indexed == List(2L)) // segment of 20
    vs.put(b("x"), b("x"), 150) // cutoff 50: segments 0-4 expired; v10 (to 20) is in them, v20 (to 55) not
    assert(vs.cleanup() == 1)
    assert(indexed == List(5L)) // v20 ends at 55, segment 5
    assert(str(vs.get(b("k"), 54)) == Some(("v20", 20L, Some(55L))))
    vs.put(b("x"), b("y"), 200) // cutoff 100: v20 (to 55) and v55 (to 90)
    assert(vs.cleanup() == 2)
    assert(indexed.isEmpty && vs.recentOf(b("k")) == RecentHistory.Empty)
    assert(str(vs.get(b("k"))) == Some(("v90", 90L, None)))
    p.close()
  }

  /**
   * The versions in the store's latest and history families, counted by scanning them: one per
   * latest entry and per version it holds, one per history entry.
   */
  private def entries(store: KStateStore, name: String = "t"): Long = {
    val latest = store.bytes(s"kstate_vs_${name}_latest").scan(Array.emptyByteArray, None)
    val held =
      try latest.map { case (_, v) =>
          1L + RecentHistory.readFrom(v, 17, java.nio.ByteBuffer.wrap(v).getLong(0)).size
        }.sum
      finally latest.close()
    val history = store.bytes(s"kstate_vs_${name}_history").scan(Array.emptyByteArray, None)
    try held + history.size
    finally history.close()
  }

  test("numVersions: new timestamps add one, same-timestamp puts and puts past grace none, cleanup subtracts") {
    val root = ProviderFixture.tmp()
    val p = provider(root)
    val s = p.getStore(0)
    val vs = new VersionedKeyValueStore(s, "t", 50, 10, 10)
    assert(vs.numVersions == 0)
    vs.put(b("k"), b("a"), 10); vs.put(b("k"), b("b"), 20); vs.put(b("k"), b("m"), 15)
    assert(vs.numVersions == 3)
    vs.put(b("k"), b("b2"), 20); vs.put(b("k"), b("m2"), 15) // replace latest / a history version
    assert(vs.numVersions == 3)
    vs.delete(b("d"), 30) // a tombstone of an absent key is a version
    assert(vs.numVersions == 4)
    assert(vs.put(b("k"), b("late"), 19) == NotPut) // 19 < 30 - 10
    assert(vs.numVersions == 4)
    vs.put(b("k"), b("c"), 100) // stream time 100, cutoff 50
    assert(vs.numVersions == 5)
    // expired (validTo at or before the cutoff 50): a [10,15), m2 [15,20) and d's tombstone at 30;
    // b2 [20,100) and c stay
    assert(vs.cleanup() == 3)
    assert(vs.numVersions == 2)
    assert(vs.numVersions == entries(s))
    // persisted: a restart from the checkpoint reads the count
    val v = s.commit(); p.close()
    val p2 = provider(root)
    val s2 = p2.getStore(v)
    assert(new VersionedKeyValueStore(s2, "t", 50, 10, 10).numVersions == 2)
    p2.close()
  }

  test("a store written before the history directory (meta without a layout) fails with a named error") {
    val root = ProviderFixture.tmp()
    val p = provider(root)
    val s = p.getStore(0)
    val vs = new VersionedKeyValueStore(s, "t", 50, 10, 10)
    vs.put(b("k"), b("a"), 10); vs.put(b("k"), b("b"), 20)
    val v = s.commit()
    val meta = p.getStore(v).bytes("kstate_vs_t_meta").get(Array[Byte]('t'))
    assert(meta.length == 33 && meta(32) == 3) // stream time, lowest segment, cleaned through, versions, layout 3
    assert(str(new VersionedKeyValueStore(p.getStore(v), "t", 50, 10, 10).get(
      b("k"),
      15
    )) == Some(("a", 10L, Some(20L))))
    // the metas older kstate wrote: stream time (8), + lowest segment and cleaned through (24), + versions (32)
    Seq(8, 24, 32).foreach { n =>
      val s1 = p.getStore(v)
      s1.bytes("kstate_vs_t_meta").put(Array[Byte]('t'), java.util.Arrays.copyOf(meta, n))
      val old = s1.commit()
      val e = intercept[KStateException](new VersionedKeyValueStore(p.getStore(old), "t", 50, 10, 10))
      assert(e.errorClass == "KSTATE_VERSIONED_STORE_LAYOUT_OUTDATED", n)
      assert(
        e.getMessage.contains("'t'") && e.getMessage.contains("layout 1") && e.getMessage.contains("new checkpoint")
      )
    }
    p.close()
  }

  test("a layout 2 store (versions in the history family, validFroms listed) is read, and upgraded as it changes") {
    val root = ProviderFixture.tmp()
    val p = provider(root)
    val s = p.getStore(0)
    def bb(n: Int) = java.nio.ByteBuffer.allocate(n)
    def hkey(k: String, from: Long) =
      bb(12 + k.length).putInt(k.length).put(b(k)).putLong(~(from ^ Long.MinValue)).array()
    // what the previous release wrote for k: versions at 10, 20, 30 in history, the latest at 40,
    // one index entry per segment (of 10) in which a version ends; j: one version, no history
    val latest = s.bytes("kstate_vs_t_latest")
    latest.put(
      b("k"),
      bb(18 + 24 + 1).putLong(40).putLong(4).put(0.toByte).put(3.toByte)
        .putLong(30).putLong(20).putLong(10).put(b("d")).array()
    )
    latest.put(b("j"), bb(18 + 1).putLong(35).putLong(Long.MinValue).put(0.toByte).put(0.toByte).put(b("J")).array())
    Seq((10L, 20L, "a"), (20L, 30L, "b"), (30L, 40L, "c")).foreach { case (from, to, v) =>
      s.bytes("kstate_vs_t_history").put(hkey("k", from), bb(9 + 1).putLong(to).put(0.toByte).put(b(v)).array())
    }
    Seq(2L, 3L, 4L).foreach(seg =>
      s.bytes("kstate_vs_t_expiry").put(
        bb(10).putLong(seg ^ Long.MinValue).put(0.toByte).put(b("k")).array(),
        Array.emptyByteArray
      )
    )
    s.bytes("kstate_vs_t_meta").put(
      Array[Byte]('t'),
      bb(33).putLong(40).putLong(2).putLong(Long.MinValue).putLong(5).put(2.toByte).array()
    )
    val v2 = s.commit()
    val vs = new VersionedKeyValueStore(p.getStore(v2), "t", 100, 100, 10)
    val s2 = p.getStore(v2)
    val up = new VersionedKeyValueStore(s2, "t", 100, 100, 10)
    assert(vs.numVersions == 5)
    assert(str(vs.get(b("k"), 25)) == Some(("b", 20L, Some(30L))))
    assert(str(vs.get(b("k"), 15)) == Some(("a", 10L, Some(20L))))
    assert(str(vs.get(b("j"))) == Some(("J", 35L, None)))
    assert(vs.recentOf(b("k")).truncated && vs.recentOf(b("k")).size == 0) // all of it in the family
    // changes: a new latest (the old one held in the entry), an out-of-order put into the family
    assert(up.put(b("k"), b("e"), 50) == Latest)
    assert(froms(up.recentOf(b("k"))) == Seq(40L) && up.recentOf(b("k")).truncated)
    assert(up.put(b("k"), b("x"), 35) == 40)
    assert(str(up.get(b("k"), 45)) == Some(("d", 40L, Some(50L))))
    assert(str(up.get(b("k"), 37)) == Some(("x", 35L, Some(40L))))
    assert(str(up.get(b("k"), 33)) == Some(("c", 30L, Some(35L))))
    assert(up.numVersions == 7 && up.numVersions == entries(s2))
    val v3 = s2.commit()
    assert(p.getStore(v3).bytes("kstate_vs_t_meta").get(Array[Byte]('t'))(32) == 3) // layout 3 from now on
    // after a restart: j's entry is still layout 2, k's is layout 3; a cleanup past 35 drains
    // the old per-segment entries and the new ones alike
    p.close()
    val p2 = provider(root)
    val s3 = p2.getStore(v3)
    val again = new VersionedKeyValueStore(s3, "t", 100, 100, 10)
    assert(str(again.get(b("j"))) == Some(("J", 35L, None)))
    assert(str(again.get(b("k"), 37)) == Some(("x", 35L, Some(40L))))
    again.put(b("z"), b("z"), 140) // cutoff 40: the versions ending before 40 go (a, b, c)
    assert(again.cleanup() == 3)
    assert(again.get(b("k"), 33) == null && str(again.get(b("k"), 45)) == Some(("d", 40L, Some(50L))))
    assert(again.numVersions == entries(s3))
    assertRecent(again, s3, "k", 10, upgraded = true) // from layout 2: fewer than 16 held
    again.put(b("z"), b("z2"), 200) // cutoff 100: all of k's history
    again.cleanup()
    assert(historyOf(s3, "k").isEmpty && again.recentOf(b("k")) == RecentHistory.Empty)
    assert(again.numVersions == entries(s3))
    p2.close()
  }

  test("mapValues converts every version, those a latest entry holds too, each to its own value") {
    import org.apache.spark.sql.catalyst.InternalRow
    import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
    import org.apache.spark.sql.types.{IntegerType, LongType}
    val before = StructType(Seq(StructField("n", IntegerType)))
    val now = StructType(Seq(StructField("n", LongType)))
    val toRow = UnsafeProjection.create(before)
    def intRow(n: Int) = toRow(InternalRow(n)).copy().getBytes
    val p = provider()
    val s = p.getStore(0)
    val vs = new VersionedKeyValueStore(s, "t", 1000, 1000, 100)
    (1 to 20).foreach(i => vs.put(b("k"), intRow(i), i * 10L)) // 16 held, 3 in the history family
    // the widening converter reuses its projection's row from call to call
    VersionedKeyValueStore.mapValues(
      s,
      "t",
      new org.apache.spark.sql.kstate.evolution.RowEvolution.Converter(before, now).bytes
    )
    val after = new VersionedKeyValueStore(s, "t", 1000, 1000, 100)
    (1 to 20).foreach { i =>
      val r = after.get(b("k"), i * 10L)
      val row = new UnsafeRow(1)
      row.pointTo(r.value, r.value.length)
      assert(r.timestamp == i * 10L && row.getLong(0) == i, i)
    }
    p.close()
  }

  test("held versions at the ends of time: deltas of any size") {
    // all before -1, so that no time is past the retention (stream time minus Long.MaxValue)
    withStore(retention = Long.MaxValue, grace = Long.MaxValue, segment = 1L << 40) { vs =>
      Seq(Long.MinValue + 1, Long.MinValue / 2, -1000L).foreach(t => vs.put(b("k"), b(s"v$t"), t))
      vs.put(b("k"), null, -3L)
      assert(vs.put(b("k"), b("v-500"), -500L) == -3L) // out of order, between the held versions
      vs.put(b("k"), b("v-2"), -2L)
      val times = Seq(Long.MinValue + 1, Long.MinValue / 2, -1000L, -500L, -3L, -2L)
      assert(froms(vs.recentOf(b("k"))) == times.reverse.tail)
      times.sliding(2).foreach { case Seq(t, next) =>
        val r = vs.get(b("k"), t)
        if (t == -3L) assert(r == null) // the tombstone
        else assert(str(r) == Some((s"v$t", t, Some(next))), t)
      }
      assert(str(vs.get(b("k"))) == Some(("v-2", -2L, None)))
    }
    // the encoding alone: deltas past Long.MaxValue (the two's complement difference, unsigned)
    val held =
      RecentHistory.of(Array(Long.MaxValue - 1, 0L, Long.MinValue + 1), Array(b("a"), null, Array.emptyByteArray), true)
    val buf = java.nio.ByteBuffer.allocate(held.encodedSize(Long.MaxValue) + 2).put(7.toByte)
    held.writeTo(buf, Long.MaxValue).put(9.toByte)
    val bytes = buf.array()
    assert(RecentHistory.readFrom(bytes, 1, Long.MaxValue) == held)
    assert(RecentHistory.endOf(bytes, 1) == bytes.length - 1)
    val oldest = RecentHistory.oldestIn(bytes, 1, Long.MaxValue)
    assert(oldest.from == Long.MinValue + 1 && oldest.validTo == 0L && oldest.value.isEmpty)
  }

  test("a store of a newer layout (a later kstate's) fails with KSTATE_CHECKPOINT_FROM_NEWER_KSTATE, not as outdated") {
    val root = ProviderFixture.tmp()
    val p = provider(root)
    val s = p.getStore(0)
    new VersionedKeyValueStore(s, "t", 50, 10, 10).put(b("k"), b("a"), 10)
    val v = s.commit()
    val meta = p.getStore(v).bytes("kstate_vs_t_meta").get(Array[Byte]('t'))
    // layout 4 as a later kstate may write it: the layout byte last, after fields of its own
    for (newer <- Seq(meta.updated(32, 4.toByte), java.util.Arrays.copyOf(meta, 41).updated(40, 4.toByte))) {
      val s1 = p.getStore(v)
      s1.bytes("kstate_vs_t_meta").put(Array[Byte]('t'), newer)
      val w = s1.commit()
      val e = intercept[KStateException](new VersionedKeyValueStore(p.getStore(w), "t", 50, 10, 10))
      assert(e.errorClass == "KSTATE_CHECKPOINT_FROM_NEWER_KSTATE", e.getMessage)
      assert(
        e.getMessage.contains("'t'") && e.getMessage.contains("format version 4") &&
          e.getMessage.contains("reads format version 3") && e.getMessage.contains(root.toString),
        e.getMessage
      )
    }
    p.close()
  }

  /** The validFrom of `key`'s history versions, newest first, read from the history family. */
  private def historyOf(store: KStateStore, key: String): Array[Long] = {
    val k = b(key)
    val prefix = java.nio.ByteBuffer.allocate(4 + k.length).putInt(k.length).put(k).array()
    val it = store.bytes("kstate_vs_t_history").scan(prefix, Some(Bytes.prefixEnd(prefix).get))
    try it.map { case (hk, _) => ~java.nio.ByteBuffer.wrap(hk, hk.length - 8, 8).getLong ^ Long.MinValue }.toArray
    finally it.close()
  }

  /**
   * The recent-history invariant: the history family holds versions of `key` only when its latest
   * entry says truncated, then it holds the 16 newest and the family only older ones; and a key
   * with history is indexed at or before the segment in which its oldest version ends.
   */
  private def assertRecent(
      vs: VersionedKeyValueStore,
      store: KStateStore,
      key: String,
      segment: Long,
      clue: => String = "",
      upgraded: Boolean = false
  ): Unit = {
    val rec = vs.recentOf(b(key))
    val hist = historyOf(store, key)
    if (rec == null) assert(hist.isEmpty, s"$key has history but no latest entry $clue")
    else {
      assert(rec.truncated == hist.nonEmpty, s"$key: held $rec, history ${hist.mkString(",")} $clue")
      if (rec.truncated) assert(
        (upgraded || rec.size == RecentHistory.Max) && (rec.size == 0 || hist.head < rec.from(rec.size - 1)),
        s"$key: held $rec, history ${hist.mkString(",")} $clue"
      )
      val raw = store.bytes("kstate_vs_t_latest").get(b(key))
      val latestFrom = java.nio.ByteBuffer.wrap(raw).getLong(0)
      val oldestValidTo =
        if (hist.nonEmpty) java.nio.ByteBuffer.wrap(historyValue(store, key, hist.last)).getLong
        else if (rec.size > 0) rec.validTo(rec.size - 1, latestFrom)
        else Long.MinValue
      if (oldestValidTo != Long.MinValue) {
        val it = store.bytes("kstate_vs_t_expiry").scan(Array.emptyByteArray, None)
        val segments =
          try it.collect {
              case (k, _)
                  if k(8) == 0 && java.util.Arrays.equals(java.util.Arrays.copyOfRange(k, 9, k.length), b(key)) =>
                java.nio.ByteBuffer.wrap(k).getLong ^ Long.MinValue
            }.toList
          finally it.close()
        assert(
          segments.exists(_ <= Math.floorDiv(oldestValidTo, segment)),
          s"$key: oldest version ends at $oldestValidTo, indexed in segments $segments $clue"
        )
      }
    }
  }

  private def historyValue(store: KStateStore, key: String, from: Long): Array[Byte] = {
    val k = b(key)
    store.bytes("kstate_vs_t_history").get(
      java.nio.ByteBuffer.allocate(12 + k.length).putInt(k.length).put(k).putLong(~(from ^ Long.MinValue)).array()
    )
  }

  private def froms(r: RecentHistory): Seq[Long] = (0 until r.size).map(r.from)

  private def withScans(retention: Long = 1000, grace: Long = 1000, segment: Long = 100)(
      f: (VersionedKeyValueStore, KStateStore) => Unit
  ): Unit = {
    val p = provider()
    val s = p.getStore(0)
    try f(new VersionedKeyValueStore(s, "t", retention, grace, segment), s)
    finally p.close()
  }

  test("a deep key: lookups within its directory are point reads, older ones scan its history") {
    withScans() { (vs, s) =>
      (1 to 40).foreach(i => vs.put(b("d"), if (i == 30) null else b(s"v$i"), i * 10L)) // a tombstone at 300
      val held = vs.recentOf(b("d"))
      assert(froms(held) == (39 to 24 by -1).map(_ * 10L) && held.truncated)
      assert(historyOf(s, "d").toSeq == (23 to 1 by -1).map(_ * 10L)) // only the older ones have entries
      assertRecent(vs, s, "d", 100)
      (24 to 39).filter(_ != 30).foreach { i =>
        assert(str(vs.get(b("d"), i * 10L + 5)) == Some((s"v$i", i * 10L, Some(i * 10L + 10))))
      }
      assert(vs.get(b("d"), 305) == null) // the tombstone in history
      assert(str(vs.get(b("d"), 240)) == Some(("v24", 240L, Some(250L)))) // the oldest listed: still listed
      assert(vs.historyScans == 0)
      assert(str(vs.get(b("d"), 239)) == Some(("v23", 230L, Some(240L)))) // older than the directory
      assert(str(vs.get(b("d"), 15)) == Some(("v1", 10L, Some(20L))))
      assert(vs.get(b("d"), 9) == null)
      assert(vs.historyScans == 3)
    }
  }

  test("out-of-order puts: within the directory listed in order, older than a truncated one not listed") {
    withScans() { (vs, s) =>
      (1 to 40).foreach(i => vs.put(b("d"), b(s"v$i"), i * 10L))
      assert(vs.put(b("d"), b("x"), 395) == 400)
      assert(vs.historyScans == 0)
      val dir = vs.recentOf(b("d"))
      assert(
        dir.size == 16 && dir.truncated && dir.from(0) == 395 && dir.from(1) == 390 && dir.from(15) == 250
      ) // 240 moved into the history family
      assert(historyOf(s, "d").head == 240)
      assert(str(vs.get(b("d"), 397)) == Some(("x", 395L, Some(400L))))
      assert(str(vs.get(b("d"), 392)) == Some(("v39", 390L, Some(395L))))
      assert(vs.put(b("d"), b("y"), 255) == 260) // within: 255 listed, 250 drops out
      assert(vs.recentOf(b("d")).from(15) == 255)
      assert(vs.historyScans == 0)
      assert(vs.put(b("d"), b("o"), 105) == 110) // older than the truncated directory: scans
      assert(vs.historyScans == 2) // the floor version and the next version's validFrom
      assert(vs.recentOf(b("d")).from(15) == 255)
      assert(str(vs.get(b("d"), 107)) == Some(("o", 105L, Some(110L))))
      assert(str(vs.get(b("d"), 104)) == Some(("v10", 100L, Some(105L))))
      assert(vs.put(b("d"), b("o2"), 105) == 110) // same timestamp in history: replaced, no new version
      assert(str(vs.get(b("d"), 105)) == Some(("o2", 105L, Some(110L))))
      assertRecent(vs, s, "d", 100)
      assert(vs.numVersions == 43 && vs.numVersions == entries(s))
      // an untruncated directory covers every time: a put older than its oldest version is listed last
      vs.put(b("s"), b("a"), 10); vs.put(b("s"), b("b"), 20); vs.put(b("s"), b("c"), 30)
      val scans = vs.historyScans
      assert(vs.put(b("s"), b("z"), 5) == 10)
      assert(froms(vs.recentOf(b("s"))) == Seq(20L, 10L, 5L) && !vs.recentOf(b("s")).truncated)
      assert(vs.historyScans == scans)
      assertRecent(vs, s, "s", 100)
    }
  }

  test("same-timestamp puts keep the held versions' times") {
    withScans() { (vs, s) =>
      vs.put(b("k"), b("a"), 10); vs.put(b("k"), b("b"), 20); vs.put(b("k"), b("c"), 30)
      val dir = froms(vs.recentOf(b("k")))
      assert(dir == Seq(20L, 10L))
      assert(vs.put(b("k"), b("c2"), 30) == Latest)
      assert(vs.put(b("k"), null, 30) == Latest) // a tombstone replacing the latest
      assert(vs.put(b("k"), b("b2"), 20) == 30)
      assert(froms(vs.recentOf(b("k"))) == dir && vs.numVersions == 3)
      assert(vs.get(b("k")) == null && str(vs.get(b("k"), 25)) == Some(("b2", 20L, Some(30L))))
      assertRecent(vs, s, "k", 100)
    }
  }

  test("cleanup: an untruncated key in its latest entry alone, a truncated one with a scan of its history") {
    withScans(retention = 100, grace = 100, segment = 10) { (vs, s) =>
      (1 to 40).foreach(i => vs.put(b("d"), b(s"d$i"), i * 10L))
      (36 to 40).foreach(i => vs.put(b("s"), b(s"s$i"), i * 10L))
      // stream time 400, cutoff 300: d's versions ending before 300 (from 10 to 280) go
      assert(vs.cleanup() == 28)
      assert(vs.historyScans == 1) // d's truncated directory
      assert(froms(vs.recentOf(b("d"))) == (39 to 29 by -1).map(_ * 10L) && !vs.recentOf(b("d")).truncated)
      assertRecent(vs, s, "d", 10); assertRecent(vs, s, "s", 10)
      assert(str(vs.get(b("d"), 305)) == Some(("d30", 300L, Some(310L)))) // the cutoff is 300
      assert(vs.historyScans == 1)
      vs.put(b("x"), b("x"), 500) // cutoff 400: d's 290..380 and s's 360..380 end before 400
      assert(vs.cleanup() == 13)
      assert(vs.historyScans == 1) // untruncated: the latest entry alone
      assert(froms(vs.recentOf(b("d"))) == Seq(390L) && froms(vs.recentOf(b("s"))) == Seq(390L))
      assertRecent(vs, s, "d", 10); assertRecent(vs, s, "s", 10)
      assert(str(vs.get(b("d"), 400)) == Some(("d40", 400L, None)))
      assert(vs.numVersions == entries(s))
    }
  }

  test("cleanup of a deep key under a latest tombstone deletes its history, then the tombstone") {
    withScans(retention = 100, grace = 100, segment = 10) { (vs, s) =>
      (1 to 30).foreach(i => vs.put(b("z"), b(s"z$i"), i * 10L))
      vs.delete(b("z"), 310)
      vs.put(b("x"), b("x"), 500) // cutoff 400: all of z
      assert(vs.cleanup() == 31)
      assert(vs.recentOf(b("z")) == null && historyOf(s, "z").isEmpty)
      assert(vs.numVersions == entries(s) && vs.numVersions == 1)
      assert(vs.put(b("z"), b("new"), 450) == Latest)
      assert(vs.recentOf(b("z")) == RecentHistory.Empty)
      assert(vs.get(b("z"), 449) == null && str(vs.get(b("z"), 450)) == Some(("new", 450L, None)))
    }
  }

  test("cleanup deletes a key's history before its latest tombstone, whose index entry may be older") {
    withScans(retention = 0, grace = 0, segment = 1) { (vs, s) =>
      vs.put(b("c"), null, 57)
      vs.put(b("c"), null, 77) // the tombstone at 57 goes into history: index entries tombstone@57, history@77
      vs.put(b("b"), b("b"), 119) // cutoff 119
      assert(vs.cleanup() == 2)
      assert(vs.recentOf(b("c")) == null && historyOf(s, "c").isEmpty)
      assert(vs.numVersions == 1 && vs.numVersions == entries(s))
    }
  }

  test("the common path: no scan, and no history entry while a key has at most 16 history versions") {
    withScans(retention = 80, grace = 40, segment = 10) { (vs, s) =>
      val keys = (1 to 20).map(i => s"k$i")
      (1 to 30).foreach { t =>
        keys.foreach { k =>
          vs.put(b(k), b(s"$k@$t"), t * 10L)
          if (t % 3 == 0) vs.put(b(k), b(s"$k@${t}late"), t * 10L - 25) // out of order, within the directory
          if (t > 4) assert(vs.get(b(k), t * 10L - 40) != null) // within the retention, within the directory
        }
        vs.cleanup()
      }
      assert(vs.historyScans == 0)
      keys.foreach(k => assertRecent(vs, s, k, 10))
      assert(historyOf(s, "k1").isEmpty) // retention 80: at most 10 history versions live
    }
  }

  test("grace may not exceed history retention: named error") {
    val p = provider()
    val e = intercept[KStateException](new VersionedKeyValueStore(p.getStore(0), "t", 10, 20))
    assert(e.errorClass == "KSTATE_INVALID_VERSIONED_STORE")
  }

  /** The naive model: all versions of every key, never cleaned up. */
  private final class Model(retention: Long, grace: Long) {
    var streamTime: Long = Long.MinValue
    var versions: Map[String, TreeMap[Long, Option[String]]] = Map.empty
    private def cutoff(d: Long) = if (streamTime == Long.MinValue) Long.MinValue else streamTime - d
    def put(k: String, v: Option[String], ts: Long): Long = {
      if (streamTime != Long.MinValue && ts < cutoff(grace)) return NotPut
      streamTime = math.max(streamTime, ts)
      val vs = versions.getOrElse(k, TreeMap.empty[Long, Option[String]]).updated(ts, v)
      versions += k -> vs
      vs.rangeFrom(ts + 1).headOption.map(_._1).getOrElse(Latest)
    }
    def get(k: String): Option[(String, Long, Option[Long])] =
      versions.get(k).flatMap(_.lastOption).flatMap { case (t, v) => v.map(x => (x, t, None)) }
    def get(k: String, asOf: Long): Option[(String, Long, Option[Long])] =
      if (streamTime != Long.MinValue && asOf < cutoff(retention)) get(k).filter(_._2 <= asOf) // latest only
      else versions.get(k).flatMap { vs =>
        vs.rangeTo(asOf).lastOption.flatMap { case (t, v) =>
          v.map(x => (x, t, vs.rangeFrom(t + 1).headOption.map(_._1)))
        }
      }
  }

  import VersionedKeyValueStoreSuite._

  /**
   * The i-th op of a program: timestamps around `i * drift` (`jitter` either side, never below 0;
   * one put in 9 up to `lookBack` behind), as-of times up to `lookBack` behind.
   */
  private def opAt(i: Int, keys: Gen[String], drift: Long, jitter: Long, lookBack: Long): Gen[Op] = {
    val base = i * drift
    Gen.frequency(
      8 -> (for (
        k <- keys; v <- Gen.option(Gen.alphaLowerStr.map(_.take(3)));
        j <- Gen.frequency(8 -> Gen.choose(-jitter, jitter), 1 -> Gen.choose(-lookBack, 0L))
      )
        yield Put(k, v, math.max(0L, base + j))),
      6 -> (for (k <- keys; back <- Gen.choose(-jitter, lookBack)) yield GetAsOf(k, math.max(0L, base - back))),
      1 -> Gen.const(Commit),
      1 -> Gen.const(Restart),
      1 -> Gen.const(Cleanup)
    )
  }

  private def program(n: Int, keys: Gen[String], drift: Long, jitter: Long, lookBack: Long): Gen[List[Op]] =
    Gen.sequence[List[Op], Op]((0 until n).map(i => opAt(i, keys, drift, jitter, lookBack)))

  /**
   * Runs `program` against the store and the model; after every put and cleanup the directory
   * invariant holds for the keys touched. Returns what it did past a truncated directory.
   */
  private def agrees(program: List[Op], keys: Seq[String], retention: Long, grace: Long, segment: Long): Deep = {
    val model = new Model(retention, grace)
    val root = ProviderFixture.tmp()
    var p = provider(root)
    var version = 0L
    var store: KStateStore = p.getStore(version)
    var vs = new VersionedKeyValueStore(store, "t", retention, grace, segment)
    var deep = Deep(0, 0, 0)
    def beyond(k: String, t: Long): Boolean = Option(vs.recentOf(b(k))).exists(d => !d.covers(t))
    val clue = s"retention $retention grace $grace segment $segment"
    program.zipWithIndex.foreach { case (op, i) =>
      op match {
        case Put(k, v, ts) =>
          if (beyond(k, ts)) deep += Deep(0, 1, 0)
          assert(vs.put(b(k), v.map(b).orNull, ts) == model.put(k, v, ts), s"op $i: put $k@$ts; $clue")
          assert(str(vs.get(b(k))) == model.get(k), s"op $i: get $k after put; $clue")
          assertRecent(vs, store, k, segment, s"after op $i; $clue")
        case GetAsOf(k, t) =>
          if (beyond(k, t)) deep += Deep(1, 0, 0)
          assert(str(vs.get(b(k), t)) == model.get(k, t), s"op $i: get $k as of $t; $clue")
        case Cleanup =>
          if (keys.exists(k => Option(vs.recentOf(b(k))).exists(_.truncated))) deep += Deep(0, 0, 1)
          vs.cleanup()
          assert(vs.numVersions == entries(store), s"op $i: versions after cleanup; $clue")
          keys.foreach(k => assertRecent(vs, store, k, segment, s"after cleanup, op $i; $clue"))
        case Commit =>
          version = store.commit()
          store = p.getStore(version)
          vs = new VersionedKeyValueStore(store, "t", retention, grace, segment)
        case Restart =>
          version = store.commit()
          p.close()
          p = provider(root)
          store = p.getStore(version)
          vs = new VersionedKeyValueStore(store, "t", retention, grace, segment)
      }
    }
    // a full restart from the checkpoint at the end sees the same versions
    version = store.commit(); p.close()
    p = provider(root)
    val last = p.getStore(version)
    vs = new VersionedKeyValueStore(last, "t", retention, grace, segment)
    keys.foreach { k =>
      assert(str(vs.get(b(k))) == model.get(k))
      model.versions.get(k).foreach(_.keys.foreach(t =>
        assert(str(vs.get(b(k), t)) == model.get(k, t), s"$k as of $t; $clue")
      ))
      assertRecent(vs, last, k, segment)
    }
    assert(vs.numVersions == entries(last), "versions counted at the end")
    if (!program.contains(Cleanup)) assert(vs.numVersions == model.versions.values.map(_.size).sum)
    assert(vs.observedStreamTime == model.streamTime)
    p.close()
    deep
  }

  test("property: the store agrees with the naive model across commits, restarts and cleanups") {
    val keys = Seq("a", "b", "c")
    val ops: Gen[Op] = Gen.frequency(
      8 -> (for (k <- Gen.oneOf(keys); v <- Gen.option(Gen.alphaLowerStr.map(_.take(3))); t <- Gen.choose(0L, 120L))
        yield Put(k, v, t)),
      6 -> (for (k <- Gen.oneOf(keys); t <- Gen.choose(0L, 120L)) yield GetAsOf(k, t)),
      1 -> Gen.const(Commit),
      1 -> Gen.const(Restart),
      1 -> Gen.const(Cleanup)
    )
    forAll(Gen.listOfN(60, ops), Gen.choose(0L, 40L), Gen.choose(0L, 40L), minSuccessful(25)) { (prog, g, extra) =>
      // small segments: cleanups drain the index often
      agrees(prog, keys, retention = g + extra, grace = g, segment = 1L + (g * 7 + extra) % 30)
      ()
    }
  }

  test("property: deep keys (more than 16 versions) and shallow ones agree with the model") {
    val keys = Seq("deep", "a", "b")
    val key = Gen.frequency(6 -> "deep", 1 -> "a", 1 -> "b")
    var deep = Deep(0, 0, 0)
    forAll(
      program(220, key, drift = 2, jitter = 30, lookBack = 250),
      Gen.choose(0L, 200L),
      Gen.choose(0L, 150L),
      Gen.choose(1L, 40L),
      minSuccessful(20)
    ) { (prog, g, extra, segment) =>
      deep += agrees(prog, keys, retention = g + extra, grace = g, segment)
    }
    // the programs went past truncated directories: lookups, out-of-order puts and cleanups
    assert(deep.lookups > 20 && deep.puts > 5 && deep.cleanups > 5, deep)
  }
}

object VersionedKeyValueStoreSuite {
  sealed trait Op
  final case class Put(k: String, v: Option[String], ts: Long) extends Op
  final case class GetAsOf(k: String, asOf: Long) extends Op
  case object Commit extends Op
  case object Restart extends Op
  case object Cleanup extends Op

  /** What a program exercised beyond truncated directories: lookups, out-of-order puts and cleanups. */
  final case class Deep(lookups: Int, puts: Int, cleanups: Int) {
    def +(o: Deep): Deep = Deep(lookups + o.lookups, puts + o.puts, cleanups + o.cleanups)
  }
}
