package org.apache.spark.sql.kstate.execution

import java.util.UUID
import java.util.concurrent.ConcurrentHashMap

/**
 * Driver-side record, per running query and kstate operator, of the smallest event time a row
 * the operator emits from now on can have (the minimum over its state partitions at the end of
 * the last micro-batch). Written when the micro-batch's progress is made, read when Spark
 * propagates watermarks for the next one ([[KStateStatefulExec.produceOutputWatermark]]).
 *
 * Not persisted: after a restart nothing is known until the first micro-batch ends, and the
 * operator reports no progress of its output (the safe answer). One long per query run and
 * operator, kept for the driver's life.
 */
private[kstate] object OutputWatermarks {
  private val floors = new ConcurrentHashMap[(UUID, Long), java.lang.Long]()

  def record(runId: UUID, operatorId: Long, floor: Long): Unit = floors.put((runId, operatorId), floor)

  def floor(runId: UUID, operatorId: Long): Option[Long] = Option(floors.get((runId, operatorId))).map(_.longValue)
}
