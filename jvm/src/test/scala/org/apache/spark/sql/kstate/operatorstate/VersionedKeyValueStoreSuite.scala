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

  test("the expiry index holds one entry per key and segment, not per version") {
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
    vs.put(b("k"), b("v10"), 150) // v9 ends at 150: segment 1
    assert(index == 2)
    (1 to 8).foreach(i => assert(str(vs.get(b("k"), i * 10L + 5)) == Some((s"v$i", i * 10L, Some(i * 10L + 10)))))
    vs.put(b("x"), b("x"), 1200) // cutoff 200: segments 0 and 1 are expired
    assert(vs.cleanup() == 9 && index == 0)
    assert(str(vs.get(b("k"))) == Some(("v10", 150L, None)))
    vs.put(b("k"), b("v11"), 1250) // v10 ends at 1250, segment 12: one new entry
    assert(index == 1)
    p.close()
  }

  /** Entries of the store's latest and history families, counted by scanning them. */
  private def entries(store: KStateStore, name: String = "t"): Long =
    Seq("latest", "history").map { f =>
      val it = store.bytes(s"kstate_vs_${name}_$f").scan(Array.emptyByteArray, None)
      try it.size.toLong
      finally it.close()
    }.sum

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
    assert(meta.length == 33 && meta(32) == 2) // stream time, lowest segment, cleaned through, versions, layout 2
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

  test("a store of a newer layout (a later kstate's) fails with KSTATE_CHECKPOINT_FROM_NEWER_KSTATE, not as outdated") {
    val root = ProviderFixture.tmp()
    val p = provider(root)
    val s = p.getStore(0)
    new VersionedKeyValueStore(s, "t", 50, 10, 10).put(b("k"), b("a"), 10)
    val v = s.commit()
    val meta = p.getStore(v).bytes("kstate_vs_t_meta").get(Array[Byte]('t'))
    // layout 3 as a later kstate may write it: the layout byte last, after fields of its own
    for (newer <- Seq(meta.updated(32, 3.toByte), java.util.Arrays.copyOf(meta, 41).updated(40, 3.toByte))) {
      val s1 = p.getStore(v)
      s1.bytes("kstate_vs_t_meta").put(Array[Byte]('t'), newer)
      val w = s1.commit()
      val e = intercept[KStateException](new VersionedKeyValueStore(p.getStore(w), "t", 50, 10, 10))
      assert(e.errorClass == "KSTATE_CHECKPOINT_FROM_NEWER_KSTATE", e.getMessage)
      assert(
        e.getMessage.contains("'t'") && e.getMessage.contains("format version 3") &&
          e.getMessage.contains("reads format version 2") && e.getMessage.contains(root.toString),
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

  /** The directory invariant: the latest entry lists the newest 16 history versions, truncated iff more exist. */
  private def assertDirectory(
      vs: VersionedKeyValueStore,
      store: KStateStore,
      key: String,
      clue: => String = ""
  ): Unit = {
    val dir = vs.directoryOf(b(key))
    val hist = historyOf(store, key)
    if (dir == null) assert(hist.isEmpty, s"$key has history but no latest entry $clue")
    else assert(
      dir == HistoryDirectory.newestOf(hist, more = false),
      s"$key: directory $dir, history ${hist.mkString(",")} $clue"
    )
  }

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
      assert(vs.directoryOf(b("d")) == HistoryDirectory.newestOf((39 to 24 by -1).map(_ * 10L).toArray, more = true))
      assertDirectory(vs, s, "d")
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
      val dir = vs.directoryOf(b("d"))
      assert(
        dir.size == 16 && dir.truncated && dir.from(0) == 395 && dir.from(1) == 390 && dir.from(15) == 250
      ) // 240 dropped
      assert(str(vs.get(b("d"), 397)) == Some(("x", 395L, Some(400L))))
      assert(str(vs.get(b("d"), 392)) == Some(("v39", 390L, Some(395L))))
      assert(vs.put(b("d"), b("y"), 255) == 260) // within: 255 listed, 250 drops out
      assert(vs.directoryOf(b("d")).from(15) == 255)
      assert(vs.historyScans == 0)
      assert(vs.put(b("d"), b("o"), 105) == 110) // older than the truncated directory: scans
      assert(vs.historyScans == 2) // the floor version and the next version's validFrom
      assert(vs.directoryOf(b("d")).from(15) == 255)
      assert(str(vs.get(b("d"), 107)) == Some(("o", 105L, Some(110L))))
      assert(str(vs.get(b("d"), 104)) == Some(("v10", 100L, Some(105L))))
      assert(vs.put(b("d"), b("o2"), 105) == 110) // same timestamp in history: replaced, no new version
      assert(str(vs.get(b("d"), 105)) == Some(("o2", 105L, Some(110L))))
      assertDirectory(vs, s, "d")
      assert(vs.numVersions == 43)
      // an untruncated directory covers every time: a put older than its oldest version is listed last
      vs.put(b("s"), b("a"), 10); vs.put(b("s"), b("b"), 20); vs.put(b("s"), b("c"), 30)
      val scans = vs.historyScans
      assert(vs.put(b("s"), b("z"), 5) == 10)
      assert(vs.directoryOf(b("s")) == HistoryDirectory.newestOf(Array(20L, 10L, 5L), more = false))
      assert(vs.historyScans == scans)
      assertDirectory(vs, s, "s")
    }
  }

  test("same-timestamp puts keep the directory") {
    withScans() { (vs, s) =>
      vs.put(b("k"), b("a"), 10); vs.put(b("k"), b("b"), 20); vs.put(b("k"), b("c"), 30)
      val dir = vs.directoryOf(b("k"))
      assert(dir == HistoryDirectory.newestOf(Array(20L, 10L), more = false))
      assert(vs.put(b("k"), b("c2"), 30) == Latest)
      assert(vs.put(b("k"), null, 30) == Latest) // a tombstone replacing the latest
      assert(vs.put(b("k"), b("b2"), 20) == 30)
      assert(vs.directoryOf(b("k")) == dir && vs.numVersions == 3)
      assert(vs.get(b("k")) == null && str(vs.get(b("k"), 25)) == Some(("b2", 20L, Some(30L))))
      assertDirectory(vs, s, "k")
    }
  }

  test("cleanup: an untruncated key by point deletes, a truncated one by a scan that rebuilds its directory") {
    withScans(retention = 100, grace = 100, segment = 10) { (vs, s) =>
      (1 to 40).foreach(i => vs.put(b("d"), b(s"d$i"), i * 10L))
      (36 to 40).foreach(i => vs.put(b("s"), b(s"s$i"), i * 10L))
      // stream time 400, cutoff 300: d's versions ending before 300 (from 10 to 280) go
      assert(vs.cleanup() == 28)
      assert(vs.historyScans == 1) // d's truncated directory
      assert(vs.directoryOf(b("d")) == HistoryDirectory.newestOf((39 to 29 by -1).map(_ * 10L).toArray, more = false))
      assertDirectory(vs, s, "d"); assertDirectory(vs, s, "s")
      assert(str(vs.get(b("d"), 305)) == Some(("d30", 300L, Some(310L)))) // the cutoff is 300
      assert(vs.historyScans == 1)
      vs.put(b("x"), b("x"), 500) // cutoff 400: d's 290..380 and s's 360..380 end before 400
      assert(vs.cleanup() == 13)
      assert(vs.historyScans == 1) // untruncated: point deletes
      assert(vs.directoryOf(b("d")) == HistoryDirectory.newestOf(Array(390L), more = false))
      assert(vs.directoryOf(b("s")) == HistoryDirectory.newestOf(Array(390L), more = false))
      assertDirectory(vs, s, "d"); assertDirectory(vs, s, "s")
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
      assert(vs.directoryOf(b("z")) == null && historyOf(s, "z").isEmpty)
      assert(vs.numVersions == entries(s) && vs.numVersions == 1)
      assert(vs.put(b("z"), b("new"), 450) == Latest)
      assert(vs.directoryOf(b("z")) == HistoryDirectory.Empty)
      assert(vs.get(b("z"), 449) == null && str(vs.get(b("z"), 450)) == Some(("new", 450L, None)))
    }
  }

  test("cleanup deletes a key's history before its latest tombstone, whose index entry may be older") {
    withScans(retention = 0, grace = 0, segment = 1) { (vs, s) =>
      vs.put(b("c"), null, 57)
      vs.put(b("c"), null, 77) // the tombstone at 57 goes into history: index entries tombstone@57, history@77
      vs.put(b("b"), b("b"), 119) // cutoff 119
      assert(vs.cleanup() == 2)
      assert(vs.directoryOf(b("c")) == null && historyOf(s, "c").isEmpty)
      assert(vs.numVersions == 1 && vs.numVersions == entries(s))
    }
  }

  test("the common path reads the history family by key only: no scan") {
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
      keys.foreach(k => assertDirectory(vs, s, k))
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
    def beyond(k: String, t: Long): Boolean = Option(vs.directoryOf(b(k))).exists(d => !d.covers(t))
    val clue = s"retention $retention grace $grace segment $segment"
    program.zipWithIndex.foreach { case (op, i) =>
      op match {
        case Put(k, v, ts) =>
          if (beyond(k, ts)) deep += Deep(0, 1, 0)
          assert(vs.put(b(k), v.map(b).orNull, ts) == model.put(k, v, ts), s"op $i: put $k@$ts; $clue")
          assert(str(vs.get(b(k))) == model.get(k), s"op $i: get $k after put; $clue")
          assertDirectory(vs, store, k, s"after op $i; $clue")
        case GetAsOf(k, t) =>
          if (beyond(k, t)) deep += Deep(1, 0, 0)
          assert(str(vs.get(b(k), t)) == model.get(k, t), s"op $i: get $k as of $t; $clue")
        case Cleanup =>
          if (keys.exists(k => Option(vs.directoryOf(b(k))).exists(_.truncated))) deep += Deep(0, 0, 1)
          vs.cleanup()
          assert(vs.numVersions == entries(store), s"op $i: versions after cleanup; $clue")
          keys.foreach(k => assertDirectory(vs, store, k, s"after cleanup, op $i; $clue"))
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
      assertDirectory(vs, last, k)
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
