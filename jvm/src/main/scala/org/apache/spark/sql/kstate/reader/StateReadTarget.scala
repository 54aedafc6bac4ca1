package org.apache.spark.sql.kstate.reader

import java.util.UUID

import org.apache.spark.sql.kstate.config.KStateConf
import org.apache.spark.sql.kstate.errors.KStateErrors
import org.apache.hadoop.conf.Configuration

import org.apache.spark.sql.classic.{SparkSession => ClassicSession}
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.StructType

/**
 * What the tasks of a state read need, resolved and checked on the driver: one store of one
 * kstate operator at one state version, on `numPartitions` state partitions.
 *
 * @param stateRoot `<checkpoint>/state` (qualified)
 * @param version the state version read: the batch id + 1, the version a micro-batch commits
 * @param keySchema the default column family's key schema, as recorded in the state schema file
 * @param storeConf the store configuration: the session's, overlaid with the batch's recorded
 *   configuration, with the operator's provider class and kstate's store defaults, and the
 *   checkpoint's state checkpoint format (2 when the batch's commit log entry holds ids)
 * @param checkpointIds checkpoint format v2: the checkpoint id of each partition's store at
 *   `version` (the batch's commit log entry's `stateUniqueIds`, as Spark's `statestore` reader
 *   takes them); None for format v1
 */
final case class StateReadTarget(
    stateRoot: String,
    operatorId: Long,
    storeName: String,
    batchId: Long,
    numPartitions: Int,
    keySchema: StructType,
    valueSchema: StructType,
    storeConf: StateStoreConf,
    checkpointIds: Option[Seq[String]] = None
) {
  def version: Long = batchId + 1

  def storeId(partition: Int): StateStoreId = StateStoreId(stateRoot, operatorId, partition, storeName)

  /** The checkpoint id to open `partition`'s store with (format v2), else None. */
  def idOf(partition: Int): Option[String] = checkpointIds.map(_(partition))
}

object StateReadTarget {

  /** The state store kstate operators keep their state in. */
  val DefaultStoreName: String = "default"

  /**
   * Resolves a read request against the checkpoint at `checkpointLocation`.
   *
   * Checks, in this order, each failing with a [[io.kstate.KStateException]]: arguments
   * (`KSTATE_INVALID_STATE_READ`: negative batch id, empty name); a committed batch exists and
   * `batchId` (default: the latest) is one of them; the operator is a kstate operator of the
   * checkpoint; its store has a state schema file (these three `KSTATE_STATE_NOT_FOUND`).
   * Reads only metadata: no state file is opened here.
   */
  def resolve(
      session: ClassicSession,
      checkpointLocation: String,
      operator: OperatorSelector,
      batchId: Option[Long],
      storeName: String
  ): StateReadTarget = {
    if (checkpointLocation == null || checkpointLocation.trim.isEmpty) {
      throw KStateErrors.invalidStateRead("the checkpoint location is empty")
    }
    operator match {
      case OperatorSelector.ByName(n) if n == null || n.isEmpty =>
        throw KStateErrors.invalidStateRead("the operator name is empty")
      case _ =>
    }
    batchId.filter(_ < 0).foreach { b =>
      throw KStateErrors.invalidStateRead(s"batch id $b is negative; micro-batches count from 0")
    }
    if (storeName == null || storeName.isEmpty) {
      throw KStateErrors.invalidStateRead("the store name is empty")
    }

    val view = new CheckpointView(session, checkpointLocation)
    val committed = view.committedBatches
    if (committed.isEmpty) throw KStateErrors.noCommittedBatch(view.root.toString)
    val batch = batchId.getOrElse(committed.last)
    if (!view.isCommitted(batch)) {
      throw KStateErrors.batchNotCommitted(batch, view.root.toString, committed.head, committed.last)
    }

    val found = view.kstateOperators
    val op = found.find(operator.matches).getOrElse(throw KStateErrors.unknownStateOperator(
      operator.describe,
      view.root.toString,
      found.map(_.describe)
    ))

    val (keySchema, valueSchema) =
      defaultFamilySchema(view.stateRoot.toString, op, storeName, view.hadoopConf)
    val recorded = view.recordedConf(batch)
    val numPartitions = recorded.get(SQLConf.SHUFFLE_PARTITIONS.key).flatMap(_.toIntOption)
      .getOrElse(view.partitionDirectories(op.id))
    val ids = checkpointIdsOf(view, batch, op, numPartitions)
    StateReadTarget(
      view.stateRoot.toString,
      op.id,
      storeName,
      batch,
      numPartitions,
      keySchema,
      valueSchema,
      storeConf(session.sessionState.conf, recorded, op.providerClass, ids.isDefined),
      ids
    )
  }

  /**
   * Checkpoint format v2: each partition's checkpoint id of `op` at batch `batch`'s version,
   * from the batch's commit log entry (its first store's: kstate operators keep one store per
   * partition). `KSTATE_CHECKPOINT_ID_MISSING` when the entry has ids, but none for this operator
   * or a partition of it.
   */
  private def checkpointIdsOf(view: CheckpointView, batch: Long, op: RecordedOperator, numPartitions: Int)
      : Option[Seq[String]] = view.checkpointIds(batch).map { all =>
    val perPartition = all.getOrElse(op.id, Array.empty[Array[String]])
    (0 until numPartitions).map { p =>
      perPartition.lift(p).flatMap(_.headOption).getOrElse(throw KStateErrors.checkpointIdMissing(
        s"kstate operator ${op.describe}, partition $p",
        batch + 1,
        Nil
      ))
    }
  }

  /** Key and value schema of the default column family, from the store's state schema file. */
  private def defaultFamilySchema(
      stateRoot: String,
      op: RecordedOperator,
      storeName: String,
      hadoopConf: Configuration
  )
      : (StructType, StructType) = {
    val storeId = StateStoreId(stateRoot, op.id, 0, storeName)
    val file = StateSchemaCompatibilityChecker.schemaFile(storeId.storeCheckpointLocation())
    def missing = KStateErrors.stateSchemaMissing(op.describe, storeName, file.toString)
    if (!CheckpointFileManager.create(file.getParent, hadoopConf).exists(file)) throw missing
    // Spark's checker reads the file kstate's operators wrote through it; it creates nothing
    // when told not to create the schema directory.
    val checker = new StateSchemaCompatibilityChecker(
      StateStoreProviderId(storeId, UUID.randomUUID()),
      hadoopConf,
      Nil,
      None,
      false
    )
    checker.readSchemaFile().find(_.colFamilyName == StateStore.DEFAULT_COL_FAMILY_NAME)
      .map(s => (s.keySchema, s.valueSchema)).getOrElse(throw missing)
  }

  /**
   * The store configuration the operator's tasks ran with, as far as it can be known: the
   * session's configuration, the batch's recorded configuration over it, the operator's
   * provider class, and kstate's store defaults where the session does not set them (as
   * kstate's operators do, `KStateConf.StoreDefaults`).
   */
  private def storeConf(session: SQLConf, recorded: Map[String, String], provider: String, withIds: Boolean)
      : StateStoreConf = {
    val conf = session.clone()
    recorded.foreach { case (k, v) => conf.setConfString(k, v) }
    conf.setConfString(SQLConf.STATE_STORE_PROVIDER_CLASS.key, provider)
    // the checkpoint's format, whatever the session's (Spark records it in the commit log only)
    conf.setConfString(SQLConf.STATE_STORE_CHECKPOINT_FORMAT_VERSION.key, if (withIds) "2" else "1")
    KStateConf.StoreDefaults.foreach { case (k, v) =>
      if (!session.contains(k)) conf.setConfString(k, v)
    }
    new StateStoreConf(conf, Map.empty)
  }
}
