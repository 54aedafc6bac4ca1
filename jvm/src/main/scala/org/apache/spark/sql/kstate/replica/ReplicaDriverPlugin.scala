package org.apache.spark.sql.kstate.replica

import java.util.{Collections, Map => JMap}

import org.apache.spark.sql.kstate.config.KStateConf

import org.apache.spark.SparkContext
import org.apache.spark.api.plugin.{DriverPlugin, PluginContext}
import org.apache.spark.scheduler.{SparkListener, SparkListenerEvent, SparkListenerExecutorRemoved}
import org.apache.spark.sql.streaming.StreamingQueryListener

/**
 * The driver half of kstate's plugin: creates this SparkContext's [[ReplicaCoordinator]],
 * feeds it executor removals and query terminations from Spark's listener bus, and answers the
 * executors' followers.
 */
final class ReplicaDriverPlugin extends DriverPlugin {
  private var coordinator: ReplicaCoordinator = _

  override def init(sc: SparkContext, ctx: PluginContext): JMap[String, String] = {
    val interval = KStateConf.ReplicaPollInterval.get(sc.conf)
    // local mode lists no executors (its scheduler is no allocation client): liveness then
    // comes from the listener bus alone
    val c = new ReplicaCoordinator(
      liveAfterMillis = math.max(5 * interval, 10000L),
      schedulerExecutors = () => Some(sc.getExecutorIds().toSet).filter(_.nonEmpty)
    )
    coordinator = c
    ReplicaCoordinator.install(c)
    sc.addSparkListener(new SparkListener {
      override def onExecutorRemoved(e: SparkListenerExecutorRemoved): Unit = c.executorRemoved(e.executorId)
      override def onOtherEvent(e: SparkListenerEvent): Unit = e match {
        case t: StreamingQueryListener.QueryTerminatedEvent => c.queryTerminated(t.id.toString)
        case _ =>
      }
    })
    Collections.emptyMap()
  }

  override def receive(message: AnyRef): AnyRef = message match {
    case json: String => ReplicaProtocol.encode(coordinator.poll(ReplicaProtocol.decodePoll(json)))
    case other => throw new IllegalArgumentException(s"kstate's replica coordinator got an unknown message: $other")
  }

  override def shutdown(): Unit = if (coordinator != null) ReplicaCoordinator.uninstall(coordinator)
}
