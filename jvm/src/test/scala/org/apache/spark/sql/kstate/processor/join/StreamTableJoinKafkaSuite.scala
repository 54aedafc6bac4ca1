package org.apache.spark.sql.kstate.processor.join

import scala.collection.mutable.ArrayBuffer

import io.kstate.oracle.KafkaStreamTableJoinOracle
import io.kstate.oracle.KafkaStreamTableJoinOracle.{In, Join, Result, StreamIn, TableIn}
import org.apache.spark.sql.kstate.processor.table.InMemoryTableState
import org.scalacheck.{Gen, Shrink}
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

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
      InMemoryTableState.versioned[String, String](r, r))
    val buffer = join.graceMs.map(_ => new InMemoryStreamTableJoinBuffer[String, String])
    val out = ArrayBuffer.empty[Result]
    val emit: StreamTableJoinEmitter[String, String] =
      (s: String, t: String, ts: Long) => out += Result(keyOf(s), s, t, ts)
    var p = new StreamTableJoinProcessor(spec, state, buffer)
    input.zipWithIndex.foreach { case (r, i) =>
      if (cuts.lift(i).contains(true)) { p.finish(emit); p = new StreamTableJoinProcessor(spec, state, buffer) }
      r match {
        case StreamIn(k, v, ts) => p.processStream(k, k == null, v, ts, tsIsNull = false, emit)
        case TableIn(k, v, ts) => p.processTable(k, k == null, v, ts, tsIsNull = false)
      }
    }
    p.finish(emit)
    out.toList
  }

  private def compare(join: Join, input: Seq[In], cuts: Seq[Boolean]): Unit = {
    val kafka = KafkaStreamTableJoinOracle.run(join, input)
    val ours = kstate(join, input, cuts)
    withClue(s"$join\ninput ${input.mkString(" ")}\nkafka  $kafka\nkstate $ours\n") {
      assert(kafka === Right(ours))
    }
  }

  private def differential(join: Gen[Join], nullKeys: Boolean): Unit =
    forAll(join, inputGen(nullKeys).flatMap(in => Gen.listOfN(in.length, Gen.frequency(4 -> false, 1 -> true)).map((in, _)))) {
      case (j, (in, cuts)) => compare(j, in, cuts)
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

  test("KIP-923's example: Kafka's results with and without grace") {
    val input = Seq(TableIn("a", "old", 0L), StreamIn("a", "a#click", 10L), TableIn("a", "new", 8L),
      StreamIn("a", "a#later", 15L), StreamIn("b", "b#end", 30L))
    for (g <- Seq(None, Some(5L))) compare(Join(left = true, Some(20L), g), input, input.map(_ => false))
    assert(kstate(Join(left = true, Some(20L), Some(5L)), input, input.map(_ => false)) ===
      Seq(Result("a", "a#click", "new", 10L), Result("a", "a#later", "new", 15L)))
  }

  test("equal timestamps: a stream record piped before a table update does not see it (kstate's stream-first tie rule)") {
    val input = Seq(TableIn("a", "v1", 1L), StreamIn("a", "a#1", 5L), TableIn("a", "v5", 5L))
    for (join <- Seq(Join(left = false, None, None), Join(left = false, Some(10L), None), Join(left = false, Some(10L), Some(0L)))) {
      assert(KafkaStreamTableJoinOracle.run(join, input) === Right(Seq(Result("a", "a#1", "v1", 5L))), join)
      compare(join, input, input.map(_ => false))
    }
  }

  test("deliberate difference (rule 2): a left join's null-key record with a grace period is emitted; Kafka's buffer throws") {
    val input = Seq(TableIn("a", "v", 0L), StreamIn("a", "a#1", 5L), StreamIn(null, "null#2", 6L))
    val join = Join(left = true, Some(10L), Some(2L))
    val kafka = KafkaStreamTableJoinOracle.run(join, input)
    assert(kafka.left.exists(e => Iterator.iterate(e)(_.getCause).takeWhile(_ != null)
      .exists(c => c.isInstanceOf[NullPointerException] && String.valueOf(c.getMessage).contains("key cannot be null"))), kafka)
    assert(kstate(join, input, input.map(_ => false)) === Seq(Result(null, "null#2", null, 6L)),
      "emitted at once; a#1 waits for stream time 7 (the null-key record does not move it)")
  }
}

object StreamTableJoinKafkaSuite {
  /** Stream values are "key#n": the key is read back from the value kstate emits. */
  def keyOf(streamValue: String): String = streamValue.takeWhile(_ != '#') match {
    case "null" => null
    case k => k
  }

  /** 1 to 30 records, stream and table interleaved; time mostly moves forward, some records far behind. */
  def inputGen(nullKeys: Boolean): Gen[Seq[In]] = {
    val key = if (nullKeys) Gen.frequency(1 -> Gen.const(null: String), 8 -> Gen.oneOf("a", "b", "c")) else Gen.oneOf("a", "b", "c")
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
