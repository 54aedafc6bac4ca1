package org.apache.spark.sql.kstate.provider

import java.util.concurrent.{CountDownLatch, ExecutorService, Executors, ThreadFactory}

/**
 * The thread that writes the snapshots Spark asks a commit for (`forceSnapshotOnCommit`).
 *
 * Contract:
 *  - The committing task freezes the new version's view under its provider's lock (a copy of
 *    the heap copy's index, or a RocksDB snapshot: milliseconds) and returns; the snapshot is
 *    written, published and reported to Spark's coordinator here, off the micro-batch's path.
 *    Spark's own RocksDB provider does the same: its commit makes a local checkpoint and its
 *    maintenance uploads it.
 *  - A job that fails logs and changes nothing: the changelogs still restore the version.
 *
 * Threading: one daemon thread per JVM, `kstate-forced-snapshot`; jobs run one at a time in the
 * order asked, so that an executor asked for many snapshots at once keeps its cores for tasks.
 */
private[kstate] object ForcedSnapshots {

  private lazy val writer: ExecutorService = Executors.newSingleThreadExecutor(new ThreadFactory {
    override def newThread(r: Runnable): Thread = {
      val t = new Thread(r, "kstate-forced-snapshot")
      t.setDaemon(true)
      t
    }
  })

  /** Queues `job` on the writer thread. */
  def submit(job: Runnable): Unit = writer.execute(job)

  /** Tests: returns once every job queued before it has run. */
  private[kstate] def awaitQueued(): Unit = {
    val done = new CountDownLatch(1)
    writer.execute(() => done.countDown())
    done.await()
  }
}
