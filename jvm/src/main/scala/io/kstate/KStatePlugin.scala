package io.kstate

import org.apache.spark.api.plugin.{DriverPlugin, ExecutorPlugin, SparkPlugin}
import org.apache.spark.sql.kstate.replica.{ReplicaDriverPlugin, ReplicaExecutorPlugin}

/**
 * kstate's Spark plugin, for standby replicas (docs/replicas.md): on the driver, the replica
 * coordinator; on each executor, the follower that keeps that executor's standby copies
 * current. Load it at application start with `spark.plugins=io.kstate.KStatePlugin` (PySpark's
 * `kstate.configure` adds it). Without standby replicas (`spark.kstate.standbyReplicas=0`, the
 * default) it holds nothing: each executor's follower asks the driver once per
 * `spark.kstate.replicas.pollInterval` and is told to hold nothing.
 */
class KStatePlugin extends SparkPlugin {
  override def driverPlugin(): DriverPlugin = new ReplicaDriverPlugin
  override def executorPlugin(): ExecutorPlugin = new ReplicaExecutorPlugin
}
