package org.apache.spark.sql.kstate.planning

import org.apache.spark.sql.kstate.OtherRocksDBProvider

import scala.jdk.CollectionConverters._

import io.kstate.{CollectSink, KStateException}
import io.kstate.implicits._
import io.kstate.suppress.{BufferConfig, Suppressed}
import io.kstate.testing.KStateSparkSuite
import io.kstate.windows.TimeWindows

import org.apache.spark.sql.{DataFrame, SparkSessionExtensions, SQLContext}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.streaming.WriteToStream
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.kstate.plans.KStateStatefulNode
import org.apache.spark.sql.kstate.shim.RunningQuery
import org.apache.spark.sql.streaming.{OutputMode, StreamingQuery, StreamingQueryException}

/**
 * kstate's checks when a plan is analysed ([[KStateCheckRule]]) and when a micro-batch is
 * planned (store capabilities, [[StateProviderCheck.requireCapabilities]]).
 */
class KStateCheckRuleSuite extends KStateSparkSuite {
  override protected def extraConf: Map[String, String] =
    Map("spark.sql.extensions" -> s"io.kstate.KStateExtensions,${classOf[RecordingCheckRule].getName}")

  private val ProviderKey = org.apache.spark.sql.kstate.config.KStateConf.StateStoreProvider.key
  private val FormatKey = "spark.sql.streaming.stateStore.checkpointFormatVersion"
  private val RocksDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

  private def input(): MemoryStream[(String, Long)] = {
    implicit val ctx: SQLContext = spark.sqlContext
    val session = spark; import session.implicits._
    MemoryStream[(String, Long)]
  }

  private def frame(in: MemoryStream[(String, Long)]): DataFrame = in.toDF().toDF("k", "ts")

  private def withConf[T](kv: (String, String)*)(body: => T): T = {
    val old = kv.map { case (k, _) => k -> spark.conf.getOption(k) }
    kv.foreach { case (k, v) => spark.conf.set(k, v) }
    try body
    finally old.foreach {
        case (k, Some(v)) => spark.conf.set(k, v)
        case (k, None) => spark.conf.unset(k)
      }
  }

  private def kstateError(f: => Any): KStateException = intercept[KStateException](f)

  /** Runs one micro-batch of `df` and returns how the query failed. */
  private def firstBatchFailure(df: DataFrame, in: MemoryStream[(String, Long)], mode: String = "append")
      : StreamingQueryException = {
    val q = CollectSink.start(df, tempDir("ckpt"), mode)
    try {
      in.addData(("a", 1000L), ("b", 2000L))
      intercept[StreamingQueryException](q.processAllAvailable())
    } finally q.stop()
  }

  /** The KStateException in `e`'s cause chain, and whether a task failure wrapped it. */
  private def kstateCause(e: Throwable): (KStateException, Boolean) = {
    val chain = Iterator.iterate(e)(_.getCause).takeWhile(_ != null).toList
    val k = chain.collectFirst { case k: KStateException => k }.getOrElse(fail(s"no KStateException in $chain"))
    (k, chain.takeWhile(_ ne k).exists(_.getMessage.contains("Job aborted due to stage failure")))
  }

  private def runs(df: DataFrame, in: MemoryStream[(String, Long)], mode: String = "append"): StreamingQuery = {
    val q = CollectSink.start(df, tempDir("ckpt"), mode)
    try {
      in.addData(("a", 1000L), ("b", 2000L), ("a", 30000L))
      q.processAllAvailable()
      assert(q.exception.isEmpty)
      q
    } finally q.stop()
  }

  private def timeLimit(df: DataFrame, config: BufferConfig[_] = BufferConfig.unbounded): DataFrame =
    df.kstate.suppress(Suppressed.untilTimeLimit("1 second", config), col("k"), col("ts"), null)

  private def finalCounts(df: DataFrame, config: io.kstate.suppress.StrictBufferConfig): DataFrame =
    df.kstate.windowedBy(TimeWindows.ofSize("10 seconds"), col("k"), col("ts")).count()
      .kstate.suppress(Suppressed.untilWindowCloses(config))

  test("the check rule sees the plan when the DataFrame is built, at start() and in each micro-batch") {
    val in = input()
    RecordingCheckRule.seen.clear()
    val df = frame(in).kstate.deduplicateByKey("10 seconds", col("k"), col("ts"))
    val built = RecordingCheckRule.seen.asScala.toList
    assert(built.exists(s => s.root == "KStateDeduplicate" && s.streaming && s.outputMode.isEmpty && !s.queryThread))

    RecordingCheckRule.seen.clear()
    val q = CollectSink.start(df, tempDir("ckpt"), "append")
    try {
      val started = RecordingCheckRule.seen.asScala.toList
      // at start(): the query under WriteToStream, analysed on the caller's thread
      assert(started.exists(s => s.root == "WriteToStream" && s.kstate && s.streaming && !s.queryThread))
      RecordingCheckRule.seen.clear()
      in.addData(("a", 1000L))
      q.processAllAvailable()
      val batch = RecordingCheckRule.seen.asScala.toList.filter(_.kstate)
      // each micro-batch: the plan with the query's thread and its output mode known
      assert(batch.nonEmpty && batch.forall(s => s.streaming && s.queryThread))
      assert(batch.exists(_.outputMode.contains(OutputMode.Append())))
    } finally q.stop()
  }

  test(
    "checkpoint format 2: accepted when a streaming kstate DataFrame is built, at start() and in its micro-batches"
  ) {
    // was KSTATE_UNSUPPORTED_CHECKPOINT_FORMAT; what v2 does is tested in CheckpointFormatV2StreamingSuite
    withConf(FormatKey -> "2") {
      val in = input()
      val df = frame(in).kstate.deduplicateByKey("10 seconds", col("k"), col("ts"))
      val q = CollectSink.start(df, tempDir("ckpt"), "append")
      try {
        in.addData(("a", 1000L), ("a", 2000L), ("b", 1000L))
        q.processAllAvailable()
        assert(CollectSink.rows(q).map(_.getString(0)).sorted == Seq("a", "b"))
      } finally q.stop()
    }
  }

  test("the HDFS provider is recognised by its class, also under another name") {
    for (
      p <- Seq(
        classOf[org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider].getName,
        classOf[RenamedHdfsProvider].getName
      )
    ) {
      val e = withConf(ProviderKey -> p)(kstateError(frame(input()).kstate.deduplicateByKey(
        "10 seconds",
        col("k"),
        col("ts")
      )))
      assert(e.errorClass == "KSTATE_UNSUPPORTED_STATE_PROVIDER" && e.getMessage.contains(p), e.getMessage)
    }
  }

  test("what each provider class has: kstate's all, RocksDB's column families, HDFS's none, subclasses inherit") {
    import org.apache.spark.sql.kstate.execution.StoreCapability._
    val cases = Seq(
      classOf[io.kstate.KStateStoreProvider] -> All,
      classOf[org.apache.spark.sql.kstate.provider.KStateStoreProvider] -> All,
      classOf[SubclassedKStateProvider] -> All,
      classOf[org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider] -> Set(ColumnFamilies),
      classOf[OtherRocksDBProvider] -> Set(ColumnFamilies),
      classOf[org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider] -> Set.empty,
      classOf[RenamedHdfsProvider] -> Set.empty
    )
    cases.foreach { case (cls, caps) => assert(StateProviderCheck.capabilitiesOf(cls) == caps, cls.getName) }
    assert(All == Set(ColumnFamilies, TimeOrderedBuffer, VersionedStore, SpillToDisk))
  }

  test("what execs need: a spilling buffer needs SpillToDisk, a suppress on a table the time-ordered buffer") {
    import org.apache.spark.sql.kstate.execution.StoreCapability._
    val spill = BufferConfig.maxRecords(10).spillToDiskWhenFull
    assert(ofAggregate(None) == Set(ColumnFamilies))
    assert(ofAggregate(Some(Suppressed.untilWindowCloses(BufferConfig.unbounded))) == Set(ColumnFamilies))
    assert(ofAggregate(Some(Suppressed.untilWindowCloses(BufferConfig.maxRecords(10).shutDownWhenFull))) ==
      Set(ColumnFamilies))
    assert(ofAggregate(Some(Suppressed.untilWindowCloses(spill))) == Set(ColumnFamilies, SpillToDisk))
    // spill to disk without a bound never spills
    assert(
      ofAggregate(Some(Suppressed.untilWindowCloses(spill.withNoBound.spillToDiskWhenFull))) == Set(ColumnFamilies)
    )
    assert(ofSuppress(BufferConfig.maxRecords(10)) == Set(ColumnFamilies, TimeOrderedBuffer))
    assert(ofSuppress(spill) == Set(ColumnFamilies, TimeOrderedBuffer, SpillToDisk))
  }

  test("suppress on a table with Spark's RocksDB provider fails when the micro-batch is planned, not in a task") {
    for (provider <- Seq(RocksDB, classOf[OtherRocksDBProvider].getName)) {
      val in = input()
      val df = timeLimit(frame(in))
      val failure = withConf(ProviderKey -> provider)(firstBatchFailure(df, in))
      val (e, inTask) = kstateCause(failure)
      assert(e.errorClass == "KSTATE_UNSUPPORTED_STATE_PROVIDER")
      assert(!inTask, "raised by a task, not when the micro-batch was planned")
      assert(
        e.getMessage.contains("time-ordered suppression buffer") && e.getMessage.contains(provider) &&
          e.getMessage.contains(s"Set $ProviderKey to io.kstate.KStateStoreProvider"),
        e.getMessage
      )
    }
  }

  test(
    "final results that spill to disk on Spark's RocksDB provider fail at planning (they buffered nothing to disk)"
  ) {
    val in = input()
    val df = finalCounts(frame(in), BufferConfig.maxRecords(100).spillToDiskWhenFull)
    val (e, inTask) = kstateCause(withConf(ProviderKey -> RocksDB)(firstBatchFailure(df, in)))
    assert(e.errorClass == "KSTATE_UNSUPPORTED_STATE_PROVIDER" && !inTask)
    assert(e.getMessage.contains("spill_to_disk_when_full"), e.getMessage)
  }

  test("on Spark's RocksDB provider: dedup and final results that do not spill run") {
    withConf(ProviderKey -> RocksDB) {
      val in = input()
      runs(frame(in).kstate.deduplicateByKey("10 seconds", col("k"), col("ts")), in)
      val in2 = input()
      runs(finalCounts(frame(in2), BufferConfig.maxRecords(100).shutDownWhenFull), in2)
    }
  }

  test("a subclass of kstate's provider runs suppress, spilling") {
    withConf(ProviderKey -> classOf[SubclassedKStateProvider].getName) {
      val in = input()
      runs(timeLimit(frame(in), BufferConfig.maxBytes(1 << 20).spillToDiskWhenFull), in)
    }
  }
}

/** Spark's HDFS provider under a name that does not end with `HDFSBackedStateStoreProvider`. */
class RenamedHdfsProvider extends org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider

/** A provider class derived from kstate's. */
class SubclassedKStateProvider extends io.kstate.KStateStoreProvider

/** What a check rule saw of one analysed plan. */
final case class SeenPlan(
    root: String,
    kstate: Boolean,
    streaming: Boolean,
    queryThread: Boolean,
    outputMode: Option[OutputMode]
)

/** An extension with a check rule that records what it sees (for [[KStateCheckRuleSuite]]). */
class RecordingCheckRule extends (SparkSessionExtensions => Unit) {
  override def apply(ext: SparkSessionExtensions): Unit = ext.injectCheckRule { session => (plan: LogicalPlan) =>
    val root = plan match {
      case w: WriteToStream => if (w.inputQuery.exists(_.isInstanceOf[KStateStatefulNode])) "WriteToStream" else "other"
      case p => p.nodeName
    }
    RecordingCheckRule.seen.add(SeenPlan(
      root,
      plan.exists(_.isInstanceOf[KStateStatefulNode]) ||
        root == "WriteToStream",
      plan.isStreaming,
      session.sparkContext.getLocalProperty("sql.streaming.queryId") != null,
      RunningQuery.current(session).map(_.outputMode)
    ))
  }
}

object RecordingCheckRule {
  val seen = new java.util.concurrent.ConcurrentLinkedQueue[SeenPlan]()
}
