package org.apache.spark.sql.kstate.state.versioned

import scala.collection.immutable.TreeMap

import io.kstate.KStateException
import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

import org.apache.spark.sql.kstate.state.{KStateStore, KStateStoreProvider, ProviderFixture}
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
      f: VersionedKeyValueStore => Unit): Unit = {
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
    def index = { val it = s.bytes("kstate_vs_t_expiry").scan(Array.emptyByteArray, None); try it.size finally it.close() }
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
      try it.size.toLong finally it.close()
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

  test("numVersions of a store whose meta predates the count: counted once, when opened") {
    val root = ProviderFixture.tmp()
    val p = provider(root)
    val s = p.getStore(0)
    val vs = new VersionedKeyValueStore(s, "t", 50, 10, 10)
    vs.put(b("k"), b("a"), 10); vs.put(b("k"), b("b"), 20); vs.put(b("x"), null, 20)
    var v = s.commit()
    // rewrite the meta as it was before the count: stream time, lowest segment, cleaned through
    val s1 = p.getStore(v)
    val meta = s1.bytes("kstate_vs_t_meta")
    val old = meta.get(Array[Byte]('t'))
    assert(old.length == 32)
    meta.put(Array[Byte]('t'), java.util.Arrays.copyOf(old, 24))
    v = s1.commit()
    val vs2 = new VersionedKeyValueStore(p.getStore(v), "t", 50, 10, 10)
    assert(vs2.numVersions == 3)
    p.close()
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

  private val ops: Gen[Op] = {
    val key = Gen.oneOf("a", "b", "c")
    val ts = Gen.choose(0L, 120L)
    Gen.frequency(
      8 -> (for (k <- key; v <- Gen.option(Gen.alphaLowerStr.map(_.take(3))); t <- ts) yield Put(k, v, t)),
      6 -> (for (k <- key; t <- ts) yield GetAsOf(k, t)),
      1 -> Gen.const(Commit), 1 -> Gen.const(Restart), 1 -> Gen.const(Cleanup))
  }

  test("property: the store agrees with the naive model across commits, restarts and cleanups") {
    forAll(Gen.listOfN(60, ops), Gen.choose(0L, 40L), Gen.choose(0L, 40L),
      minSuccessful(25)) { (program, g, extra) =>
      val (retention, grace) = (g + extra, g)
      val segment = 1L + (g * 7 + extra) % 30 // small segments: cleanups drain the index often
      val model = new Model(retention, grace)
      val root = ProviderFixture.tmp()
      var p = provider(root)
      var version = 0L
      var store: KStateStore = p.getStore(version)
      var vs = new VersionedKeyValueStore(store, "t", retention, grace, segment)
      program.foreach {
        case Put(k, v, ts) =>
          assert(vs.put(b(k), v.map(b).orNull, ts) == model.put(k, v, ts), s"put $k@$ts")
          assert(str(vs.get(b(k))) == model.get(k), s"get $k after put")
        case GetAsOf(k, t) =>
          assert(str(vs.get(b(k), t)) == model.get(k, t), s"get $k as of $t")
        case Cleanup =>
          vs.cleanup()
          assert(vs.numVersions == entries(store), "versions after cleanup")
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
      // a full restart from the checkpoint at the end sees the same latest values
      version = store.commit(); p.close()
      p = provider(root)
      val last = p.getStore(version)
      vs = new VersionedKeyValueStore(last, "t", retention, grace, segment)
      Seq("a", "b", "c").foreach(k => assert(str(vs.get(b(k))) == model.get(k)))
      assert(vs.numVersions == entries(last), "versions counted at the end")
      if (!program.contains(Cleanup)) assert(vs.numVersions == model.versions.values.map(_.size).sum)
      assert(vs.observedStreamTime == model.streamTime)
      p.close()
    }
  }
}

object VersionedKeyValueStoreSuite {
  sealed trait Op
  final case class Put(k: String, v: Option[String], ts: Long) extends Op
  final case class GetAsOf(k: String, asOf: Long) extends Op
  case object Commit extends Op
  case object Restart extends Op
  case object Cleanup extends Op
}
