package org.apache.spark.sql.kstate.replica

import java.util.{Map => JMap}

import org.apache.spark.sql.kstate.config.KStateConf

import org.apache.spark.SparkEnv
import org.apache.spark.api.plugin.{ExecutorPlugin, PluginContext}
import org.apache.spark.deploy.SparkHadoopUtil

/**
 * The executor half of kstate's plugin: starts this executor's [[ReplicaFollower]], which
 * asks the driver's coordinator through the plugin channel. The follower reads checkpoint files
 * with the executor's Hadoop configuration (`spark.hadoop.*` settings apply; settings made
 * only in a session's runtime configuration do not).
 */
final class ReplicaExecutorPlugin extends ExecutorPlugin {
  private var follower: ReplicaFollower = _

  override def init(ctx: PluginContext, extraConf: JMap[String, String]): Unit = {
    // The host as the scheduler knows it (its task locations): the block manager's. Not
    // ctx.hostname(): an executor's RPC environment has no address of its own.
    val f = new ReplicaFollower(
      p => ReplicaProtocol.decodeAssignments(ctx.ask(ReplicaProtocol.encode(p)).asInstanceOf[String]),
      ctx.executorID(),
      () => Option(SparkEnv.get.blockManager.blockManagerId).map(_.host).orNull,
      KStateConf.ReplicaPollInterval.get(ctx.conf()),
      () => SparkHadoopUtil.get.newConfiguration(SparkEnv.get.conf)
    )
    follower = f
    f.start()
  }

  override def shutdown(): Unit = if (follower != null) follower.shutdown()
}
