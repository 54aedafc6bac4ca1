package io.kstate

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.kstate.repartition.StateRepartition
import org.apache.spark.sql.kstate.shim.SparkShim

/**
 * Rescaling a stopped streaming query's state: moves the state of every kstate operator in its
 * checkpoint to `numPartitions` state partitions, so the query restarts with that many
 * (`spark.sql.shuffle.partitions` is fixed by the checkpoint otherwise). Kafka Streams cannot do
 * this: a topology's partition count is its input topics', and changing it means a reset.
 *
 * Contract (docs/operators.md, "Rescaling state"):
 *  - Offline: the query must be stopped; the call runs Spark jobs on this session's cluster.
 *  - Keys move with their state; each new partition's stream time is the largest of the old
 *    partitions' (so nothing that closed, was emitted or was cleaned up comes back); counters
 *    are recounted for each new partition.
 *  - Exactly once: it adds one micro-batch that reads no input (as Spark's own
 *    `StreamingCheckpointManager.repartition`); returns its id. Everything is checked and every
 *    new partition's state is written to a staging directory before the checkpoint's logs
 *    change, so an error there (`KSTATE_INVALID_REPARTITION`, `KSTATE_REPARTITION_NOT_NEEDED`,
 *    `KSTATE_REPARTITION_UNCOMMITTED_BATCH`, `KSTATE_REPARTITION_UNFINISHED`,
 *    `KSTATE_REPARTITION_UNSUPPORTED_STATE`, a state file's own error) leaves it unchanged. A
 *    failure after that leaves an unfinished repartition, which the same call finishes.
 *  - Supported: every kstate operator on kstate's own state store provider, and Spark's own
 *    stateful operators in the same checkpoint that Spark's repartition knows, on Spark's RocksDB
 *    provider (moved by Spark's own rewrite), its HDFS provider or kstate's (format 1, plain
 *    keys). Others: `KSTATE_REPARTITION_UNSUPPORTED_STATE`.
 */
object KStateRepartition {
  def repartitionState(spark: SparkSession, checkpointLocation: String, numPartitions: Int): Long =
    StateRepartition.run(SparkShim.classic(spark), checkpointLocation, numPartitions)

  /**
   * Fails with `KSTATE_REPARTITION_NEEDS_KSTATE` when the checkpoint holds kstate operators, whose
   * state Spark's `StreamingCheckpointManager.repartition` cannot move; called by kstate's Python
   * package before Spark's, so that nothing is written. (A Scala call of Spark's method writes its
   * offset log entry, then fails; kstate undoes that entry when the query starts.)
   */
  def checkSparkRepartition(spark: SparkSession, checkpointLocation: String): Unit =
    StateRepartition.checkSparkRepartition(SparkShim.classic(spark), checkpointLocation)
}
