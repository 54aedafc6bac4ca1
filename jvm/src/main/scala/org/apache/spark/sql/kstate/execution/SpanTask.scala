package org.apache.spark.sql.kstate.execution

import io.kstate.windows.{SessionWindows, SlidingWindows}

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.processor.window.{
  SessionAggregateProcessor,
  SessionStore,
  SlidingAggregateProcessor,
  SpanAggregateProcessor
}
import org.apache.spark.sql.kstate.operatorstate.{RunningTotal, SessionAggState, StateMeta, StoreSessionAggState}
import org.apache.spark.sql.types.{StructField, StructType}

/**
 * One state partition's micro-batch of a windowed aggregation over windows that combine
 * aggregate buffers (session windows merge, sliding windows are built from their records'
 * buffers): a [[SpanAggregateProcessor]] ([[SessionAggregateProcessor]] or
 * [[SlidingAggregateProcessor]]) over lists of `[start, end]` buffers per state key
 * ([[SessionAggState]]), bounded like a suppression buffer when final results spill. The task
 * projects the key, folds rows with Spark's buffers ([[AggregateBuffers]]) and turns spans into
 * rows ([[SpanRows]]).
 */
private[execution] final class SpanTask private (
    exec: KStateWindowedAggregateExec,
    processor: SpanAggregateProcessor[UnsafeRow, InternalRow, UnsafeRow],
    state: SessionStore[UnsafeRow, UnsafeRow],
    rows: SpanRows,
    lateTotal: RunningTotal
) extends KStateTask {
  private val keyProj = UnsafeProjection.create(Seq(exec.key), exec.child.output)
  private val counters = processor.counters
  private val metricSet = processor.metricSet

  override def advanceStreamTime(t: Long): Unit = processor.advanceStreamTime(t)

  override def process(row: InternalRow, ts: Long, emit: InternalRow => Unit): Unit = {
    val k = keyProj(row)
    processor.process(k, k.isNullAt(0), row, ts, ts == KStateStatefulExec.NullTime)
  }

  override def finish(): Unit = {
    processor.finish()
    FinalResultsBuffer.checkFull(exec.finalResults, exec.operatorName, state.records, state.bytes)
    counters.set(metricSet.LateDroppedTotal, lateTotal.save(counters(metricSet.LateDropped)))
  }

  override def finishOutput: Iterator[InternalRow] = rows.rows.iterator

  /** Windows closed at the close time are gone: a later row ends at or after it. */
  override def outputTimeFloor: Long = processor.closeTime

  override def metrics: KStateTask.Metrics = KStateTask.Metrics.of(
    counters,
    totalStateRows = state.records,
    updatedStateRows = counters(metricSet.Updates),
    removedStateRows = counters(metricSet.Closed)
  )
}

private[execution] object SpanTask {
  def bufferSchema(exec: KStateWindowedAggregateExec): StructType =
    StructType(exec.bufferAttributes.map(a => StructField(a.name, a.dataType, a.nullable)))

  /** State key: the key alone (sessions) or (key, kind) (sliding windows, [[SlidingRowKeys]]). */
  def keySchema(exec: KStateWindowedAggregateExec): StructType = exec.windows match {
    case _: SlidingWindows => SlidingRowKeys.schema(exec.key.dataType)
    case _ => SessionAggState.keySchema(exec.key.dataType)
  }

  def valueSchema(exec: KStateWindowedAggregateExec): StructType = SessionAggState.valueSchema(bufferSchema(exec))

  def apply(exec: KStateWindowedAggregateExec, store: Option[StateStore]): SpanTask = {
    import exec._
    FinalResultsBuffer.boundHeap(finalResults, store, entriesPerRecord = 2)
    val state = store.map(s => new StoreSessionAggState(s, keySchema(exec), bufferSchema(exec)))
      .getOrElse(SessionAggState.onHeap())
    val lateTotal = new RunningTotal(store.map(new StateMeta(_)), StateMeta.LateDroppedTotal)
    val buffers = new AggregateBuffers(
      child.output,
      bufferAttributes,
      initialValues,
      updateExpressions,
      inputBufferAttributes,
      mergeExpressions,
      orderInsensitive
    )
    windows match {
      case w: SessionWindows =>
        val rows = new SpanRows(key.dataType, output, bufferAttributes, resultExpressions, tombstones = true)
        new SpanTask(
          exec,
          new SessionAggregateProcessor[UnsafeRow, InternalRow, UnsafeRow](
            w.gapMs,
            w.graceMs,
            finalResults.isDefined,
            state,
            buffers,
            rows,
            _.copy()
          ),
          state,
          rows,
          lateTotal
        )
      case w: SlidingWindows =>
        val rows = new SpanRows(key.dataType, output, bufferAttributes, resultExpressions, tombstones = false)
        new SpanTask(
          exec,
          new SlidingAggregateProcessor[UnsafeRow, UnsafeRow, InternalRow, UnsafeRow](
            w.timeDifferenceMs,
            w.graceMs,
            finalResults.isDefined,
            state,
            new SlidingRowKeys(key.dataType),
            buffers,
            rows,
            _.copy()
          ),
          state,
          rows,
          lateTotal
        )
      case other => throw new IllegalArgumentException(s"not windows that combine buffers: ${other.describe}")
    }
  }
}
