package org.apache.spark.sql.kstate.execution

import io.kstate.suppress.UntilWindowCloses

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.processor.window.{SessionStore, SpanAggregateProcessor}
import org.apache.spark.sql.kstate.state.{RunningTotal, SessionAggState, StateMeta, StoreSessionAggState}
import org.apache.spark.sql.types.{StructField, StructType}

/**
 * What the aggregations over windows that combine aggregate buffers share (session windows
 * merge, sliding windows are built from their records' buffers): partitioning by key, emitting
 * on stream time, an output watermark, and their state, lists of `[start, end]` buffers per
 * state key ([[SessionAggState]]), bounded like a suppression buffer when final results spill.
 * The rules are the processors' ([[SpanAggregateProcessor]]); a task only adapts rows to them.
 */
trait MergingAggregateExec extends KStateStatefulExec {
  def key: Expression
  def bufferAttributes: Seq[Attribute]
  def initialValues: Seq[Expression]
  def updateExpressions: Seq[Expression]
  def inputBufferAttributes: Seq[Attribute]
  def mergeExpressions: Seq[Expression]
  def resultExpressions: Seq[Expression]
  def finalResults: Option[UntilWindowCloses]

  override def partitionBy: Seq[Expression] = Seq(key)
  override protected def emitsOnTime: Boolean = true
  override protected def tracksOutputTime: Boolean = true

  protected def bufferSchema: StructType =
    StructType(bufferAttributes.map(a => StructField(a.name, a.dataType, a.nullable)))
  override protected def stateValueSchema: StructType = SessionAggState.valueSchema(bufferSchema)

  /** The task's state (on the heap for a batch query) and its running total of late records. */
  protected def openState(store: Option[StateStore]): (SessionStore[UnsafeRow, UnsafeRow], RunningTotal) = {
    FinalResultsBuffer.boundHeap(finalResults, store, entriesPerRecord = 2)
    (store.map(s => new StoreSessionAggState(s, stateKeySchema, bufferSchema)).getOrElse(SessionAggState.onHeap()),
      new RunningTotal(store.map(new StateMeta(_)), StateMeta.LateDroppedTotal))
  }

  /** The aggregate buffers over the child's rows. */
  protected def newBuffers(): AggregateBuffers = new AggregateBuffers(child.output, bufferAttributes,
    initialValues, updateExpressions, inputBufferAttributes, mergeExpressions)

  /** The output rows; `tombstones`: the output has the `tombstone` column. */
  protected def newRows(tombstones: Boolean): SpanRows =
    new SpanRows(key.dataType, output, bufferAttributes, resultExpressions, tombstones)

  /** Runs `processor` over the child's rows: the key projected, output and metrics adapted. */
  protected final class SpanTask(
      processor: SpanAggregateProcessor[UnsafeRow, InternalRow, UnsafeRow],
      state: SessionStore[UnsafeRow, UnsafeRow],
      rows: SpanRows,
      lateTotal: RunningTotal) extends KStateTask {
    private val keyProj = UnsafeProjection.create(Seq(key), child.output)
    private val counters = processor.counters
    private val metricSet = processor.metricSet

    override def advanceStreamTime(t: Long): Unit = processor.advanceStreamTime(t)

    override def process(row: InternalRow, ts: Long, emit: InternalRow => Unit): Unit = {
      val k = keyProj(row)
      processor.process(k, k.isNullAt(0), row, ts, ts == KStateStatefulExec.NullTime)
    }

    override def finish(): Unit = {
      processor.finish()
      FinalResultsBuffer.checkFull(finalResults, operatorName, state.records, state.bytes)
      counters.set(metricSet.LateDroppedTotal, lateTotal.save(counters(metricSet.LateDropped)))
    }

    override def finishOutput: Iterator[InternalRow] = rows.rows.iterator

    /** Windows closed at the close time are gone: a later row ends at or after it. */
    override def outputTimeFloor: Long = processor.closeTime

    override def metrics: KStateTask.Metrics = KStateTask.Metrics.of(counters,
      totalStateRows = state.records,
      updatedStateRows = counters(metricSet.Updates),
      removedStateRows = counters(metricSet.Closed))
  }
}
