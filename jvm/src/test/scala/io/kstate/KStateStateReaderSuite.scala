package io.kstate

import org.apache.spark.sql.kstate.config.KStateConf

import java.io.File
import java.util.concurrent.ConcurrentLinkedQueue

import scala.jdk.CollectionConverters._

import io.kstate.implicits._
import io.kstate.testing.KStateSparkSuite

import org.apache.spark.sql.{DataFrame, SQLContext}
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.types.StructType

/**
 * [[KStateStateReader]] from Scala: its Option-based API, that it writes nothing to the
 * checkpoint, and that every provider it opens is closed, also when the consumer stops early.
 * Behaviour against real queries and Spark's reader is covered by
 * python/tests/test_state_readers.py.
 */
class KStateStateReaderSuite extends KStateSparkSuite {
  type Rec = (String, Long)

  /** Runs `batches` through deduplicateByKey with `provider` as kstate's provider. */
  private def dedupCheckpoint(batches: Seq[Seq[Rec]], provider: String): String = {
    implicit val ctx: SQLContext = spark.sqlContext
    val session = spark; import session.implicits._
    val in = MemoryStream[Rec]
    val df: DataFrame = in.toDF().toDF("k", "ts").kstate.deduplicateByKey("1 hour", col("k"), col("ts"))
    val ckpt = tempDir("reader")
    spark.conf.set(KStateConf.StateStoreProvider.key, provider)
    try {
      val q = df.writeStream.format("noop").option("checkpointLocation", ckpt).start()
      try batches.foreach { b => in.addData(b); q.processAllAvailable() }
      finally q.stop()
    } finally spark.conf.unset(KStateConf.StateStoreProvider.key)
    ckpt
  }

  private def entries(df: DataFrame): Set[(String, Long)] =
    df.collect().map(r => (r.getStruct(0).getString(0), r.getStruct(1).getLong(0))).toSet

  /** Every file under `dir` with its size and modification time. */
  private def files(dir: File): Map[String, (Long, Long)] =
    Option(dir.listFiles()).toSeq.flatten.flatMap { f =>
      if (f.isDirectory) files(f) else Map(f.getPath -> ((f.length(), f.lastModified())))
    }.toMap

  private val batches = Seq(Seq(("a", 1000L), ("b", 2000L), ("a", 3000L)), Seq(("c", 4000L)))

  test("reads by name or id, at the latest or an older batch, and writes nothing") {
    val ckpt = dedupCheckpoint(batches, KStateConf.StateStoreProvider.default)
    val before = files(new File(ckpt))
    val latest = KStateStateReader.readState(spark, ckpt, "deduplicate_by_key-0")
    assert(latest.columns.toSeq === Seq("key", "value", "partition_id"))
    assert(entries(latest) === Set(("a", 1000L), ("b", 2000L), ("c", 4000L)))
    assert(latest.collect().map(_.getInt(2)).forall(p => p >= 0 && p < 3))
    val old = KStateStateReader.readState(spark, ckpt, "deduplicate_by_key-0", Some(0L))
    assert(entries(old) === Set(("a", 1000L), ("b", 2000L)))
    val id = org.apache.spark.sql.kstate.planning.OperatorIdentity.operatorId("deduplicate_by_key-0")
    assert(entries(KStateStateReader.readStateById(spark, ckpt, id, Some(1L))) === entries(latest))
    assert(files(new File(ckpt)) === before)
  }

  test("errors are KStateExceptions raised when the DataFrame is built") {
    val ckpt = dedupCheckpoint(batches.take(1), KStateConf.StateStoreProvider.default)
    def errorClass(read: => DataFrame): String = intercept[KStateException](read).errorClass
    assert(errorClass(KStateStateReader.readState(spark, ckpt, "x")) === "KSTATE_STATE_NOT_FOUND")
    assert(errorClass(KStateStateReader.readStateById(spark, ckpt, 7L)) === "KSTATE_STATE_NOT_FOUND")
    assert(errorClass(KStateStateReader.readState(spark, ckpt, "deduplicate_by_key-0", Some(1L))) ===
      "KSTATE_STATE_NOT_FOUND")
    assert(errorClass(KStateStateReader.readState(spark, tempDir("empty"), "x")) ===
      "KSTATE_STATE_NOT_FOUND")
    assert(errorClass(KStateStateReader.readState(spark, ckpt, "deduplicate_by_key-0", Some(-1L))) ===
      "KSTATE_INVALID_STATE_READ")
  }

  test("a state file of another partition copied in place fails the read with KSTATE_STATE_FILE_CORRUPT") {
    val ckpt = dedupCheckpoint(batches, KStateConf.StateStoreProvider.default)
    val id = org.apache.spark.sql.kstate.planning.OperatorIdentity.operatorId("deduplicate_by_key-0")
    val op = new File(ckpt, s"state/$id")
    java.nio.file.Files.copy(
      new File(op, "1/2.kstate.changelog").toPath,
      new File(op, "0/2.kstate.changelog").toPath,
      java.nio.file.StandardCopyOption.REPLACE_EXISTING
    )
    val e = intercept[Exception](KStateStateReader.readState(spark, ckpt, "deduplicate_by_key-0").collect())
    val k = Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null)
      .collectFirst { case k: KStateException => k }.getOrElse(fail("no KStateException", e))
    assert(k.errorClass === "KSTATE_STATE_FILE_CORRUPT")
    assert(k.getMessage.contains("partition 0") && k.getMessage.contains("partition 1"), k.getMessage)
    // the state of the batch before, whose files are intact, still reads
    assert(entries(KStateStateReader.readState(spark, ckpt, "deduplicate_by_key-0", Some(0L))) ===
      Set(("a", 1000L), ("b", 2000L)))
  }

  test("every provider the reader opens is closed, also when the consumer stops early") {
    val ckpt = dedupCheckpoint(batches, classOf[TrackedKStateProvider].getName)
    def readerProviders[T](read: => T): Seq[TrackedKStateProvider] = {
      val before = TrackedKStateProvider.all.size
      read
      TrackedKStateProvider.all.asScala.toSeq.drop(before)
    }
    val state = KStateStateReader.readState(spark, ckpt, "deduplicate_by_key-0")
    val full = readerProviders(state.collect())
    assert(full.size === 3) // one per state partition
    assert(full.forall(_.closed))
    val early = readerProviders(state.limit(1).collect())
    assert(early.nonEmpty && early.forall(_.closed))
  }
}

/** kstate's provider, remembering every instance and whether it was closed. */
class TrackedKStateProvider extends KStateStoreProvider {
  @volatile var closed = false

  override def init(
      stateStoreId: StateStoreId,
      keySchema: StructType,
      valueSchema: StructType,
      keyStateEncoderSpec: KeyStateEncoderSpec,
      useColumnFamilies: Boolean,
      storeConfs: StateStoreConf,
      hadoopConf: org.apache.hadoop.conf.Configuration,
      useMultipleValuesPerKey: Boolean,
      stateSchemaProvider: Option[StateSchemaProvider]
  ): Unit = {
    super.init(
      stateStoreId,
      keySchema,
      valueSchema,
      keyStateEncoderSpec,
      useColumnFamilies,
      storeConfs,
      hadoopConf,
      useMultipleValuesPerKey,
      stateSchemaProvider
    )
    TrackedKStateProvider.all.add(this)
  }

  override def close(): Unit = { closed = true; super.close() }
}

object TrackedKStateProvider {
  val all = new ConcurrentLinkedQueue[TrackedKStateProvider]()
}
