package io.kstate.testing

import java.nio.file.Files

import org.apache.spark.sql.SparkSession
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

/** One local SparkSession with kstate's extension for a suite; a fresh checkpoint dir per use. */
abstract class KStateSparkSuite extends AnyFunSuite with BeforeAndAfterAll {
  @transient private var _spark: SparkSession = _
  protected def spark: SparkSession = _spark

  protected def extraConf: Map[String, String] = Map.empty

  override def beforeAll(): Unit = {
    super.beforeAll()
    val b = SparkSession.builder()
      .master("local[2]")
      .appName(getClass.getSimpleName)
      .config("spark.sql.extensions", "io.kstate.KStateExtensions")
      .config("spark.sql.shuffle.partitions", "3")
      .config("spark.ui.enabled", "false")
      .config("spark.sql.streaming.stateStore.maintenanceInterval", "600s")
      // suites feed MemoryStreams as ordered logs and check Kafka's record order; the default
      // policy (auto) is tested where the order is the subject
      .config("spark.kstate.processingOrder", "task")
      // Checkpoints through Hadoop's FileSystem API rather than its FileContext API (Spark's
      // default): on a local disk without Hadoop's native library, FileContext forks a `readlink`
      // process for every path it resolves, dozens per micro-batch. Measured on 2026-11-28, two
      // streaming suites (18 tests), alternating: 67 and 60 s against 91 and 78 s. A suite that
      // wants Spark's default names it in `extraConf` (`SparkDefaultCheckpointFiles`).
      .config(KStateSparkSuite.CheckpointFileManager, KStateSparkSuite.FileSystemCheckpointFiles)
    _spark = extraConf.foldLeft(b) { case (acc, (k, v)) => acc.config(k, v) }.getOrCreate()
    _spark.sparkContext.setLogLevel("WARN")
  }

  override def afterAll(): Unit = {
    try if (_spark != null) _spark.stop()
    finally super.afterAll()
  }

  protected def tempDir(prefix: String): String =
    Files.createTempDirectory(prefix).toFile.getAbsolutePath
}

object KStateSparkSuite {
  val CheckpointFileManager = "spark.sql.streaming.checkpointFileManagerClass"
  private val Checkpointing = "org.apache.spark.sql.execution.streaming.checkpointing"
  val FileSystemCheckpointFiles = s"$Checkpointing.FileSystemBasedCheckpointFileManager"

  /** Spark's default for a local disk (`extraConf` of a suite that runs on it). */
  val SparkDefaultCheckpointFiles: Map[String, String] =
    Map(CheckpointFileManager -> s"$Checkpointing.FileContextBasedCheckpointFileManager")
}
