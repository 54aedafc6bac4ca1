package org.apache.spark.sql.kstate.provider

import java.io.File

import scala.collection.immutable.TreeMap
import scala.collection.mutable
import scala.util.{Random, Try}

import org.apache.spark.SparkException
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

import StateStoreConformanceSupport._

/** Optional parts of the StateStore API; a suite runs a feature's cases only if it supports it. */
sealed abstract class StoreFeature(val description: String) {
  override def toString: String = description
}

object StoreFeature {

  /** useColumnFamilies = true, createColFamilyIfAbsent / removeColFamilyIfExists. */
  case object ColumnFamilies extends StoreFeature("column families")

  /** useMultipleValuesPerKey = true: merge, mergeList, putList, valuesIterator. */
  case object MultipleValuesPerKey extends StoreFeature("multiple values per key")

  /** PrefixKeyScanStateEncoderSpec and prefixScan. */
  case object PrefixScan extends StoreFeature("prefix scan")

  /** RangeKeyScanStateEncoderSpec: iterator() in ordering-column order. */
  case object RangeScanEncoding extends StoreFeature("range-scan key encoding")

  /** ReadStateStore.rangeScan(start, end) (a default method that throws). */
  case object RangeScan extends StoreFeature("rangeScan")

  /** StateStore.deleteRange(begin, end) (a default method that throws). */
  case object DeleteRange extends StoreFeature("deleteRange")

  /**
   * deleteRange in a store opened with useColumnFamilies = false. RocksDB rejects it when
   * changelog checkpointing is on (its v1 changelog format, used without column families, has
   * no delete-range record).
   */
  case object DeleteRangeWithoutColumnFamilies extends StoreFeature("deleteRange without column families")

  /** ReadStateStore.multiGet (a default method that throws). */
  case object MultiGet extends StoreFeature("multiGet")

  val all: Seq[StoreFeature] =
    Seq(
      ColumnFamilies,
      MultipleValuesPerKey,
      PrefixScan,
      RangeScanEncoding,
      RangeScan,
      DeleteRange,
      DeleteRangeWithoutColumnFamilies,
      MultiGet
    )
}

/**
 * The provider-level StateStore contract, checked the same way against any
 * StateStoreProvider: Spark's HDFS-backed and RocksDB providers (which define the contract
 * in practice) and kstate's. Cases a provider cannot run (see `supports`) are replaced by a
 * check that the provider rejects the feature loudly instead of misbehaving.
 *
 * No SparkSession/SparkEnv is needed: both Spark providers work at the provider API level
 * without one (and without a TaskContext).
 */
abstract class StateStoreConformanceSuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  import StateStoreConformanceSuite._
  import StoreFeature._

  def providerClassName: String
  def supports(feature: StoreFeature): Boolean

  /** Extra SQL confs for every store of this suite (e.g. RocksDB changelog checkpointing). */
  protected def extraConf: Map[String, String] = Map.empty

  /**
   * numKeys reported after commit when spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows
   * is false; None if the provider ignores that flag (numKeys must then still be the row count).
   */
  protected def numKeysWhenRowCountUntracked: Option[Long] = None

  /**
   * Checks what getStore(v) threw for a version v that was never committed. Both Spark
   * providers throw a SparkException with condition CANNOT_LOAD_STATE_STORE.* (HDFS:
   * .CANNOT_READ_DELTA_FILE_NOT_EXISTS, RocksDB: .CANNOT_READ_STREAMING_STATE_FILE).
   */
  protected def assertCannotLoad(e: Throwable): Unit = e match {
    case se: SparkException =>
      assert(se.getCondition != null && se.getCondition.startsWith("CANNOT_LOAD_STATE_STORE"), se.getMessage)
    case other => fail(s"expected a SparkException with condition CANNOT_LOAD_STATE_STORE.*, got $other", other)
  }

  protected final def describe(e: Throwable): String = e match {
    case se: SparkException => s"${e.getClass.getName} ${se.getCondition}"
    case _ => e.getClass.getName
  }

  protected final def expectCannotLoad(load: => Any): Throwable = {
    val e = intercept[Exception](load)
    assertCannotLoad(e)
    e
  }

  /** Whether numKeys after a commit that used deleteRange is the exact row count. */
  protected def numKeysExactAfterDeleteRange: Boolean = true

  protected def baseConf: Map[String, String] = Map(
    // Small, so the providers write snapshots (at commit or in maintenance) during the tests.
    "spark.sql.streaming.stateStore.minDeltasForSnapshot" -> "2",
    "spark.sql.streaming.minBatchesToRetain" -> "100",
    TrackRowsConf -> "true"
  )

  // ---------------------------------------------------------------------------------------
  // plumbing

  protected final class StoreDir(val root: File) {
    val factory = new ProviderFactory(providerClassName, root, baseConf ++ extraConf)
    private val opened = mutable.ArrayBuffer.empty[StateStoreProvider]

    /** A new provider instance over this directory (as after an executor change). */
    def provider(setup: StoreSetup, overrides: Map[String, String] = Map.empty): StateStoreProvider = {
      val p = factory.create(setup, overrides)
      opened += p
      p
    }

    private val stores = mutable.ArrayBuffer.empty[StateStore]

    /** p.getStore(version), remembered so that a failing case still aborts it before closing. */
    def open(p: StateStoreProvider, version: Long): StateStore = {
      val s = p.getStore(version)
      stores += s
      s
    }

    def closeAll(): Unit = {
      // An open (uncommitted, unaborted) RocksDB store holds the instance's lock: close() would
      // wait for it to time out.
      stores.foreach(s => if (!s.hasCommitted) Try(s.abort()))
      opened.foreach(p => Try(p.close()))
    }
  }

  protected def withStoreDir[A](body: StoreDir => A): A = {
    val dir = new StoreDir(tempDir("kstate-conformance"))
    try body(dir)
    finally {
      dir.closeAll()
      deleteRecursively(dir.root)
    }
  }

  /** Loads `version`, runs `f`, and aborts: a read that leaves the store at `version`. */
  protected def readVersion[A](p: StateStoreProvider, version: Long)(f: StateStore => A): A = {
    val s = p.getStore(version)
    try f(s)
    finally s.abort()
  }

  /** A case needing `features`; if any is unsupported it is not registered (see the rejection cases). */
  protected def conformance(name: String, features: StoreFeature*)(body: => Any): Unit = {
    val missing = features.filterNot(supports)
    if (missing.isEmpty) test(name)(body)
    else ignore(s"$name [not supported: ${missing.mkString(", ")}]")(())
  }

  // ---------------------------------------------------------------------------------------
  // the key/value model: key (id INT, name STRING), value (count LONG, label STRING)

  protected val plain: StoreSetup = StoreSetup(KeySchema, ValueSchema, NoPrefixKeyStateEncoderSpec(KeySchema))

  protected def key(id: Int): UnsafeRow = row(KeySchema, id, s"key-$id")
  protected def value(v: Val): UnsafeRow = row(ValueSchema, v._1, v._2)
  protected def decodeValue(r: UnsafeRow): Val =
    if (r == null) null else (r.getLong(0), if (r.isNullAt(1)) null else r.getUTF8String(1).toString)
  protected def decodeKey(r: UnsafeRow): Int = {
    val id = r.getInt(0)
    assert(r.getUTF8String(1).toString == s"key-$id", s"key row ${fields(KeySchema, r)} is inconsistent")
    id
  }

  /** The whole content of a column family via iterator(), checking it has no duplicate keys. */
  protected def contents(s: ReadStateStore, cf: String = Default): Model = {
    val it = s.iterator(cf)
    val pairs =
      try it.map(p => decodeKey(p.key) -> decodeValue(p.value)).toList
      finally it.close()
    val m = TreeMap(pairs: _*)
    assert(m.size == pairs.size, s"iterator returned duplicate keys: $pairs")
    m
  }

  /** Applies random puts/removes/reads to the store and the model alike; reads are checked. */
  protected def randomOps(s: StateStore, start: Model, rnd: Random, keySpace: Int = 40): Model = {
    var model = start
    val n = rnd.nextInt(25)
    (0 until n).foreach { _ =>
      val id = rnd.nextInt(keySpace) - 5 // includes negative ids
      rnd.nextInt(10) match {
        case r if r < 6 =>
          val v: Val =
            (rnd.nextLong(), if (rnd.nextInt(8) == 0) null else rnd.alphanumeric.take(rnd.nextInt(20)).mkString)
          s.put(key(id), value(v))
          model += id -> v
        case r if r < 8 =>
          s.remove(key(id))
          model -= id
        case _ =>
          assert(decodeValue(s.get(key(id))) == model.getOrElse(id, null), s"get($id)")
          assert(s.keyExists(key(id), Default) == model.contains(id), s"keyExists($id)")
      }
    }
    model
  }

  // ---------------------------------------------------------------------------------------
  // core key/value and version semantics

  test("put/get/remove: absent key reads null, put overwrites, remove of an absent key is a no-op") {
    withStoreDir { dir =>
      val p = dir.provider(plain)
      val s = dir.open(p, 0)
      assert(s.version == 0)
      assert(s.get(key(1)) == null)
      assert(!s.keyExists(key(1), Default))
      s.put(key(1), value((10L, "ten")))
      s.put(key(2), value((20L, "twenty")))
      assert(decodeValue(s.get(key(1))) == ((10L, "ten")))
      s.put(key(1), value((11L, "eleven")))
      assert(decodeValue(s.get(key(1))) == ((11L, "eleven")))
      s.remove(key(2))
      s.remove(key(99))
      assert(s.get(key(2)) == null)
      assert(s.keyExists(key(1), Default))
      assert(!s.keyExists(key(2), Default))
      // Null fields inside rows are values like any other.
      s.put(key(3), value((0L, null)))
      assert(decodeValue(s.get(key(3))) == ((0L, null)))
      assert(contents(s) == TreeMap(1 -> ((11L, "eleven")), 3 -> ((0L, null))))
      assert(s.commit() == 1)
    }
  }

  test("commit returns the loaded version + 1; hasCommitted; numKeys after commit is the row count") {
    withStoreDir { dir =>
      val p = dir.provider(plain)
      var model: Model = TreeMap.empty
      for (v <- 0 until 4) {
        val s = dir.open(p, v)
        assert(s.version == v)
        assert(!s.hasCommitted)
        (0 to v).foreach { i => s.put(key(i * 3), value((i.toLong, "x"))); model += (i * 3) -> ((i.toLong, "x")) }
        if (v > 0) { s.remove(key(0)); model -= 0 }
        assert(s.commit() == v + 1)
        assert(s.hasCommitted)
        // Metrics are read after commit (RocksDB refuses metrics() while updating).
        assert(s.metrics.numKeys == model.size)
      }
      // A version that only reads commits too, to the next version, with the same content.
      val s = dir.open(p, 4)
      assert(s.commit() == 5)
      assert(s.metrics.numKeys == model.size)
      readVersion(dir.provider(plain), 5)(r => assert(contents(r) == model))
    }
  }

  test("numKeys when the RocksDB row count tracking flag is off") {
    withStoreDir { dir =>
      val p = dir.provider(plain, Map(TrackRowsConf -> "false"))
      val s = dir.open(p, 0)
      (1 to 5).foreach(i => s.put(key(i), value((i.toLong, ""))))
      s.commit()
      val n = s.metrics.numKeys
      info(s"numKeys with $TrackRowsConf=false: $n (5 rows)")
      numKeysWhenRowCountUntracked match {
        case Some(expected) => assert(n == expected)
        case None => assert(n == 5, "a provider that ignores the flag reports the row count")
      }
    }
  }

  test("random operations over many versions match a TreeMap model; every version reloads exactly") {
    withStoreDir { dir =>
      val rnd = new Random(0x5eed)
      val versions = 16
      val snapshots = mutable.ArrayBuffer[Model](TreeMap.empty)
      var p = dir.provider(plain)
      var model: Model = TreeMap.empty
      for (v <- 1 to versions) {
        if (rnd.nextInt(4) == 0) { // a failed attempt at this version first
          val failed = dir.open(p, v - 1)
          randomOps(failed, model, rnd)
          failed.abort()
        }
        val s = dir.open(p, v - 1)
        assert(s.version == v - 1)
        assert(contents(s) == model, s"content of version ${v - 1} when loaded for writing")
        model = randomOps(s, model, rnd)
        assert(contents(s) == model, s"uncommitted content of version $v")
        assert(s.commit() == v)
        assert(s.metrics.numKeys == model.size, s"numKeys of version $v")
        snapshots += model
        if (v % 3 == 0) p.doMaintenance()
        if (v == versions / 2) p = dir.provider(plain) // a restart in the middle
      }
      // The writing instance reads any older version (out of order) ...
      rnd.shuffle((0 to versions).toList).foreach { v =>
        readVersion(p, v)(s => assert(contents(s) == snapshots(v), s"version $v on the writing instance"))
      }
      // ... and so does a new instance, which can then go on writing from the latest one.
      val fresh = dir.provider(plain)
      rnd.shuffle((0 to versions).toList).foreach { v =>
        readVersion(fresh, v)(s => assert(contents(s) == snapshots(v), s"version $v on a new instance"))
      }
      val s = dir.open(fresh, versions)
      s.put(key(1000), value((1L, "after reload")))
      assert(s.commit() == versions + 1)
      readVersion(dir.provider(plain), versions + 1) { r =>
        assert(contents(r) == snapshots(versions) + (1000 -> ((1L, "after reload"))))
      }
    }
  }

  test("property: batches of puts and removes reload exactly at every version (scalacheck)") {
    val op: Gen[Op] = Gen.oneOf(
      for (id <- Gen.choose(-3, 12); c <- Gen.choose(Long.MinValue, Long.MaxValue); l <- Gen.alphaNumStr)
        yield Put(id, c, l),
      Gen.choose(-3, 12).map(Remove(_))
    )
    val batches: Gen[List[List[Op]]] =
      Gen.choose(1, 6).flatMap(n => Gen.listOfN(n, Gen.choose(0, 15).flatMap(m => Gen.listOfN(m, op))))
    forAll(batches, minSuccessful(6)) { bs =>
      withStoreDir { dir =>
        val p = dir.provider(plain)
        val snapshots = mutable.ArrayBuffer[Model](TreeMap.empty)
        bs.zipWithIndex.foreach { case (batch, i) =>
          val s = dir.open(p, i)
          val m = batch.foldLeft(snapshots.last) {
            case (acc, Put(id, c, l)) => s.put(key(id), value((c, l))); acc + (id -> ((c, l)))
            case (acc, Remove(id)) => s.remove(key(id)); acc - id
          }
          assert(s.commit() == i + 1)
          snapshots += m
          if (i % 2 == 1) p.doMaintenance()
        }
        val fresh = dir.provider(plain)
        snapshots.indices.reverse.foreach { v =>
          readVersion(fresh, v)(s => assert(contents(s) == snapshots(v), s"version $v of $bs"))
        }
      }
    }
  }

  test("abort discards changes; the same version can be reopened and committed differently") {
    withStoreDir { dir =>
      val p = dir.provider(plain)
      val s0 = dir.open(p, 0)
      s0.put(key(1), value((1L, "a")))
      s0.put(key(2), value((2L, "b")))
      s0.commit()

      val attempt = dir.open(p, 1)
      attempt.put(key(3), value((3L, "c")))
      attempt.remove(key(1))
      attempt.put(key(2), value((22L, "bb")))
      attempt.abort()
      assert(!attempt.hasCommitted)
      // Nothing of the aborted attempt is visible or committed.
      expectCannotLoad(dir.open(p, 2))

      val retry = dir.open(p, 1)
      assert(contents(retry) == TreeMap(1 -> ((1L, "a")), 2 -> ((2L, "b"))))
      retry.put(key(4), value((4L, "d")))
      assert(retry.commit() == 2)
      val expected = TreeMap(1 -> ((1L, "a")), 2 -> ((2L, "b")), 4 -> ((4L, "d")))
      readVersion(p, 2)(r => assert(contents(r) == expected))
      readVersion(dir.provider(plain), 2)(r => assert(contents(r) == expected))
      // An aborted store at version 0 leaves a fresh directory empty-but-loadable at 0 only.
      withStoreDir { other =>
        val q = other.provider(plain)
        val a = other.open(q, 0)
        a.put(key(1), value((1L, "x")))
        a.abort()
        readVersion(q, 0)(r => assert(contents(r).isEmpty))
        expectCannotLoad(other.open(q, 1))
      }
    }
  }

  test("re-committing an already committed version (a retried batch) replaces it") {
    withStoreDir { dir =>
      val p = dir.provider(plain)
      val s0 = dir.open(p, 0)
      s0.put(key(1), value((1L, "a")))
      s0.commit()
      val first = dir.open(p, 1)
      first.put(key(2), value((2L, "first")))
      assert(first.commit() == 2)
      val second = dir.open(p, 1)
      assert(contents(second) == TreeMap(1 -> ((1L, "a"))))
      second.put(key(3), value((3L, "second")))
      assert(second.commit() == 2)
      val expected = TreeMap(1 -> ((1L, "a")), 3 -> ((3L, "second")))
      readVersion(p, 2)(r => assert(contents(r) == expected))
      readVersion(dir.provider(plain), 2)(r => assert(contents(r) == expected))
    }
  }

  test("getStore of a version that was never committed fails with CANNOT_LOAD_STATE_STORE") {
    withStoreDir { dir =>
      val p = dir.provider(plain)
      val e0 = expectCannotLoad(dir.open(p, 1))
      info(s"empty dir, getStore(1): ${describe(e0)}")
      val s = dir.open(p, 0)
      s.put(key(1), value((1L, "a")))
      s.commit()
      for (v <- Seq(2L, 7L)) {
        val e = expectCannotLoad(dir.open(p, v))
        info(s"getStore($v) after committing 1: ${describe(e)}")
      }
      val neg = intercept[Exception](dir.open(p, -1))
      info(s"getStore(-1): ${describe(neg)}")
      // The provider stays usable after a failed load.
      val again = dir.open(p, 1)
      assert(contents(again) == TreeMap(1 -> ((1L, "a"))))
      assert(again.commit() == 2)
    }
  }

  test("iterator returns exactly the entries, including uncommitted puts and removes") {
    withStoreDir { dir =>
      val p = dir.provider(plain)
      val s = dir.open(p, 0)
      assert(contents(s).isEmpty)
      (1 to 50).foreach(i => s.put(key(i), value((i.toLong, s"v$i"))))
      (1 to 50 by 7).foreach(i => s.remove(key(i)))
      val expected = TreeMap((1 to 50).filterNot(i => (i - 1) % 7 == 0).map(i => i -> ((i.toLong, s"v$i"))): _*)
      assert(contents(s) == expected)
      s.commit()
      val s1 = dir.open(p, 1)
      s1.remove(key(2))
      s1.put(key(100), value((100L, "new")))
      assert(contents(s1) == expected - 2 + (100 -> ((100L, "new"))))
      s1.abort()
    }
  }

  test("rows returned by get, iterator and multiGet: copies are stable; put copies its inputs") {
    withStoreDir { dir =>
      val p = dir.provider(plain)
      val s = dir.open(p, 0)
      s.put(key(1), value((1L, "one")))
      s.put(key(2), value((2L, "two-two")))

      val g1 = s.get(key(1))
      val g1Copy = g1.copy()
      val g2 = s.get(key(2))
      assert(decodeValue(g1Copy) == ((1L, "one")))
      assert(decodeValue(g2) == ((2L, "two-two")))
      info(s"get reuses its result row: ${(g1 eq g2) || decodeValue(g1) != ((1L, "one"))}")

      val it = s.iterator()
      val raw =
        try it.map(pr => (pr, pr.key, pr.value)).toList
        finally it.close()
      info(s"iterator reuses the UnsafeRowPair: ${raw.map(_._1).distinct.size < raw.size}; " +
        s"reuses key rows: ${raw.map(_._2).distinct.size < raw.size}; " +
        s"stale uncopied keys: ${raw.map(r => r._2.getInt(0)).distinct.size < raw.size}")
      val it2 = s.iterator()
      val copied =
        try it2.map(pr => (pr.key.copy(), pr.value.copy())).toList
        finally it2.close()
      assert(copied.map { case (k, v) => decodeKey(k) -> decodeValue(v) }.toMap ==
        Map(1 -> ((1L, "one")), 2 -> ((2L, "two-two"))))

      if (supports(MultiGet)) {
        val rows = s.multiGet(Array(key(2), key(1)), Default).toList
        info(s"multiGet rows (uncopied) still distinct after materialising: " +
          s"${rows.map(decodeValue).distinct.size == 2}")
      }

      // Keys and values handed to put are copied (callers reuse projection buffers).
      val kProj = UnsafeProjection.create(KeySchema)
      val vProj = UnsafeProjection.create(ValueSchema)
      val k = kProj(InternalRow(3, UTF8String.fromString("key-3")))
      val v = vProj(InternalRow(3L, UTF8String.fromString("three")))
      s.put(k, v)
      val k2 = kProj(InternalRow(4, UTF8String.fromString("key-4")))
      val v2 = vProj(InternalRow(4L, UTF8String.fromString("four!")))
      assert((k2 eq k) && (v2 eq v), "the projection reuses its output row (premise of this check)")
      assert(decodeValue(s.get(key(3))) == ((3L, "three")))
      assert(s.get(key(4)) == null)
      // A row read from the store and put back (read-modify-write) is fine.
      val back = s.get(key(3))
      s.put(key(5), back)
      assert(decodeValue(s.get(key(5))) == ((3L, "three")))
      s.commit()
      readVersion(dir.provider(plain), 1) { r =>
        assert(contents(r) == TreeMap(
          1 -> ((1L, "one")),
          2 -> ((2L, "two-two")),
          3 -> ((3L, "three")),
          5 -> ((3L, "three"))
        ))
      }
    }
  }

  conformance("multiGet returns values in key order, null for absent keys", MultiGet) {
    withStoreDir { dir =>
      val p = dir.provider(plain)
      val s = dir.open(p, 0)
      (1 to 5).foreach(i => s.put(key(i), value((i.toLong, s"v$i"))))
      val got = s.multiGet(Array(key(4), key(9), key(1), key(4)), Default)
        .map(r => if (r == null) null else decodeValue(r.copy())).toList
      assert(got == List((4L, "v4"), null, (1L, "v1"), (4L, "v4")))
      assert(s.multiGet(Array.empty[UnsafeRow], Default).isEmpty)
      s.abort()
    }
  }

  test("maintenance: the last minBatchesToRetain versions stay loadable") {
    withStoreDir { dir =>
      val retain = 3
      val overrides = Map("spark.sql.streaming.minBatchesToRetain" -> retain.toString)
      val p = dir.provider(plain, overrides)
      val rnd = new Random(42)
      val snapshots = mutable.ArrayBuffer[Model](TreeMap.empty)
      val versions = 12
      for (v <- 1 to versions) {
        val s = dir.open(p, v - 1)
        val m = randomOps(s, snapshots.last, rnd)
        s.put(key(v), value((v.toLong, "marker"))) // every version differs
        s.commit()
        snapshots += m + (v -> ((v.toLong, "marker")))
        p.doMaintenance()
      }
      p.doMaintenance()
      for (v <- versions - retain + 1 to versions) {
        readVersion(dir.provider(plain, overrides), v)(s => assert(contents(s) == snapshots(v), s"version $v"))
      }
      val older = (0 to versions - retain).filter { v =>
        Try(readVersion(dir.provider(plain, overrides), v)(s => contents(s) == snapshots(v))).getOrElse(false)
      }
      info(s"older versions still loadable after maintenance: ${older.mkString(",")}")
      // Writing continues from the latest version after maintenance.
      val s = dir.open(dir.provider(plain, overrides), versions)
      assert(s.commit() == versions + 1)
    }
  }

  // ---------------------------------------------------------------------------------------
  // prefix scan

  conformance("prefix scan with 1 and 2 prefix columns returns exactly the matching entries", PrefixScan) {
    val k3 = StructType(Seq(
      StructField("a", IntegerType),
      StructField("b", StringType),
      StructField("c", LongType)
    ))
    for (n <- Seq(1, 2)) withStoreDir { dir =>
      val setup = StoreSetup(k3, ValueSchema, PrefixKeyScanStateEncoderSpec(k3, n))
      val prefixSchema = StructType(k3.fields.take(n))
      type K3 = (Int, String, Long)
      var model = Map.empty[K3, Val]
      def put(s: StateStore, k: K3, v: Val): Unit = { s.put(row(k3, k._1, k._2, k._3), value(v)); model += k -> v }
      def scan(s: ReadStateStore, prefix: Seq[Any]): Map[K3, Val] = {
        val it = s.prefixScan(row(prefixSchema, prefix: _*), Default)
        val l =
          try it.map { pr =>
              val f = fields(k3, pr.key)
              (f(0).asInstanceOf[Int], f(1).asInstanceOf[String], f(2).asInstanceOf[Long]) -> decodeValue(pr.value)
            }.toList
          finally it.close()
        assert(l.map(_._1).distinct.size == l.size, s"duplicates in prefix scan $prefix")
        l.toMap
      }
      def expected(prefix: Seq[Any]): Map[K3, Val] =
        model.filter { case (k, _) => Seq[Any](k._1, k._2, k._3).take(n) == prefix }
      val as = Seq(1, 2, -3)
      val bs = Seq[String]("x", "y", "", null)
      val prefixes: Seq[Seq[Any]] =
        if (n == 1) (as :+ 99).map(Seq(_)) else (for (a <- as :+ 99; b <- bs :+ "zz") yield Seq[Any](a, b))
      def checkAll(s: ReadStateStore): Unit =
        prefixes.foreach(pr => assert(scan(s, pr) == expected(pr), s"prefix $pr"))

      val p = dir.provider(setup)
      val s = dir.open(p, 0)
      for (a <- as; b <- bs; c <- Seq(2L, -1L, 0L)) put(s, (a, b, c), (c, s"$a$b"))
      checkAll(s)
      s.commit()
      val s1 = dir.open(p, 1)
      s1.remove(row(k3, 1, "x", 2L)); model -= ((1, "x", 2L))
      s1.remove(row(k3, 2, null, -1L)); model -= ((2, null, -1L))
      put(s1, (1, "y", 0L), (100L, "updated"))
      put(s1, (7, "new", 1L), (7L, "new"))
      checkAll(s1) // uncommitted changes are visible to prefixScan
      s1.commit()
      readVersion(dir.provider(setup), 2)(checkAll)
    }
  }

  // ---------------------------------------------------------------------------------------
  // range-scan encoding and rangeScan / deleteRange

  conformance(
    "range-scan encoding orders iterator() by the ordering columns (negatives, NaN, nulls last)",
    RangeScanEncoding
  ) {
    val k4 = StructType(Seq(
      StructField("i", IntegerType),
      StructField("l", LongType),
      StructField("d", DoubleType),
      StructField("s", StringType)
    ))
    val rnd = new Random(7)
    val ints = Seq[Any](Int.MinValue, -100, -1, 0, 1, 3, Int.MaxValue, null)
    val longs = Seq[Any](Long.MinValue, -7L, -1L, 0L, 1L, 1L << 40, Long.MaxValue, null)
    val doubles = Seq[Any](
      Double.NegativeInfinity,
      -1.5,
      -1e-300,
      -0.0,
      0.0,
      1e-300,
      3.0,
      Double.PositiveInfinity,
      Double.NaN,
      null
    )
    def pick(xs: Seq[Any]): Any = xs(rnd.nextInt(xs.length))
    val keys = (0 until 80).map(i => Seq[Any](pick(ints), pick(longs), pick(doubles), s"s${i % 5}")).distinct
    for (ordinals <- Seq(Seq(0), Seq(1), Seq(2), Seq(0, 1), Seq(2, 0), Seq(1, 2, 0))) withStoreDir { dir =>
      val setup = StoreSetup(k4, ValueSchema, RangeKeyScanStateEncoderSpec(k4, ordinals))
      def order(s: ReadStateStore): Seq[Seq[Any]] = {
        val it = s.iterator(Default)
        try it.map(pr => ordinals.map(fields(k4, pr.key)).map(canonical)).toList
        finally it.close()
      }
      def sorted(ks: Seq[Seq[Any]]): Seq[Seq[Any]] =
        ks.map(k => ordinals.map(k)).sorted(OrderingColumns).map(_.map(canonical))
      val p = dir.provider(setup)
      val s = dir.open(p, 0)
      keys.foreach(k => s.put(row(k4, k: _*), value((0L, k.mkString(",")))))
      assert(order(s) == sorted(keys), s"ordinals $ordinals, uncommitted")
      val removed = keys.filter(_ => rnd.nextInt(4) == 0).toSet
      removed.foreach(k => s.remove(row(k4, k: _*)))
      val left = keys.filterNot(removed)
      assert(order(s) == sorted(left), s"ordinals $ordinals, after removes")
      assert(contentsAny(s, k4).size == left.size)
      s.commit()
      readVersion(dir.provider(setup), 1)(r => assert(order(r) == sorted(left), s"ordinals $ordinals, reloaded"))
    }
  }

  private def contentsAny(s: ReadStateStore, schema: StructType): Map[Seq[Any], Val] = {
    val it = s.iterator(Default)
    try it.map(pr => fields(schema, pr.key) -> decodeValue(pr.value)).toMap
    finally it.close()
  }

  /** Key (ts LONG, name STRING), range-encoded on ts: the shape of a time index. */
  private val tsKey = StructType(Seq(StructField("ts", LongType), StructField("name", StringType)))
  private def tsRow(ts: Long, name: String): UnsafeRow = row(tsKey, ts, name)
  private def tsKeys(it: StateStoreIterator[UnsafeRowPair]): List[(Long, String)] =
    try it.map(pr => (pr.key.getLong(0), if (pr.key.isNullAt(1)) null else pr.key.getUTF8String(1).toString)).toList
    finally it.close()
  private val tsSetup = StoreSetup(tsKey, ValueSchema, RangeKeyScanStateEncoderSpec(tsKey, Seq(0)))

  conformance(
    "rangeScan(start, end) is [start, end) over full encoded keys, None is unbounded",
    RangeScanEncoding,
    RangeScan
  ) {
    withStoreDir { dir =>
      val p = dir.provider(tsSetup)
      val s = dir.open(p, 0)
      val all = for (ts <- -3L to 6L; n <- Seq("a", "b")) yield (ts, n)
      all.foreach { case (ts, n) => s.put(tsRow(ts, n), value((ts, n))) }
      def rs(st: ReadStateStore, a: Option[(Long, String)], b: Option[(Long, String)]) =
        tsKeys(st.rangeScan(a.map((tsRow _).tupled), b.map((tsRow _).tupled), Default))
      def checks(st: ReadStateStore, data: Seq[(Long, String)]): Unit = {
        def sel(lo: Option[(Long, String)], hi: Option[(Long, String)]) =
          data.filter(k => lo.forall(KeyOrder.gteq(k, _)) && hi.forall(KeyOrder.lt(k, _))).toList
        def check(lo: Option[(Long, String)], hi: Option[(Long, String)]): Unit =
          assert(rs(st, lo, hi) == sel(lo, hi), s"rangeScan($lo, $hi)")
        // Bounds are whole keys: start inclusive, end exclusive, compared on ts, then the other
        // columns (here name: "" < "a" < "b" < null).
        check(Some((2L, "a")), Some((4L, "a")))
        check(Some((2L, "b")), Some((4L, "b")))
        assert(rs(st, Some((2L, "b")), Some((4L, "b"))).head == ((2L, "b")))
        assert(rs(st, Some((2L, "b")), Some((4L, "b"))).last == ((4L, "a")))
        check(Some((2L, null)), Some((4L, null)))
        // A bound whose non-ordering columns are zero/empty is the smallest key of its ts.
        check(Some((-2L, "")), Some((1L, "")))
        assert(rs(st, Some((-2L, "")), Some((1L, ""))) == data.filter(k => k._1 >= -2 && k._1 < 1).toList)
        check(None, Some((0L, "")))
        check(Some((5L, "")), None)
        assert(rs(st, None, None) == data.toList)
        assert(rs(st, Some((4L, "a")), Some((2L, "a"))).isEmpty)
        assert(rs(st, Some((3L, "a")), Some((3L, "a"))).isEmpty)
        assert(rs(st, Some((100L, "")), None).isEmpty)
      }
      checks(s, all)
      // Values come with the keys.
      val it = s.rangeScan(Some(tsRow(1L, "")), Some(tsRow(2L, "")), Default)
      try assert(it.map(pr => decodeValue(pr.value)).toList == List((1L, "a"), (1L, "b")))
      finally it.close()
      // Uncommitted puts and removes are visible.
      s.remove(tsRow(0L, "a"))
      s.put(tsRow(0L, "c"), value((0L, "c")))
      val data = all.filterNot(_ == ((0L, "a"))) :+ ((0L, "c"))
      val sortedData = data.sorted(KeyOrder)
      checks(s, sortedData)
      assert(rs(s, Some((0L, "")), Some((1L, ""))) == List((0L, "b"), (0L, "c")))
      s.commit()
      readVersion(dir.provider(tsSetup), 1)(r => checks(r, sortedData))
    }
  }

  /**
   * deleteRange over the time key, either in the default column family of a range-encoded
   * store or in a range-encoded column family of a column-family store.
   */
  private def deleteRangeCase(inColumnFamily: Boolean): Unit = withStoreDir { dir =>
    val setup = if (inColumnFamily) cfSetup else tsSetup
    val cf = if (inColumnFamily) "time" else Default
    def open(p: StateStoreProvider, v: Long): StateStore = {
      val s = dir.open(p, v)
      if (inColumnFamily) {
        s.createColFamilyIfAbsent(cf, tsKey, ValueSchema, RangeKeyScanStateEncoderSpec(tsKey, Seq(0)))
      }
      s
    }
    def read[A](v: Long)(f: StateStore => A): A = {
      val s = open(dir.provider(setup), v)
      try f(s)
      finally s.abort()
    }
    val p = dir.provider(setup)
    val s = open(p, 0)
    val all = for (ts <- -3L to 6L; n <- Seq("", "a", "b")) yield (ts, n)
    all.foreach { case (ts, n) => s.put(tsRow(ts, n), value((ts, n)), cf) }
    s.commit()
    val before = all.sorted(KeyOrder).toList

    val s1 = open(p, 1)
    s1.deleteRange(tsRow(-1L, ""), tsRow(2L, ""), cf)
    var expected = before.filterNot(k => k._1 >= -1 && k._1 < 2)
    assert(s1.get(tsRow(0L, "a"), cf) == null)
    assert(!s1.keyExists(tsRow(-1L, ""), cf))
    assert(s1.get(tsRow(2L, ""), cf) != null, "end is exclusive")
    assert(s1.get(tsRow(-2L, "b"), cf) != null)
    assert(tsKeys(s1.iterator(cf)) == expected)
    // Bounds are whole keys: (4,"a") .. (5,"a") removes (4,"a"), (4,"b"), (5,"") only.
    s1.deleteRange(tsRow(4L, "a"), tsRow(5L, "a"), cf)
    expected = expected.filterNot(Set((4L, "a"), (4L, "b"), (5L, "")))
    assert(tsKeys(s1.iterator(cf)) == expected)
    // Writes after a deleteRange inside the deleted range are kept.
    s1.put(tsRow(0L, "again"), value((0L, "again")), cf)
    expected = (expected :+ ((0L, "again"))).sorted(KeyOrder)
    assert(tsKeys(s1.iterator(cf)) == expected)
    // A range with no keys is a no-op.
    s1.deleteRange(tsRow(100L, ""), tsRow(200L, ""), cf)
    assert(tsKeys(s1.iterator(cf)) == expected)
    assert(s1.commit() == 2)
    info(s"numKeys after deleteRange: ${s1.metrics.numKeys} (${expected.size} keys)")
    if (numKeysExactAfterDeleteRange) assert(s1.metrics.numKeys == expected.size)

    read(2)(r => assert(tsKeys(r.iterator(cf)) == expected))
    read(1)(r => assert(tsKeys(r.iterator(cf)) == before))
    // Continue writing after a reload of a version that contains a deleteRange.
    val q = dir.provider(setup)
    val s2 = open(q, 2)
    s2.deleteRange(tsRow(Long.MinValue, ""), tsRow(0L, ""), cf)
    expected = expected.filter(_._1 >= 0)
    assert(s2.commit() == 3)
    q.doMaintenance()
    read(3)(r => assert(tsKeys(r.iterator(cf)) == expected))
  }

  conformance(
    "deleteRange(begin, end) removes [begin, end) and survives reload (default family)",
    RangeScanEncoding,
    DeleteRange,
    DeleteRangeWithoutColumnFamilies
  ) {
    deleteRangeCase(inColumnFamily = false)
  }

  conformance(
    "deleteRange(begin, end) removes [begin, end) and survives reload (column family)",
    RangeScanEncoding,
    DeleteRange,
    ColumnFamilies
  ) {
    deleteRangeCase(inColumnFamily = true)
  }

  // ---------------------------------------------------------------------------------------
  // column families

  private val cfSetup = plain.copy(useColumnFamilies = true)
  private def createCf(s: StateStore, name: String): Unit =
    s.createColFamilyIfAbsent(name, KeySchema, ValueSchema, NoPrefixKeyStateEncoderSpec(KeySchema))

  conformance(
    "column families are isolated key spaces; creation is idempotent; names are listed",
    ColumnFamilies
  ) {
    withStoreDir { dir =>
      val p = dir.provider(cfSetup)
      val s = dir.open(p, 0)
      assert(s.allColumnFamilyNames == Set(Default))
      createCf(s, "cf1")
      createCf(s, "cf2")
      createCf(s, "cf1")
      assert(s.allColumnFamilyNames == Set(Default, "cf1", "cf2"))
      s.put(key(1), value((0L, "default")))
      s.put(key(1), value((1L, "cf1")), "cf1")
      s.put(key(2), value((2L, "cf1")), "cf1")
      s.put(key(1), value((1L, "cf2")), "cf2")
      assert(decodeValue(s.get(key(1))) == ((0L, "default")))
      assert(decodeValue(s.get(key(1), "cf1")) == ((1L, "cf1")))
      assert(decodeValue(s.get(key(1), "cf2")) == ((1L, "cf2")))
      assert(s.get(key(2), "cf2") == null)
      assert(s.get(key(2)) == null)
      s.remove(key(1), "cf2")
      assert(decodeValue(s.get(key(1), "cf1")) == ((1L, "cf1")))
      val expected = Map(
        Default -> TreeMap(1 -> ((0L, "default"))),
        "cf1" -> TreeMap(1 -> ((1L, "cf1")), 2 -> ((2L, "cf1"))),
        "cf2" -> TreeMap.empty[Int, Val]
      )
      expected.foreach { case (cf, m) => assert(contents(s, cf) == m, cf) }
      // Operations on a column family that was never created fail.
      val missing = intercept[Exception](s.get(key(1), "nope"))
      info(s"get on a missing column family: ${missing.getClass.getName}")
      intercept[Exception](s.put(key(1), value((1L, "x")), "nope"))
      // The default name is reserved.
      intercept[Exception](createCf(s, Default))
      assert(s.commit() == 1)
      info(s"numKeys with column families: ${s.metrics.numKeys} (3 rows over 3 families)")
      assert(s.metrics.numKeys == 3, "numKeys counts the rows of all column families")
      val q = dir.provider(cfSetup)
      readVersion(q, 1) { r =>
        // Persisted families are listed before they are re-registered on the new instance ...
        assert(r.allColumnFamilyNames == Set(Default, "cf1", "cf2"))
        // ... and must be re-registered (createColFamilyIfAbsent) before use, as operators do.
        createCf(r, "cf1")
        createCf(r, "cf2")
        expected.foreach { case (cf, m) => assert(contents(r, cf) == m, s"$cf reloaded") }
      }
    }
  }

  conformance("removeColFamilyIfExists drops a family's data from that version on", ColumnFamilies) {
    withStoreDir { dir =>
      val p = dir.provider(cfSetup)
      val s = dir.open(p, 0)
      createCf(s, "keep")
      createCf(s, "drop")
      s.put(key(1), value((1L, "keep")), "keep")
      s.put(key(1), value((1L, "drop")), "drop")
      s.put(key(2), value((2L, "drop")), "drop")
      s.commit()
      val s1 = dir.open(p, 1)
      createCf(s1, "keep")
      createCf(s1, "drop")
      assert(s1.removeColFamilyIfExists("drop"))
      assert(!s1.removeColFamilyIfExists("drop"))
      assert(!s1.removeColFamilyIfExists("never"))
      assert(s1.allColumnFamilyNames == Set(Default, "keep"))
      intercept[Exception](s1.get(key(1), "drop"))
      createCf(s1, "drop") // re-created empty
      assert(contents(s1, "drop").isEmpty)
      s1.put(key(3), value((3L, "re-created")), "drop")
      assert(s1.commit() == 2)
      assert(s1.metrics.numKeys == 2)
      val s2 = dir.open(p, 2)
      createCf(s2, "keep")
      assert(s2.removeColFamilyIfExists("drop"))
      assert(s2.commit() == 3)
      val q = dir.provider(cfSetup)
      readVersion(q, 1) { r =>
        assert(r.allColumnFamilyNames == Set(Default, "keep", "drop"))
        createCf(r, "drop")
        assert(contents(r, "drop") == TreeMap(1 -> ((1L, "drop")), 2 -> ((2L, "drop"))))
      }
      readVersion(q, 2) { r =>
        createCf(r, "drop")
        assert(contents(r, "drop") == TreeMap(3 -> ((3L, "re-created"))))
      }
      readVersion(q, 3) { r =>
        assert(r.allColumnFamilyNames == Set(Default, "keep"))
        createCf(r, "keep")
        assert(contents(r, "keep") == TreeMap(1 -> ((1L, "keep"))))
      }
    }
  }

  conformance(
    "column families with different schemas and key encodings coexist",
    ColumnFamilies,
    RangeScanEncoding,
    PrefixScan
  ) {
    withStoreDir { dir =>
      val p = dir.provider(cfSetup)
      val s = dir.open(p, 0)
      s.createColFamilyIfAbsent("time", tsKey, ValueSchema, RangeKeyScanStateEncoderSpec(tsKey, Seq(0)))
      val k3 = StructType(Seq(StructField("a", IntegerType), StructField("b", StringType)))
      s.createColFamilyIfAbsent("prefix", k3, ValueSchema, PrefixKeyScanStateEncoderSpec(k3, 1))
      Seq(5L, -2L, 3L).foreach(ts => s.put(tsRow(ts, "x"), value((ts, "t")), "time"))
      Seq((1, "a"), (1, "b"), (2, "a")).foreach { case (a, b) => s.put(row(k3, a, b), value((a.toLong, b)), "prefix") }
      s.put(key(1), value((1L, "d")))
      assert(tsKeys(s.iterator("time")).map(_._1) == List(-2L, 3L, 5L))
      val it = s.prefixScan(row(StructType(k3.fields.take(1)), 1), "prefix")
      assert(keyFields(it, k3).toSet == Set(Seq(1, "a"), Seq(1, "b")))
      s.commit()
      readVersion(dir.provider(cfSetup), 1) { r =>
        r.createColFamilyIfAbsent("time", tsKey, ValueSchema, RangeKeyScanStateEncoderSpec(tsKey, Seq(0)))
        assert(tsKeys(r.iterator("time")).map(_._1) == List(-2L, 3L, 5L))
        assert(contents(r) == TreeMap(1 -> ((1L, "d"))))
      }
    }
  }

  private def keyFields(it: StateStoreIterator[UnsafeRowPair], schema: StructType): List[Seq[Any]] =
    try it.map(pr => fields(schema, pr.key)).toList
    finally it.close()

  // ---------------------------------------------------------------------------------------
  // multiple values per key

  private val multiSetup = plain.copy(useColumnFamilies = true, useMultipleValuesPerKey = true)

  conformance(
    "multiple values per key: merge appends in call order, putList/put replace, remove clears",
    MultipleValuesPerKey
  ) {
    withStoreDir { dir =>
      val p = dir.provider(multiSetup)
      val s = dir.open(p, 0)
      def values(st: ReadStateStore, id: Int): List[Val] =
        st.valuesIterator(key(id), Default).map(r => decodeValue(r.copy())).toList
      assert(values(s, 1).isEmpty)
      s.merge(key(1), value((3L, "c")))
      s.merge(key(1), value((1L, "a")))
      s.mergeList(key(1), Array(value((2L, "b")), value((0L, "z"))))
      assert(values(s, 1) == List((3L, "c"), (1L, "a"), (2L, "b"), (0L, "z")))
      // get returns the first value.
      assert(decodeValue(s.get(key(1))) == ((3L, "c")))
      s.putList(key(2), Array(value((5L, "e")), value((4L, "d"))))
      assert(values(s, 2) == List((5L, "e"), (4L, "d")))
      s.putList(key(2), Array(value((6L, "f"))))
      assert(values(s, 2) == List((6L, "f")))
      s.merge(key(3), value((7L, "x")))
      s.put(key(3), value((8L, "y")))
      assert(values(s, 3) == List((8L, "y")))
      s.merge(key(4), value((9L, "only")))
      s.remove(key(4))
      assert(values(s, 4).isEmpty)
      assert(!s.keyExists(key(4), Default))
      assert(s.keyExists(key(1), Default))
      // valuesIterator rows: only copies are stable.
      val raw = s.valuesIterator(key(1), Default).toList
      info(s"valuesIterator reuses its row: ${raw.map(decodeValue).distinct.size < raw.size}")
      // iteratorWithMultiValues yields every (key, value) with per-key values in merge order.
      val all = {
        val it = s.iteratorWithMultiValues(Default)
        try it.map(pr => decodeKey(pr.key) -> decodeValue(pr.value)).toList
        finally it.close()
      }
      assert(all.groupBy(_._1).map { case (k, l) => k -> l.map(_._2) } == Map(
        1 -> List((3L, "c"), (1L, "a"), (2L, "b"), (0L, "z")),
        2 -> List((6L, "f")),
        3 -> List((8L, "y"))
      ))
      assert(s.commit() == 1)
      readVersion(dir.provider(multiSetup), 1) { r =>
        assert(values(r, 1) == List((3L, "c"), (1L, "a"), (2L, "b"), (0L, "z")))
        assert(values(r, 2) == List((6L, "f")))
        assert(values(r, 3) == List((8L, "y")))
        assert(values(r, 4).isEmpty)
      }
      val s1 = dir.open(p, 1)
      s1.merge(key(2), value((10L, "g")))
      s1.commit()
      readVersion(dir.provider(multiSetup), 2)(r => assert(values(r, 2) == List((6L, "f"), (10L, "g"))))
    }
  }

  conformance("multiple values per key in a column family", MultipleValuesPerKey, ColumnFamilies) {
    withStoreDir { dir =>
      val p = dir.provider(cfSetup)
      val s = dir.open(p, 0)
      s.createColFamilyIfAbsent(
        "list",
        KeySchema,
        ValueSchema,
        NoPrefixKeyStateEncoderSpec(KeySchema),
        true,
        false
      )
      s.merge(key(1), value((1L, "a")), "list")
      s.merge(key(1), value((2L, "b")), "list")
      s.put(key(1), value((0L, "single")))
      assert(s.valuesIterator(key(1), "list").map(r => decodeValue(r.copy())).toList == List((1L, "a"), (2L, "b")))
      assert(decodeValue(s.get(key(1))) == ((0L, "single")))
      s.commit()
      readVersion(dir.provider(cfSetup), 1) { r =>
        r.createColFamilyIfAbsent(
          "list",
          KeySchema,
          ValueSchema,
          NoPrefixKeyStateEncoderSpec(KeySchema),
          true,
          false
        )
        assert(r.valuesIterator(key(1), "list").map(x => decodeValue(x.copy())).toList == List((1L, "a"), (2L, "b")))
      }
    }
  }

  // ---------------------------------------------------------------------------------------
  // unsupported features must fail loudly

  for (feature <- StoreFeature.all if !supports(feature)) {
    test(s"unsupported feature is rejected, not silently ignored: $feature") {
      withStoreDir { dir =>
        val e = intercept[Exception](rejectionAttempt(dir, feature))
        info(s"$feature: ${e.getClass.getName}: ${String.valueOf(e.getMessage).take(160)}")
      }
    }
  }

  private def rejectionAttempt(dir: StoreDir, feature: StoreFeature): Unit = {
    def inStore(setup: StoreSetup)(f: StateStore => Unit): Unit = {
      val p = dir.provider(setup)
      val s = dir.open(p, 0)
      try f(s)
      finally Try(s.abort())
    }
    feature match {
      case ColumnFamilies => inStore(cfSetup)(s => createCf(s, "cf"))
      case MultipleValuesPerKey =>
        inStore(plain.copy(useMultipleValuesPerKey = true)) { s =>
          s.merge(key(1), value((1L, "a")))
          s.valuesIterator(key(1), Default).toList
        }
      case PrefixScan =>
        val spec = PrefixKeyScanStateEncoderSpec(KeySchema, 1)
        inStore(plain.copy(keySpec = spec)) { s =>
          s.put(key(1), value((1L, "a")))
          s.prefixScan(row(StructType(KeySchema.fields.take(1)), 1), Default).toList
        }
      case RangeScanEncoding =>
        inStore(tsSetup)(s => s.put(tsRow(1L, "a"), value((1L, "a"))))
      case RangeScan =>
        inStore(plain)(s => s.rangeScan(None, None, Default).toList)
      case DeleteRange =>
        inStore(plain)(s => s.deleteRange(key(1), key(2), Default))
      case DeleteRangeWithoutColumnFamilies =>
        inStore(tsSetup)(s => s.deleteRange(tsRow(1L, ""), tsRow(2L, ""), Default))
      case MultiGet =>
        inStore(plain)(s => s.multiGet(Array(key(1)), Default).toList)
    }
  }
}

object StateStoreConformanceSuite {
  type Val = (Long, String)
  type Model = TreeMap[Int, Val]

  val Default: String = StateStore.DEFAULT_COL_FAMILY_NAME
  val TrackRowsConf = "spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows"

  val KeySchema: StructType = StructType(Seq(StructField("id", IntegerType), StructField("name", StringType)))
  val ValueSchema: StructType = StructType(Seq(StructField("count", LongType), StructField("label", StringType)))

  sealed trait Op
  final case class Put(id: Int, count: Long, label: String) extends Op
  final case class Remove(id: Int) extends Op

  /** A value that compares equal to itself (boxed NaN is != NaN under Scala's ==), -0.0 != 0.0. */
  def canonical(v: Any): Any = v match {
    case d: Double => ("double", java.lang.Double.doubleToRawLongBits(d))
    case other => other
  }

  /** (ts, name) order of the range-encoded time key: ts, then name with "" < "a" < "b" < null. */
  val KeyOrder: Ordering[(Long, String)] = Ordering.by[(Long, String), (Long, Boolean, String)] {
    case (ts, n) => (ts, n == null, if (n == null) "" else n)
  }

  /**
   * The order of range-encoded ordering columns: per column, numbers in numeric order with
   * -0.0 < 0.0 and NaN above +Infinity (java.lang.Double.compare), null after every value.
   */
  val OrderingColumns: Ordering[Seq[Any]] = new Ordering[Seq[Any]] {
    private def one(a: Any, b: Any): Int = (a, b) match {
      case (null, null) => 0
      case (null, _) => 1
      case (_, null) => -1
      case (x: Int, y: Int) => Integer.compare(x, y)
      case (x: Long, y: Long) => java.lang.Long.compare(x, y)
      case (x: Double, y: Double) => java.lang.Double.compare(x, y)
      case other => throw new IllegalArgumentException(s"no order for $other")
    }
    def compare(a: Seq[Any], b: Seq[Any]): Int =
      a.zip(b).iterator.map { case (x, y) => one(x, y) }.find(_ != 0).getOrElse(0)
  }
}

/** Spark's HDFS-backed provider: no column families, multiple values, range encoding, rangeScan or deleteRange. */
class HDFSConformanceSuite extends StateStoreConformanceSuite {
  override def providerClassName: String = classOf[HDFSBackedStateStoreProvider].getName
  override def supports(feature: StoreFeature): Boolean = feature match {
    case StoreFeature.PrefixScan | StoreFeature.MultiGet => true
    // createColFamilyIfAbsent and init(useColumnFamilies = true) throw
    // StateStoreMultipleColumnFamiliesNotSupportedException; init(useMultipleValuesPerKey = true)
    // and RangeKeyScanStateEncoderSpec throw StateStoreUnsupportedOperationException; rangeScan
    // and deleteRange are the throwing defaults of ReadStateStore/StateStore.
    case _ => false
  }
}

/** Spark's RocksDB provider, changelog checkpointing off (every commit uploads a snapshot). */
class RocksDBConformanceSuite extends StateStoreConformanceSuite {
  override def providerClassName: String = classOf[RocksDBStateStoreProvider].getName
  override def supports(feature: StoreFeature): Boolean = true
  override protected def extraConf: Map[String, String] =
    Map("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled" -> "false")
  override protected def numKeysWhenRowCountUntracked: Option[Long] = Some(-1L)
  // The tracked row count is adjusted by put/remove only: deleteRange leaves it unchanged.
  override protected def numKeysExactAfterDeleteRange: Boolean = false
}

/** Spark's RocksDB provider with changelog checkpointing (reloads replay changelogs). */
class RocksDBChangelogConformanceSuite extends RocksDBConformanceSuite {
  // deleteRange without column families throws UnsupportedOperationException("Operation not
  // supported with state changelog writer v1").
  override def supports(feature: StoreFeature): Boolean =
    feature != StoreFeature.DeleteRangeWithoutColumnFamilies
  override protected def extraConf: Map[String, String] =
    Map("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled" -> "true")
}
