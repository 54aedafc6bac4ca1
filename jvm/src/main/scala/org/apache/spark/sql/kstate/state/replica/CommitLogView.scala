package org.apache.spark.sql.kstate.state.replica

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

/**
 * What a follower reads of a query's commit log (`<checkpoint>/commits/<batchId>`, beside the
 * state directory `<checkpoint>/state`): whether a micro-batch committed. The coordinator knows
 * the version each micro-batch starts from when it is planned; the batch's own version (that
 * plus one) is final once its commit log entry exists, which the driver writes after every task
 * committed and before it plans the next batch. Reading it lets a standby hold the newest
 * version instead of the one before.
 *
 * Threading: stateless; the follower thread only.
 */
private[replica] object CommitLogView {
  /**
   * The newest committed version of `store`, given that `planned` (the version the latest
   * planned micro-batch started from) is committed: `planned + 1` once batch `planned`
   * committed, else `planned`.
   */
  def newest(store: ReplicaStore, planned: Long, hadoopConf: Configuration): Long = {
    val commits = new Path(new Path(store.stateRoot).getParent, "commits")
    val entry = new Path(commits, planned.toString)
    if (entry.getFileSystem(hadoopConf).exists(entry)) planned + 1 else planned
  }
}
