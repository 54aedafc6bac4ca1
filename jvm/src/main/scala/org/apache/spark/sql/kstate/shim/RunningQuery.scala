package org.apache.spark.sql.kstate.shim

import java.util.UUID

import scala.util.Try

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperatorStateInfo
import org.apache.spark.sql.execution.streaming.runtime.{
  IncrementalExecution,
  MicroBatchExecution,
  StreamExecution,
  StreamingQueryWrapper
}
import org.apache.spark.sql.streaming.OutputMode

/**
 * The micro-batch that is being planned or executed on this thread.
 *
 * Spark hands state info only to its own operator classes (IncrementalExecution's `state`
 * rule). A kstate exec takes it instead at planning time from the running query: the
 * micro-batch thread carries the query id as a local property; the query's current
 * IncrementalExecution holds the checkpoint location, run id, batch id, number of state
 * partitions and the watermark propagator. Found by lookup, never cached across batches.
 */
final class RunningQuery private (val execution: IncrementalExecution) {
  def batchId: Long = execution.currentBatchId
  def runId: UUID = execution.runId
  def checkpointLocation: String = execution.checkpointLocation
  def numStatePartitions: Int = execution.numStateStores
  def outputMode: OutputMode = execution.outputMode
  def isFirstBatch: Boolean = execution.isFirstBatch
  def optimizedPlan: LogicalPlan = execution.optimizedPlan

  def stateInfo(operatorId: Long): StatefulOperatorStateInfo =
    StatefulOperatorStateInfo(
      checkpointLocation,
      runId,
      operatorId,
      batchId,
      numStatePartitions,
      None,
      execution.currentStateStoreCkptId.get(operatorId)
    )

  /** Event-time watermark (ms) this operator evicts against in the current batch. */
  def inputWatermarkForEviction(operatorId: Long): Long =
    execution.watermarkPropagator.getInputWatermarkForEviction(batchId, operatorId)
}

object RunningQuery {

  /**
   * Sessions that built kstate DataFrames. A micro-batch is planned in a clone of the session
   * that started the query, and the clone's StreamingQueryManager does not know the query; the
   * session that built the kstate DataFrame (and so started its query) does. Weakly held.
   */
  private val sessions = java.util.Collections.synchronizedMap(
    new java.util.WeakHashMap[SparkSession, java.lang.Boolean]()
  )

  def register(session: SparkSession): Unit = sessions.put(session, java.lang.Boolean.TRUE)

  private def candidates(session: SparkSession): Seq[SparkSession] = {
    val known = sessions.synchronized {
      import scala.jdk.CollectionConverters._
      sessions.keySet().asScala.toList
    }
    (session +: known) ++ SparkSession.getDefaultSession.toSeq
  }

  /**
   * The running micro-batch query this thread is planning/executing, if any. None for batch
   * queries and for streaming plans built outside a running query (e.g. `explain()`).
   */
  def current(session: SparkSession): Option[RunningQuery] = {
    val sc = session.sparkContext
    val queryId = Option(sc.getLocalProperty(StreamExecution.QUERY_ID_KEY))
    val batchId = Option(sc.getLocalProperty(MicroBatchExecution.BATCH_ID_KEY)).map(_.toLong)
    for {
      id <- queryId
      query <- candidates(session).iterator
        .flatMap(s => Try(Option(s.streams.get(UUID.fromString(id)))).toOption.flatten).nextOption()
      exec <- streamExecution(query)
      ie <- Option(exec.lastExecution)
      if batchId.forall(_ == ie.currentBatchId)
    } yield new RunningQuery(ie)
  }

  private def streamExecution(q: AnyRef): Option[StreamExecution] = q match {
    case w: StreamingQueryWrapper => Some(w.streamingQuery)
    case s: StreamExecution => Some(s)
    case _ => None
  }
}
