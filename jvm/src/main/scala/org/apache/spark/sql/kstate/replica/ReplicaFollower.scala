package org.apache.spark.sql.kstate.replica

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration

import org.apache.spark.internal.Logging
import org.apache.spark.sql.kstate.replica.ReplicaProtocol.{Assignments, Poll}

/**
 * The executor's follower thread (one per executor JVM, started by kstate's plugin): every
 * `intervalMillis` it asks the coordinator what to hold, saying what it holds, and makes
 * [[KStateReplicas]] match the answer (docs/replicas.md, "How a standby learns of new
 * versions"). It polls: the driver cannot call executors, and a poll adds no job and no
 * barrier to a micro-batch. It applies committed versions only.
 *
 * A failed poll or catch-up is logged and retried at the next interval; the thread ends only
 * at [[shutdown]]. `host` and `hadoopConf` are asked for on the thread, after the executor
 * finished starting.
 */
private[kstate] final class ReplicaFollower(
    ask: Poll => Assignments,
    executorId: String,
    host: () => String,
    intervalMillis: Long,
    hadoopConf: () => Configuration
) extends Thread("kstate-replica-follower") with Logging {
  setDaemon(true)
  @volatile private var stopped = false

  override def run(): Unit = {
    KStateReplicas.start()
    lazy val conf = hadoopConf()
    var hostName: String = null
    while (!stopped) {
      try {
        if (hostName == null) hostName = host() // null until the executor's block manager registered
        val a = if (hostName == null) Assignments(Nil)
        else ask(Poll(executorId, hostName, KStateReplicas.holdings, KStateReplicas.loaded))
        if (!stopped) KStateReplicas.follow(a.standbys, conf)
      } catch {
        case _: InterruptedException if stopped =>
        case NonFatal(e) => logWarning(s"kstate replica follower on executor $executorId: poll failed", e)
      }
      try Thread.sleep(intervalMillis)
      catch { case _: InterruptedException => }
    }
  }

  /** Stops the thread and drops every standby copy of this executor. */
  def shutdown(): Unit = {
    stopped = true
    interrupt()
    join(10000)
    KStateReplicas.stop()
  }
}
