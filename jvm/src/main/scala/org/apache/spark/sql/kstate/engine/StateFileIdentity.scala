package org.apache.spark.sql.kstate.engine

import org.apache.spark.sql.execution.streaming.state.StateStoreId

/**
 * Whose a state file is: the operator id, store name and state partition of the store that
 * wrote it.
 *
 * Contract: every state file of format 2 or later carries its writer's identity in its header,
 * covered by the file's checksum; a restore compares it with the identity of the store being
 * loaded and refuses a file of another store (`KSTATE_STATE_FILE_CORRUPT`), so a valid file
 * copied or moved into another store's directory is never restored as that store's state.
 * The checkpoint location is not part of the identity: a checkpoint copied or moved as a whole
 * restores at its new location.
 */
private[kstate] final case class StateFileIdentity(operatorId: Long, storeName: String, partitionId: Int) {

  /** Appends the identity's header fields: operatorId:long storeName:utf partitionId:int. */
  def writeTo(out: ChecksummedOutput): Unit = {
    out.writeLong(operatorId); out.writeUTF(storeName); out.writeInt(partitionId)
  }

  /** As errors name it: `operator 7, store 'default', partition 0`. */
  override def toString: String = s"operator $operatorId, store '$storeName', partition $partitionId"
}

private[kstate] object StateFileIdentity {
  def of(id: StateStoreId): StateFileIdentity = StateFileIdentity(id.operatorId, id.storeName, id.partitionId)

  /** Reads the fields [[StateFileIdentity.writeTo]] wrote. */
  def readFrom(in: ChecksummedInput): StateFileIdentity = {
    val operatorId = in.readLong()
    val storeName = in.readUTF()
    StateFileIdentity(operatorId, storeName, in.readInt())
  }
}
