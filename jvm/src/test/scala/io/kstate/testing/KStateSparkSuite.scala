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
