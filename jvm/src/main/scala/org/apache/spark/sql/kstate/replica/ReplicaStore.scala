package org.apache.spark.sql.kstate.replica

import org.apache.spark.sql.execution.streaming.state.StateStoreId

/**
 * A state store as replicas know it: one store of one state partition of one stateful
 * operator of one query. Stable across restarts of the query (the query id, not the run id):
 * a standby kept while the query restarts still serves it.
 *
 * @param queryId   the query's id (its checkpoint's, unchanged by restarts)
 * @param stateRoot the query's state directory (`<checkpoint>/state`)
 */
final case class ReplicaStore(
    queryId: String,
    stateRoot: String,
    operatorId: Long,
    partition: Int,
    storeName: String
) {
  def storeId: StateStoreId = StateStoreId(stateRoot, operatorId, partition, storeName)

  override def toString: String = s"query $queryId operator $operatorId partition $partition store '$storeName'"
}

object ReplicaStore {

  /** The store of `id` in query `queryId`. */
  def of(queryId: String, id: StateStoreId): ReplicaStore =
    ReplicaStore(queryId, id.checkpointRootLocation, id.operatorId, id.partitionId, id.storeName)
}
