package io.kstate

import java.io.File

import io.kstate.implicits._
import io.kstate.testing.KStateSparkSuite

import org.apache.spark.sql.SQLContext
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.execution.streaming.state.KStateSnapshotReports
import org.apache.spark.sql.kstate.planning.OperatorIdentity

/**
 * Spark's own maintenance thread, on a running query, snapshots kstate's stores and deletes the
 * files no retained version needs, on every Spark minor kstate is built for. Spark 4.3 split the
 * provider's maintenance in two calls (`shim/SplitMaintenance`); before kstate answered them, a
 * query on 4.3 wrote no snapshot and deleted nothing (docs/upgrades.md).
 */
class MaintenanceStreamingSuite extends KStateSparkSuite {
  // Spark's maintenance task is one per JVM, started with the interval of the first store
  // loaded: stop the one an earlier suite started, so this suite's interval applies.
  override def beforeAll(): Unit = { StateStore.stop(); super.beforeAll() }
  override def afterAll(): Unit =
    try super.afterAll()
    finally StateStore.stop()

  override protected def extraConf: Map[String, String] = Map(
    "spark.sql.shuffle.partitions" -> "2",
    "spark.sql.streaming.stateStore.maintenanceInterval" -> "100ms",
    "spark.sql.streaming.stateStore.minDeltasForSnapshot" -> "2",
    "spark.sql.streaming.minBatchesToRetain" -> "2"
  )

  private def eventually(what: => String)(cond: => Boolean): Unit = {
    val deadline = System.nanoTime() + 60L * 1000 * 1000 * 1000
    while (!cond) {
      assert(System.nanoTime() < deadline, what)
      Thread.sleep(100)
    }
  }

  test("a running query's stores get snapshots from Spark's maintenance thread, and old files are deleted") {
    implicit val ctx: SQLContext = spark.sqlContext
    val session = spark; import session.implicits._
    val in = MemoryStream[(String, Long, Int)]
    val ckpt = tempDir("ckpt")
    val q = CollectSink.start(
      in.toDF().toDF("k", "ts", "seq").kstate.deduplicateByKey("1 second", col("k"), col("ts")),
      ckpt,
      "append"
    )
    try {
      for (b <- 0 until 6) {
        in.addData((0 until 8).map(i => (s"k$i", b * 10000L + i, b * 8 + i)))
        q.processAllAvailable()
      }
      val state = new File(ckpt, "state").listFiles().filter(_.getName.toLong >= OperatorIdentity.IdBase).head
      val stores = state.listFiles().filter(_.getName.forall(_.isDigit)).toSeq
      assert(stores.size == 2)
      def names(d: File): Set[String] = d.list().toSet
      eventually(s"a snapshot in every store and changelog 1 deleted: ${stores.map(names)}") {
        stores.forall(d => names(d).exists(_.endsWith(".kstate.snapshot")) && !names(d)("1.kstate.changelog"))
      }
      // each snapshot is reported to Spark's coordinator, as Spark's providers report theirs:
      // without it the coordinator takes the stores' snapshots as lagging and asks for one at
      // every commit (forceSnapshotOnCommit)
      val opId = state.getName.toLong
      val roots = Seq(state.getParent, new File(ckpt).toURI.toString.stripSuffix("/") + "/state", state.getPath)
      def reported(partition: Int): Option[Long] =
        roots.iterator.flatMap(r => KStateSnapshotReports.latest(r, opId, partition, q.runId)).nextOption()
      eventually(s"every store's snapshot reported: ${(0 until 2).map(reported)}") {
        (0 until 2).forall(p => reported(p).exists(_ >= 2))
      }
      // the deduplication goes on from what is left: the next batch repeats one key, within its interval
      in.addData(("k1", 50500L, 100), ("k9", 50500L, 101))
      q.processAllAvailable()
      assert(CollectSink.rows(q).map(_.getAs[Int]("seq")).filter(_ >= 100) == Seq(101))
    } finally q.stop()
  }
}
