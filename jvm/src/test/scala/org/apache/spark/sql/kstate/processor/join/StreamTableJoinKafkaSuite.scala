package org.apache.spark.sql.kstate.processor.join

import scala.collection.mutable.ArrayBuffer

import io.kstate.oracle.KafkaStreamTableJoinOracle
import io.kstate.oracle.KafkaStreamTableJoinOracle.{In, Join, Result, StreamIn, TableIn}
import io.kstate.tables.VersionedTable
import org.apache.spark.sql.kstate.processor.table.InMemoryTableState
import org.scalacheck.{Gen, Shrink}
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.kstate.config.KStateConf
import org.apache.spark.sql.kstate.execution.{KStateStreamTableJoinExec, TableStateChoice}
import org.apache.spark.sql.kstate.operatorstate.StoreStreamTableJoinBuffer
import org.apache.spark.sql.kstate.provider.ProviderFixture
import org.apache.spark.sql.types.{StringType, StructField, StructType}
import org.apache.spark.unsafe.types.UTF8String

/**
 * Kafka Streams 4.3.1 as the oracle of [[StreamTableJoinProcessor]]: the same interleaving of
 * stream records and table updates through Kafka's `TopologyTestDriver` (`stream.join` /
 * `leftJoin(table, Joined.withGracePeriod)`, table versioned with a persistent versioned store
 * or not) and through the processor (over [[InMemoryTableState]] with Kafka's tie of the table's
 * grace to its history retention, and [[InMemoryStreamTableJoinBuffer]]), cut into random
 * micro-batches on kstate's side. Every result, in order: key, stream value, table value (null:
 * none), timestamp. Keys a, b, c and null, tombstones, timestamps out of order with late records
 * on both sides (Kafka rejects negative timestamps and null timestamps: none are generated).
 * The one deliberate difference Kafka can show (rule 2: a left join's null-key record with a
 * grace period) is asserted by its own test.
 *
 * The same inputs also run through the states a streaming query keeps ([[kstateOnStore]]): the
 * table in kstate's store (chosen as the exec chooses it) and the grace buffer in
 * [[StoreStreamTableJoinBuffer]], one store version per micro-batch (opened, processed, finished,
 * committed), keys and values as UnsafeRows from reused projections, the buffer's heap used,
 * never used or outgrown, the store's working copy on the heap or in RocksDB.
 */
class StreamTableJoinKafkaSuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  import StreamTableJoinKafkaSuite._

  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 40)

  /** No shrinking: a shrunk input may leave the generator's domain (negative timestamps Kafka rejects). */
  implicit def noShrink[A]: Shrink[A] = Shrink.shrinkAny

  /** The processor over `input` cut at `cuts` (one processor per micro-batch); results in order. */
  private def kstate(join: Join, input: Seq[In], cuts: Seq[Boolean]): Seq[Result] = {
    val spec = StreamTableJoinSpec(join.left, join.historyRetentionMs, join.graceMs)
    val state = join.historyRetentionMs.fold(InMemoryTableState.unversioned[String, String]())(r =>
      InMemoryTableState.versioned[String, String](r, r)
    )
    val buffer = join.graceMs.map(_ => new InMemoryStreamTableJoinBuffer[String, String])
    val out = ArrayBuffer.empty[Result]
    val emit: StreamTableJoinEmitter[String, String] =
      (s: String, t: String, ts: Long) => out += Result(keyOf(s), s, t, ts)
    batchesOf(input, cuts).foreach { batch =>
      val p = new StreamTableJoinProcessor(spec, state, buffer)
      batch.foreach {
        case StreamIn(k, v, ts) => p.processStream(k, k == null, v, ts, tsIsNull = false, emit)
        case TableIn(k, v, ts) => p.processTable(k, k == null, v, ts, tsIsNull = false)
      }
      p.finish(emit)
    }
    out.toList
  }

  /**
   * The processor over the states of a streaming query's task, on a fresh checkpoint: per
   * micro-batch (`cuts`) a store version is opened, the table state chosen as
   * `KStateStreamTableJoinExec` chooses it (versioned: grace = retention, Kafka's tie) and the
   * buffer made over it, the records processed, the task finished and the version committed.
   * Table keys and values come from projections reused for every update, as the exec's reader
   * does; stream keys and values are copies, as the exec passes them.
   */
  private def kstateOnStore(join: Join, input: Seq[In], cuts: Seq[Boolean], on: StoreSetup): Seq[Result] = {
    val spec = StreamTableJoinSpec(join.left, join.historyRetentionMs, join.graceMs)
    val versioned = join.historyRetentionMs.map(r => VersionedTable.ofMillis(r).withGraceMillis(r))
    val provider = ProviderFixture.open(
      ProviderFixture.tmp(),
      RowSchema,
      RowSchema,
      ProviderFixture.conf(extra = on.heapStateBytes.map(KStateConf.HeapStateBytes.key -> _.toString).toMap)
    )
    val tableKey = UnsafeProjection.create(RowSchema)
    val tableValue = UnsafeProjection.create(RowSchema)
    def row(p: UnsafeProjection, s: String): UnsafeRow = p(InternalRow(UTF8String.fromString(s)))
    val streamRow = UnsafeProjection.create(RowSchema)
    def fresh(s: String): UnsafeRow = row(streamRow, s).copy()
    val out = ArrayBuffer.empty[Result]
    val emit: StreamTableJoinEmitter[UnsafeRow, UnsafeRow] = (s: UnsafeRow, t: UnsafeRow, ts: Long) => {
      val v = s.getUTF8String(0).toString
      out += Result(keyOf(v), v, if (t == null) null else t.getUTF8String(0).toString, ts)
    }
    try {
      var version = 0L
      batchesOf(input, cuts).foreach { batch =>
        val store = provider.getStore(version)
        val table = TableStateChoice.choose(
          "join",
          Some(store),
          versioned,
          KStateStreamTableJoinExec.VersionedStoreName,
          RowSchema,
          valueFields = 1
        )
        val buffer =
          join.graceMs.map(_ => new StoreStreamTableJoinBuffer(store, "join", 1, 1, on.mirrorMax, on.mirrorBytes))
        val p = new StreamTableJoinProcessor(spec, table.state, buffer)
        batch.foreach {
          case StreamIn(k, v, ts) =>
            p.processStream(if (k == null) null else fresh(k), k == null, fresh(v), ts, tsIsNull = false, emit)
          case TableIn(k, v, ts) =>
            val key = row(tableKey, if (k == null) "" else k)
            p.processTable(key, k == null, if (v == null) null else row(tableValue, v), ts, tsIsNull = false)
        }
        p.finish(emit)
        table.finish()
        version = store.commit()
      }
    } finally provider.close()
    out.toList
  }

  /**
   * Compares kstate with Kafka, leaving out the results of the keys where Kafka's versioned
   * store ignores a delete (deliberate difference D6, [[kafkaIgnoresDelete]]); with `on`, kstate
   * runs on the store ([[kstateOnStore]]).
   */
  private def compare(join: Join, input: Seq[In], cuts: Seq[Boolean], on: Option[StoreSetup] = None): Unit = {
    val skip = if (join.historyRetentionMs.isDefined) kafkaIgnoresDelete(input) else Set.empty[String]
    val kafka = KafkaStreamTableJoinOracle.run(join, input).map(_.filterNot(r => skip(r.key)))
    val all = on.fold(kstate(join, input, cuts))(kstateOnStore(join, input, cuts, _))
    val ours = all.filterNot(r => skip(r.key))
    withClue(s"$join $on\ninput ${input.mkString(" ")}\nkafka  $kafka\nkstate $ours\nleft out $skip\n") {
      assert(kafka === Right(ours))
    }
  }

  private val cutsOf: Seq[In] => Gen[(Seq[In], Seq[Boolean])] =
    in => Gen.listOfN(in.length, Gen.frequency(4 -> false, 1 -> true)).map((in, _))

  private def differential(join: Gen[Join], nullKeys: Boolean): Unit =
    forAll(join, inputGen(nullKeys).flatMap(cutsOf)) {
      case (j, (in, cuts)) => compare(j, in, cuts)
    }

  private def differentialOnStore(join: Gen[Join], nullKeys: Boolean): Unit =
    forAll(join, inputGen(nullKeys).flatMap(cutsOf), storeSetups) {
      case (j, (in, cuts), on) => compare(j, in, cuts, Some(on))
    }

  private val retention = Gen.choose(0L, 12L)
  private val unversioned: Gen[Join] = Gen.oneOf(true, false).map(Join(_, None, None))
  private val versioned: Gen[Join] = for { l <- Gen.oneOf(true, false); r <- retention } yield Join(l, Some(r), None)
  private def withGrace(left: Gen[Boolean]): Gen[Join] =
    for { l <- left; r <- retention; g <- Gen.choose(0L, r) } yield Join(l, Some(r), Some(g))

  test("unversioned table, inner and left: Kafka's results") {
    differential(unversioned, nullKeys = true)
  }

  test("versioned table, inner and left: Kafka's results (as-of lookups, history retention)") {
    differential(versioned, nullKeys = true)
  }

  test("versioned table with a grace period, inner join (null keys included) and left join: Kafka's results") {
    differential(withGrace(Gen.const(false)), nullKeys = true)
    differential(withGrace(Gen.const(true)), nullKeys = false)
  }

  test("on kstate's store (table state, grace buffer, one store version per micro-batch): Kafka's results") {
    differentialOnStore(Gen.oneOf(unversioned, versioned), nullKeys = true)
    differentialOnStore(withGrace(Gen.const(false)), nullKeys = true)
    differentialOnStore(withGrace(Gen.const(true)), nullKeys = false)
  }

  test("KIP-923's example: Kafka's results with and without grace") {
    val input = Seq(
      TableIn("a", "old", 0L),
      StreamIn("a", "a#click", 10L),
      TableIn("a", "new", 8L),
      StreamIn("a", "a#later", 15L),
      StreamIn("b", "b#end", 30L)
    )
    for (g <- Seq(None, Some(5L))) compare(Join(left = true, Some(20L), g), input, input.map(_ => false))
    assert(kstate(Join(left = true, Some(20L), Some(5L)), input, input.map(_ => false)) ===
      Seq(Result("a", "a#click", "new", 10L), Result("a", "a#later", "new", 15L)))
  }

  test(
    "equal timestamps: a stream record piped before a table update does not see it (kstate's stream-first tie rule)"
  ) {
    val input = Seq(TableIn("a", "v1", 1L), StreamIn("a", "a#1", 5L), TableIn("a", "v5", 5L))
    for (
      join <- Seq(
        Join(left = false, None, None),
        Join(left = false, Some(10L), None),
        Join(left = false, Some(10L), Some(0L))
      )
    ) {
      assert(KafkaStreamTableJoinOracle.run(join, input) === Right(Seq(Result("a", "a#1", "v1", 5L))), join)
      compare(join, input, input.map(_ => false))
    }
  }

  test("deliberate difference D6: an update older than its key's delete; Kafka then ignores the delete") {
    // a@26 deleted at 26, then an out-of-order a@18: valid from 18 to 26. Kafka's versioned store
    // (4.3.1) answers the lookup at 30 with it, as if the delete at 26 had not happened.
    val input = Seq(
      TableIn("a", "t7", 26L),
      TableIn("a", null, 26L),
      TableIn("a", "t1", 18L),
      TableIn("b", "x", 34L),
      StreamIn("a", "a#18", 18L),
      StreamIn("a", "a#30", 30L),
      StreamIn("a", "a#25", 25L)
    )
    val join = Join(left = true, Some(20L), None)
    assert(kafkaIgnoresDelete(input) == Set("a"))
    assert(KafkaStreamTableJoinOracle.run(join, input) ===
      Right(Seq(Result("a", "a#18", "t1", 18L), Result("a", "a#30", "t1", 30L), Result("a", "a#25", "t1", 25L))))
    assert(kstate(join, input, input.map(_ => false)) ===
      Seq(Result("a", "a#18", "t1", 18L), Result("a", "a#30", null, 30L), Result("a", "a#25", "t1", 25L)))
  }

  test("a random input that met D6 (key a: deleted at 26, then updated at 18): equal on the other keys") {
    val input = List(
      TableIn("b", "t5", 19),
      TableIn("c", "t5", 23),
      TableIn("a", "t7", 26),
      TableIn("b", "t3", 27),
      TableIn("a", null, 26),
      TableIn("a", "t1", 18),
      StreamIn("c", "c#6", 29),
      StreamIn("c", "c#7", 30),
      TableIn("b", "t3", 33),
      TableIn("c", "t2", 31),
      StreamIn("b", "b#10", 29),
      StreamIn("b", "b#11", 28),
      TableIn("b", "t2", 34),
      StreamIn("b", "b#13", 29),
      StreamIn("a", "a#14", 18),
      TableIn("a", "t1", 35),
      TableIn("a", "t3", 26),
      TableIn("c", "t1", 30),
      TableIn("a", "t1", 37),
      TableIn("b", "t9", 40),
      StreamIn("b", "b#20", 43),
      TableIn("b", null, 46),
      TableIn("a", "t6", 46),
      StreamIn("a", "a#23", 46),
      StreamIn("c", "c#24", 50),
      StreamIn("b", "b#25", 54),
      TableIn("c", "t8", 55),
      TableIn("c", "t2", 55),
      TableIn("c", "t6", 55),
      TableIn("c", "t0", 47)
    )
    val join = Join(left = true, Some(10L), Some(5L))
    assert(kafkaIgnoresDelete(input) == Set("a"))
    // Kafka joins a#14 (at 18, past the retention of 10 at table time 34) with the update of 18
    // it keeps as the key's latest; kstate: null
    assert(KafkaStreamTableJoinOracle.run(
      join,
      input
    ).map(_.find(_.stream == "a#14")) === Right(Some(Result("a", "a#14", "t1", 18L))))
    assert(kstate(join, input, input.map(_ => false)).find(_.stream == "a#14") === Some(Result("a", "a#14", null, 18L)))
    compare(join, input, input.map(_ => false))
  }

  test(
    "deliberate difference (rule 2): a left join's null-key record with a grace period is emitted; Kafka's buffer throws"
  ) {
    val input = Seq(TableIn("a", "v", 0L), StreamIn("a", "a#1", 5L), StreamIn(null, "null#2", 6L))
    val join = Join(left = true, Some(10L), Some(2L))
    val kafka = KafkaStreamTableJoinOracle.run(join, input)
    assert(
      kafka.left.exists(e =>
        Iterator.iterate(e)(_.getCause).takeWhile(_ != null)
          .exists(c =>
            c.isInstanceOf[NullPointerException] && String.valueOf(c.getMessage).contains("key cannot be null")
          )
      ),
      kafka
    )
    assert(
      kstate(join, input, input.map(_ => false)) === Seq(Result(null, "null#2", null, 6L)),
      "emitted at once; a#1 waits for stream time 7 (the null-key record does not move it)"
    )
  }
}

object StreamTableJoinKafkaSuite {

  /** `input` as micro-batches: a new one starts before each record whose `cuts` entry is true. */
  def batchesOf(input: Seq[In], cuts: Seq[Boolean]): Seq[Seq[In]] =
    input.zipWithIndex.foldLeft(Vector(Vector.empty[In])) { case (acc, (r, i)) =>
      if (cuts.lift(i).contains(true)) acc :+ Vector(r) else acc.init :+ (acc.last :+ r)
    }

  /** Keys, stream values and table values on the store: one string column. */
  val RowSchema: StructType = StructType(Seq(StructField("s", StringType)))

  /**
   * How the store-backed states run: the grace buffer's heap limits (records, bytes) and the
   * store's heap working-copy limit (`None`: the default, on the heap; `Some(0)`: in RocksDB).
   */
  final case class StoreSetup(mirrorMax: Int, mirrorBytes: Long, heapStateBytes: Option[Long])

  /** The buffer's heap always used, never used, or outgrown after three records; heap or RocksDB working copy. */
  val storeSetups: Gen[StoreSetup] = for {
    (max, bytes) <- Gen.oneOf(
      (StoreStreamTableJoinBuffer.HeapMirrorMax, StoreStreamTableJoinBuffer.HeapMirrorBytes),
      (0, StoreStreamTableJoinBuffer.HeapMirrorBytes),
      (3, StoreStreamTableJoinBuffer.HeapMirrorBytes)
    )
    heap <- Gen.frequency(3 -> Gen.const(None), 1 -> Gen.const(Some(0L)))
  } yield StoreSetup(max, bytes, heap)

  /**
   * The table keys with an update older than the key's latest version, when that version is a
   * delete: Kafka's versioned store then answers later lookups from the older update and ignores
   * the delete (D6, docs/tables.md), so their results are not comparable.
   */
  def kafkaIgnoresDelete(input: Seq[In]): Set[String] = {
    var latest = Map.empty[String, (Long, Boolean)] // key -> (timestamp, is a delete)
    var keys = Set.empty[String]
    input.foreach {
      case TableIn(k, v, ts) if k != null =>
        latest.get(k) match {
          case Some((t, deleted)) if ts < t => if (deleted) keys += k
          case _ => latest += k -> ((ts, v == null))
        }
      case _ =>
    }
    keys
  }

  /** Stream values are "key#n": the key is read back from the value kstate emits. */
  def keyOf(streamValue: String): String = streamValue.takeWhile(_ != '#') match {
    case "null" => null
    case k => k
  }

  /** 1 to 30 records, stream and table interleaved; time mostly moves forward, some records far behind. */
  def inputGen(nullKeys: Boolean): Gen[Seq[In]] = {
    val key = if (nullKeys) Gen.frequency(1 -> Gen.const(null: String), 8 -> Gen.oneOf("a", "b", "c"))
    else Gen.oneOf("a", "b", "c")
    val step = Gen.frequency(6 -> Gen.choose(0L, 4L), 2 -> Gen.choose(-6L, -1L), 1 -> Gen.choose(-20L, -7L))
    val rec = for {
      isStream <- Gen.oneOf(true, false); k <- key; s <- step
      tableValue <- Gen.frequency(1 -> Gen.const(null: String), 4 -> Gen.choose(0, 9).map(i => s"t$i"))
    } yield (isStream, k, s, tableValue)
    Gen.choose(1, 30).flatMap(Gen.listOfN(_, rec)).map { recs =>
      var t = 20L
      recs.zipWithIndex.map { case ((isStream, k, s, tv), i) =>
        val ts = math.max(0L, t + s)
        if (s > 0) t = ts
        if (isStream) StreamIn(k, s"${Option(k).getOrElse("null")}#$i", ts) else TableIn(k, tv, ts)
      }
    }
  }
}
