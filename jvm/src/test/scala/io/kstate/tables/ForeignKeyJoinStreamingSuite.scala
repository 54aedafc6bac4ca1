package io.kstate.tables

import scala.collection.mutable
import scala.util.Random

import io.kstate.{CollectSink, KStateException}
import io.kstate.implicits._
import io.kstate.testing.KStateSparkSuite

import org.apache.spark.sql.{DataFrame, Row, SQLContext}
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.functions.{col, concat, lit, not, rand, when}
import org.apache.spark.sql.kstate.processor.join.ForeignKeyJoinDriver
import org.apache.spark.sql.kstate.processor.table.{InMemoryTableState, TableState}
import org.apache.spark.sql.streaming.{StreamingQuery, StreamingQueryException}

/**
 * The foreign-key join (KIP-213) wired into micro-batch queries, against the Spark-free pipeline
 * ([[ForeignKeyJoinDriver]] with one stage partition: Kafka's results record by record, see
 * `ForeignKeyJoinDifferentialSuite`) on random input, 1 and 3 state partitions, with and without
 * a restart between every two micro-batches; examples; errors at construction.
 *
 * Both tables read one MemoryStream of updates `(left, k, v, ts)`: rows with `left` true are the
 * left table's (key `k`, value `lv`, foreign key "f" + lv % 3, none when lv % 4 = 3), the others
 * the right table's (key `k` in f0..f2, value `rv`); a null `v` is a tombstone.
 *
 * What is compared: the result TABLE after every micro-batch (each key's value, folded from the
 * change rows). Spark processes a micro-batch's left and right updates in Kafka task order (by
 * timestamp between the two sides), the pipeline in input order: the change rows between two
 * micro-batch ends differ with the order, the result table at each end does not (it is the join
 * of both tables as they then are, with no stale result: KIP-213's guarantee).
 */
class ForeignKeyJoinStreamingSuite extends KStateSparkSuite {
  type Upd = (Boolean, String, Option[Long], Long)
  type Value = (Option[Long], Option[Long])

  private def input(): MemoryStream[Upd] = {
    implicit val ctx: SQLContext = spark.sqlContext
    val session = spark; import session.implicits._
    MemoryStream[Upd]
  }

  private val foreignKey =
    when(col("lv") % 4 === 3, lit(null)).otherwise(concat(lit("f"), (col("lv") % 3).cast("string")))
  private def fkOf(v: java.lang.Long): String = if (v % 4 == 3) null else s"f${v % 3}"

  private def tables(src: DataFrame, lv: Option[VersionedTable], rv: Option[VersionedTable]): (KTable, KTable) = {
    val df = src.toDF("left", "k", "v", "ts")
    val l = df.filter(col("left")).select(col("k"), col("v").as("lv"), col("ts"))
      .kstate.toTable(col("k"), col("ts"), lv.orNull, "left_table")
    val r = df.filter(not(col("left"))).select(col("k"), col("v").as("rv"), col("ts"))
      .kstate.toTable(col("k"), col("ts"), rv.orNull, "right_table")
    (l, r)
  }

  private def joined(
      how: String,
      lv: Option[VersionedTable] = None,
      rv: Option[VersionedTable] = None,
      fk: org.apache.spark.sql.Column = foreignKey
  )(src: DataFrame): DataFrame = {
    val (l, r) = tables(src, lv, rv)
    l.join(r, fk, how, "fk").toStream()
  }

  private def opt(row: Row, i: Int): Option[Long] = if (row.isNullAt(i)) None else Some(row.getLong(i))

  /** Each micro-batch's output rows (k, lv, rv, ts), restarting the query before each batch if asked. */
  private def run(batches: Seq[Seq[Upd]], build: DataFrame => DataFrame, restartEach: Boolean = false)
      : Seq[Seq[Row]] = {
    val in = input()
    val ckpt = tempDir("ckpt")
    val out = mutable.ArrayBuffer.empty[Seq[Row]]
    var q: StreamingQuery = null
    var seen = 0
    def start(): Unit = { q = CollectSink.start(build(in.toDF()), ckpt, "append"); seen = 0 }
    try {
      start()
      batches.foreach { b =>
        if (restartEach) { q.stop(); start() }
        in.addData(b)
        q.processAllAvailable()
        val rows = CollectSink.rows(q)
        out += rows.drop(seen)
        seen = rows.length
      }
    } finally if (q != null) q.stop()
    out.toSeq
  }

  /** The result table after each micro-batch, from the change rows. */
  private def tablesAfter(batches: Seq[Seq[Row]]): Seq[Map[String, Value]] = {
    var t = Map.empty[String, Value]
    batches.map { rows =>
      rows.foreach { r =>
        val v = (opt(r, 1), opt(r, 2))
        t = if (v == ((None, None))) t - r.getString(0) else t.updated(r.getString(0), v)
      }
      t
    }
  }

  /** The Spark-free pipeline's result table after each micro-batch (input order, one partition). */
  private def pipeline(
      batches: Seq[Seq[Upd]],
      leftJoin: Boolean,
      lv: Option[VersionedTable],
      rv: Option[VersionedTable]
  ): Seq[Map[String, Value]] = {
    def state[K](v: Option[VersionedTable]): () => TableState[K, java.lang.Long] = () =>
      v match {
        case Some(t) => InMemoryTableState.versioned[K, java.lang.Long](t.historyRetentionMs, t.graceMs)
        case None => InMemoryTableState.unversioned[K, java.lang.Long]()
      }
    val d = new ForeignKeyJoinDriver[java.lang.Long, String, java.lang.Long, Value](
      leftJoin,
      fkOf,
      (l, r) => (Option(l).map(_.longValue), Option(r).map(_.longValue)),
      state[String](lv),
      state[String](rv),
      1
    )
    var t = Map.empty[String, Value]
    batches.map { b =>
      d.runBatch(b.map { case (left, k, v, ts) =>
        val value = v.map(java.lang.Long.valueOf).orNull
        if (left) ForeignKeyJoinDriver.Left(k, value, ts) else ForeignKeyJoinDriver.Right(k, value, ts)
      }).foreach(c => t = if (c.newValue == null) t - c.key else t.updated(c.key, c.newValue))
      t
    }
  }

  private def randomBatches(rnd: Random, n: Int): Seq[Seq[Upd]] = {
    val recs = (0 until n).map { _ =>
      val left = rnd.nextInt(5) < 3
      val k = if (rnd.nextInt(12) == 0) null
      else if (left) Seq("a", "b", "c", "d")(rnd.nextInt(4)) else Seq("f0", "f1", "f2")(rnd.nextInt(3))
      val v = if (rnd.nextInt(5) == 0) None else Some(rnd.nextInt(12).toLong)
      (left, k, v, (rnd.nextInt(60) - 20).toLong)
    }
    val cuts = (0 until n).filter(_ => rnd.nextInt(4) == 0)
    (0 +: cuts :+ n).distinct.sorted.sliding(2).collect { case Seq(a, b) if b > a => recs.slice(a, b) }.toSeq
  }

  private def withPartitions[A](n: Int)(f: => A): A = {
    spark.conf.set("spark.sql.shuffle.partitions", n.toString)
    try f
    finally spark.conf.set("spark.sql.shuffle.partitions", "3")
  }

  // a retention no update exceeds: nothing is dropped as late, so input order and task order
  // store the same versions
  private val versioned = Some(VersionedTable.ofMillis(1000))

  test("random updates: the result table after every micro-batch is the pipeline's (Kafka's), 1 and 3 partitions") {
    val rnd = new Random(213)
    val cases = Seq(
      ("inner", None, None, 1),
      ("left", None, None, 1),
      ("inner", None, None, 3),
      ("left", versioned, None, 3),
      ("inner", versioned, versioned, 3),
      ("left", None, versioned, 1)
    )
    cases.foreach { case (how, lv, rv, n) =>
      val batches = randomBatches(rnd, 40)
      val got = withPartitions(n)(run(batches, joined(how, lv, rv) _))
      val expected = pipeline(batches, how == "left", lv, rv)
      assert(
        tablesAfter(got) === expected,
        s"$how lv=$lv rv=$rv partitions=$n batches=$batches\nrows ${got.map(_.mkString(" ")).mkString("\n")}"
      )
      assert(expected.exists(_.nonEmpty))
    }
  }

  test("a restart between every two micro-batches gives the uninterrupted output, 1 and 3 partitions") {
    val rnd = new Random(914)
    Seq(("inner", 1), ("left", 3)).foreach { case (how, n) =>
      val batches = randomBatches(rnd, 30)
      val build = joined(how, versioned, None) _
      val restarted = withPartitions(n)(run(batches, build, restartEach = true))
      assert(restarted.map(_.map(_.toSeq).toSet) === withPartitions(n)(run(batches, build)).map(_.map(_.toSeq).toSet))
      assert(
        tablesAfter(restarted) === pipeline(batches, how == "left", versioned, None),
        s"$how $n\nbatches $batches\nrows ${restarted.map(_.mkString(" ")).mkString("\n")}"
      )
    }
  }

  test("no stale result: a key moving to another foreign key in the same micro-batch as the right updates") {
    // a -> f1 (lv=1) joins r1; then in one batch a moves to f2 (lv=2) and f1 changes: only (2, r2) survives
    val batches = Seq(
      Seq((false, "f1", Some(10L), 1L), (false, "f2", Some(20L), 1L), (true, "a", Some(1L), 2L)),
      Seq((true, "a", Some(2L), 3L), (false, "f1", Some(11L), 4L))
    )
    withPartitions(3) {
      val out = run(batches, joined("inner") _)
      assert(tablesAfter(out) === Seq(Map("a" -> (Some(1L), Some(10L))), Map("a" -> (Some(2L), Some(20L)))))
    }
  }

  test("versions grow across micro-batches: an older subscription's response does not hide the newer one") {
    // batch 1: a subscribes to f1 as the 4th left change of its partition (version 1<<32 | 3);
    // batch 2: f1 changes (ts 5) before a moves to f2 (ts 20, first left change: 2<<32 | 0). Stage 2
    // gets f1's response (old version) first, then f2's: the newer one must win, so versions must
    // carry the micro-batch id (with the position alone, 0 < 3 would drop f2's response as stale)
    val batches = Seq(
      Seq(
        (false, "f1", Some(10L), 1L),
        (false, "f2", Some(20L), 1L),
        (true, "b", Some(4L), 10L),
        (true, "c", Some(4L), 10L),
        (true, "d", Some(4L), 10L),
        (true, "a", Some(1L), 10L)
      ),
      Seq((false, "f1", Some(11L), 5L), (true, "a", Some(2L), 20L))
    )
    withPartitions(1) {
      val out = run(batches, joined("inner") _)
      assert(tablesAfter(out).last("a") === ((Some(2L), Some(20L))), out)
    }
  }

  test("a changed foreign key or join type on restart is KSTATE_OPERATOR_CONFIG_CHANGED") {
    Seq(joined("left") _, joined("inner", fk = concat(lit("f"), col("lv").cast("string"))) _).foreach { changed =>
      val in = input()
      val ckpt = tempDir("ckpt")
      val q1 = CollectSink.start(joined("inner")(in.toDF()), ckpt, "append")
      in.addData((true, "a", Some(1L), 1L)); q1.processAllAvailable(); q1.stop()
      val q = CollectSink.start(changed(in.toDF()), ckpt, "append")
      in.addData((false, "f1", Some(2L), 2L))
      val e = intercept[StreamingQueryException](q.processAllAvailable())
      assert(e.getMessage.contains("KSTATE_OPERATOR_CONFIG_CHANGED"), e.getMessage)
      q.stop()
    }
  }

  test("a batch DataFrame: inner and left join, the result's columns") {
    val session = spark; import session.implicits._
    val orders =
      Seq(("o1", "c1", 5L, 1L), ("o2", "c2", 7L, 2L), ("o3", null, 9L, 3L)).toDF("id", "cust", "amount", "ts")
        .kstate.toTable(col("id"), col("ts"))
    val customers = Seq(("c1", "Ann", 1L)).toDF("cid", "name", "ts").kstate.toTable(col("cid"), col("ts"))
    val inner = orders.join(customers, col("cust"))
    assert(!inner.isVersioned && inner.keyColumn == "id" && inner.valueColumns == Seq("cust", "amount", "name"))
    assert(inner.toStream().collect().map(_.toSeq).toSeq === Seq(Seq("o1", "c1", 5L, "Ann", 1L)))
    // o1 arrives before its customer (equal timestamps: the left side first): joined with null, then with Ann
    val left = orders.join(customers, col("cust"), "left").toStream().collect().map(_.toSeq).toSeq
    assert(left.sortBy(_.head.toString) === Seq(
      Seq("o1", "c1", 5L, null, 1L),
      Seq("o1", "c1", 5L, "Ann", 1L),
      Seq("o2", "c2", 7L, null, 2L),
      Seq("o3", null, 9L, null, 3L)
    ))
  }

  test("errors at construction: join type, foreign key type, non-deterministic or missing foreign key, clash") {
    val in = input()
    val (l, r) = tables(in.toDF(), None, None)
    val how = intercept[KStateException](l.join(r, foreignKey, "outer"))
    assert(how.errorClass === "KSTATE_INVALID_JOIN_TYPE" && how.getMessage.contains("foreign-key"))
    val typ = intercept[KStateException](l.join(r, col("lv")))
    assert(typ.errorClass === "KSTATE_FOREIGN_KEY_TYPE_MISMATCH" && typ.getMessage.contains("STRING"), typ.getMessage)
    val nd = intercept[KStateException](l.join(r, when(rand() > 0.5, lit("f1"))))
    assert(nd.errorClass === "KSTATE_NON_DETERMINISTIC_EXPRESSION", nd.getMessage)
    val missing = intercept[KStateException](l.join(r, col("nope")))
    assert(missing.errorClass === "KSTATE_MISSING_COLUMN" && missing.getMessage.contains("foreign_key"))
    val clash = intercept[KStateException](l.join(l.mapValues(col("lv")), col("k")))
    assert(clash.errorClass === "KSTATE_JOIN_COLUMN_CLASH")
    // a narrower integral foreign key is widened to the right key's type
    val session = spark; import session.implicits._
    val byInt = Seq(("a", 1, 1L)).toDF("k", "ref", "ts").kstate.toTable(col("k"), col("ts"))
    val longKeyed = Seq((1L, "x", 1L)).toDF("id", "x", "ts").kstate.toTable(col("id"), col("ts"))
    assert(byInt.join(longKeyed, col("ref")).toStream().collect().map(_.toSeq).toSeq === Seq(Seq("a", 1, "x", 1L)))
  }
}
