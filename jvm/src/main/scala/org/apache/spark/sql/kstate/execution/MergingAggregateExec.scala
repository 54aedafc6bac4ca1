package org.apache.spark.sql.kstate.execution

import io.kstate.suppress.UntilWindowCloses

import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.state.{HeapSessionAggState, RunningTotal, SessionAggState, StateMeta, StoreSessionAggState}
import org.apache.spark.sql.types.{StructField, StructType}

/**
 * What the aggregations over windows that combine aggregate buffers share (session windows
 * merge, sliding windows are built from their records' buffers): partitioning by key, emitting
 * on stream time, an output watermark, lateness metrics, and their state, lists of
 * `[start, end]` buffers per state key ([[SessionAggState]]), bounded like a suppression buffer
 * when final results spill.
 */
trait MergingAggregateExec extends KStateStatefulExec {
  def key: Expression
  def bufferAttributes: Seq[Attribute]
  def finalResults: Option[UntilWindowCloses]

  override def partitionBy: Seq[Expression] = Seq(key)
  override protected def emitsOnTime: Boolean = true
  override protected def tracksOutputTime: Boolean = true
  override protected def maxMetrics: Set[String] = AggregateMetrics.Maxima
  override protected def averageMetrics: Seq[(String, String, String)] = AggregateMetrics.Averages

  protected def bufferSchema: StructType =
    StructType(bufferAttributes.map(a => StructField(a.name, a.dataType, a.nullable)))
  override protected def stateValueSchema: StructType = SessionAggState.valueSchema(bufferSchema)

  /** The task's state (on the heap for a batch query) and its running total of late records. */
  protected def openState(store: Option[StateStore]): (SessionAggState, RunningTotal) = {
    FinalResultsBuffer.boundHeap(finalResults, store, entriesPerRecord = 2)
    (store.map(s => new StoreSessionAggState(s, stateKeySchema, bufferSchema)).getOrElse(new HeapSessionAggState),
      new RunningTotal(store.map(new StateMeta(_)), StateMeta.LateDroppedTotal))
  }
}
