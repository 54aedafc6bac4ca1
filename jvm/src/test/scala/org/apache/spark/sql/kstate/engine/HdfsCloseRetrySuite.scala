package org.apache.spark.sql.kstate.engine

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.hdfs.HdfsConfiguration
import org.scalatest.funsuite.AnyFunSuite

class HdfsCloseRetrySuite extends AnyFunSuite {
  import HdfsCloseRetry._

  test(
    "with HDFS's defaults, kstate's files get a copy with sooner and more retries; the application's conf is untouched"
  ) {
    // HDFS's defaults: from hdfs-default.xml where the classpath has it (the HDFS client's
    // built-in 400 ms and 5 retries otherwise)
    val conf = new HdfsConfiguration()
    def defaults(c: Configuration) =
      Option(c.get(InitialDelayKey)).forall(_ == "400") && Option(c.get(RetriesKey)).forall(_ == "5")
    assert(defaults(conf))
    val tuned = HdfsCloseRetry(conf)
    assert(tuned ne conf)
    assert(tuned.getInt(InitialDelayKey, -1) == InitialDelayMs && tuned.getInt(RetriesKey, -1) == Retries)
    assert(defaults(conf))
    // the client waits at least as long in all before it gives up on a file
    def patience(first: Long, retries: Int) = (0 until retries).map(first << _).sum
    assert(patience(InitialDelayMs, Retries) >= patience(400, 5))
    // the rest of the configuration is carried over
    conf.set("some.other.key", "x")
    assert(HdfsCloseRetry(conf).get("some.other.key") == "x")
  }

  test("a user's setting of either key is kept, both keys as they are") {
    Seq(InitialDelayKey -> "100", RetriesKey -> "3").foreach { case (k, v) =>
      val conf = new HdfsConfiguration()
      conf.set(k, v, "Set by Spark from keys starting with 'spark.hadoop'")
      assert(HdfsCloseRetry(conf) eq conf, k)
    }
    val plain = new Configuration(false)
    plain.set(InitialDelayKey, "50")
    assert(HdfsCloseRetry(plain) eq plain)
  }
}
