package org.apache.spark.sql.kstate.execution

import scala.reflect.ClassTag

import org.apache.spark.{Partition, TaskContext}
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperatorStateInfo
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.kstate.replica.{ReplicaCoordinator, ReplicaStore}
import org.apache.spark.sql.types.StructType
import org.apache.spark.util.SerializableConfiguration

/**
 * Runs `f` on each partition of `prev` with that partition's writable [[StateStore]].
 *
 * Spark's own StateStoreRDD takes the provider class from the session's SQLConf; kstate picks
 * its provider itself (`storeConf` is built with kstate's provider class), so kstate operators
 * and Spark's operators in one query may use different providers.
 *
 * Life cycle per task: the store is opened at `stateInfo.storeVersion`; `f` must commit it
 * before its iterator is exhausted; a task that ends without a commit aborts the store, so a
 * failed batch leaves the previous version as the latest.
 *
 * Placement: each partition prefers the executor Spark's coordinator recorded for its store.
 * With standby replicas (`standbys`, docs/replicas.md), the driver first tells kstate's replica
 * coordinator that this micro-batch runs from `stateInfo.storeVersion` (the newest committed
 * version), and a partition prefers what the coordinator says: its warmest copy when its
 * recorded executor was lost, the destination of a planned move once the copy there is warm.
 */
final class KStateStoreRDD[U: ClassTag](
    prev: RDD[org.apache.spark.sql.catalyst.InternalRow],
    stateInfo: StatefulOperatorStateInfo,
    keySchema: StructType,
    valueSchema: StructType,
    keySpec: KeyStateEncoderSpec,
    useColumnFamilies: Boolean,
    storeConf: StateStoreConf,
    hadoopConf: Broadcast[SerializableConfiguration],
    @transient private val coordinator: Option[StateStoreCoordinatorRef],
    standbys: Option[KStateStoreRDD.Standbys],
    f: (StateStore, Iterator[org.apache.spark.sql.catalyst.InternalRow]) => Iterator[U]
) extends RDD[U](prev) {

  /** Driver only: the partitions, once the replica coordinator knows of this micro-batch. */
  override protected def getPartitions: Array[Partition] = {
    val parts = prev.partitions
    for (s <- standbys; rc <- ReplicaCoordinator.current) {
      rc.plan(
        s.queryId,
        stateInfo.checkpointLocation,
        stateInfo.operatorId,
        StateStoreId.DEFAULT_STORE_NAME,
        parts.length,
        s.wanted,
        stateInfo.storeVersion,
        p => sparkLocation(p)
      )
    }
    parts
  }

  private def providerId(partition: Int): StateStoreProviderId =
    StateStoreProviderId(
      StateStoreId(stateInfo.checkpointLocation, stateInfo.operatorId, partition),
      stateInfo.queryRunId
    )

  private def sparkLocation(partition: Int): Option[String] = coordinator.flatMap(_.getLocation(providerId(partition)))

  override def getPreferredLocations(split: Partition): Seq[String] = {
    val spark = sparkLocation(split.index)
    val replicas = for (s <- standbys if s.wanted.any; rc <- ReplicaCoordinator.current) yield {
      val store = ReplicaStore(
        s.queryId,
        stateInfo.checkpointLocation,
        stateInfo.operatorId,
        split.index,
        StateStoreId.DEFAULT_STORE_NAME
      )
      rc.preferredLocations(store, spark)
    }
    replicas.getOrElse(spark.toSeq)
  }

  override def compute(split: Partition, context: TaskContext): Iterator[U] = {
    val store = StateStore.get(
      providerId(split.index),
      keySchema,
      valueSchema,
      keySpec,
      stateInfo.storeVersion,
      stateInfo.getStateStoreCkptId(split.index).map(_.head),
      None,
      useColumnFamilies,
      storeConf,
      hadoopConf.value.value,
      false
    )
    context.addTaskCompletionListener[Unit] { _ =>
      if (!store.hasCommitted) store.abort()
    }
    f(store, prev.iterator(split, context))
  }
}

object KStateStoreRDD {

  /** The query's id and what its operator wants of the replica coordinator (0 standbys: nothing). */
  final case class Standbys(queryId: String, wanted: ReplicaCoordinator.Wanted)
}
