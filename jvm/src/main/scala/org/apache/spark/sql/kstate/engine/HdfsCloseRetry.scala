package org.apache.spark.sql.kstate.engine

import org.apache.hadoop.conf.Configuration

/**
 * How long kstate's HDFS client waits before asking the NameNode again to complete a state file
 * it has closed. Closing an HDFS file asks the NameNode to complete it; when the DataNodes have
 * not yet reported the file's last block, the client sleeps and asks again, doubling the sleep
 * each time: by default 400 ms first (`dfs.client.block.write.locateFollowingBlock.initial.delay.ms`),
 * at most 5 retries (`...retries`), about 12 s in all. A commit writes one changelog per state
 * partition and often loses that race by a few milliseconds, so on HDFS a commit took 400 ms
 * more in about half the closes measured (docs/state-store.md, "Checkpoints on HDFS and S3").
 *
 * Decision: for kstate's own state files (a copy of the configuration, nothing else in the
 * application changes), the first retry comes after [[InitialDelayMs]] and there are
 * [[Retries]] of them, so the client waits longer in all (about 20 s) than with the defaults
 * before it gives up on a file, and a lost race costs tens of milliseconds instead of 400. A user
 * who set either key (`spark.hadoop.dfs.client.block.write.locateFollowingBlock.*`) keeps both
 * as set.
 */
private[kstate] object HdfsCloseRetry {
  val InitialDelayKey = "dfs.client.block.write.locateFollowingBlock.initial.delay.ms"
  val RetriesKey = "dfs.client.block.write.locateFollowingBlock.retries"

  val InitialDelayMs = 20
  val Retries = 10

  /** `conf`, or a copy with kstate's retry settings when the user set neither key. */
  def apply(conf: Configuration): Configuration =
    if (setByUser(conf, InitialDelayKey) || setByUser(conf, RetriesKey)) conf
    else {
      val c = new Configuration(conf)
      c.setInt(InitialDelayKey, InitialDelayMs)
      c.setInt(RetriesKey, Retries)
      c
    }

  /** Set anywhere but Hadoop's own defaults files. */
  private def setByUser(conf: Configuration, key: String): Boolean = {
    val sources = conf.getPropertySources(key)
    sources != null && !sources.forall(_.endsWith("-default.xml"))
  }
}
