package org.apache.spark.sql.kstate.execution

import scala.collection.mutable.ArrayBuffer

import io.kstate.windows.TimeWindows

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.processor.suppress.BufferLimits
import org.apache.spark.sql.kstate.processor.window.{
  InMemoryTimeWindowState,
  TimeWindowAggregateMetrics,
  TimeWindowAggregateProcessor,
  TimeWindowSpec,
  TimeWindowState,
  WindowResults
}
import org.apache.spark.sql.kstate.operatorstate.{RunningTotal, StateMeta, StoreWindowAggState}
import org.apache.spark.sql.types.{LongType, StructField, StructType}

/**
 * One state partition's micro-batch of a windowed aggregation over time windows (tumbling,
 * hopping): a [[TimeWindowAggregateProcessor]] (Kafka's `KStreamWindowAggregate` rules,
 * optionally fused with `suppress(untilWindowCloses)`) over [[StoreWindowAggState]] (streaming)
 * or [[InMemoryTimeWindowState]] (batch). Keys are one-column key rows, aggregates Spark's
 * aggregate buffers ([[AggregateBuffers]]); results become rows of (key, window start, window
 * end, results..., max timestamp) ([[WindowResultRows]]).
 */
private[execution] final class TimeWindowTask private (
    exec: KStateWindowedAggregateExec,
    windows: TimeWindows,
    state: TimeWindowState[UnsafeRow, UnsafeRow],
    lateTotal: RunningTotal
) extends KStateTask with WindowResults[UnsafeRow, UnsafeRow] {
  import exec._
  private val in = child.output
  private val keyProj = UnsafeProjection.create(Seq(key), in)
  private val rows = new WindowResultRows(key.dataType, output, bufferAttributes, resultExpressions)
  private val out = ArrayBuffer.empty[InternalRow]
  private val processor = new TimeWindowAggregateProcessor[InternalRow, UnsafeRow, UnsafeRow](
    TimeWindowSpec(windows.sizeMs, windows.advanceMs, windows.graceMs),
    new AggregateBuffers(
      in,
      bufferAttributes,
      initialValues,
      updateExpressions,
      inputBufferAttributes,
      mergeExpressions
    ),
    state,
    _.copy(),
    finalResults.map(f => BufferLimits.of(f.bufferConfig)),
    operatorName,
    this
  )

  override def advanceStreamTime(t: Long): Unit = processor.advanceStreamTime(t)

  override def process(row: InternalRow, ts: Long, emit: InternalRow => Unit): Unit = {
    val tsNull = ts == KStateStatefulExec.NullTime
    val k = if (tsNull) null else keyProj(row)
    processor.process(row, k, tsNull || k.isNullAt(0), ts, tsNull)
  }

  override def result(k: UnsafeRow, start: Long, end: Long, agg: UnsafeRow, maxTs: Long): Unit =
    out += rows(k, start, end, agg, maxTs)

  override def finish(): Unit = {
    import TimeWindowAggregateMetrics._
    processor.finish()
    processor.counters.set(LateDroppedTotal, lateTotal.save(processor.counters(LateDropped)))
  }

  override def finishOutput: Iterator[InternalRow] = out.iterator

  /** Windows with end <= close time are closed: a later row is for a window ending after it. */
  override def outputTimeFloor: Long = processor.outputTimeFloor

  override def metrics: KStateTask.Metrics = KStateTask.Metrics.of(
    processor.counters,
    totalStateRows = state.records,
    updatedStateRows = processor.counters(TimeWindowAggregateMetrics.Updates),
    removedStateRows = processor.counters(TimeWindowAggregateMetrics.Closed)
  )
}

private[execution] object TimeWindowTask {

  /** State key: (key, window start). */
  def keySchema(exec: KStateWindowedAggregateExec): StructType = StructType(Seq(
    StructField("key", exec.key.dataType, nullable = true),
    StructField("window_start", LongType, nullable = false)
  ))

  /** State value: the aggregate buffer and the window's largest record timestamp. */
  def valueSchema(exec: KStateWindowedAggregateExec): StructType = StructType(
    exec.bufferAttributes.map(a => StructField(a.name, a.dataType, a.nullable)) :+
      StructField("max_timestamp", LongType, nullable = false)
  )

  def apply(exec: KStateWindowedAggregateExec, windows: TimeWindows, store: Option[StateStore]): TimeWindowTask = {
    // two entries per window: its value and its time index entry
    FinalResultsBuffer.boundHeap(exec.finalResults, store, entriesPerRecord = 2)
    new TimeWindowTask(
      exec,
      windows,
      store.map(s => new StoreWindowAggState(s, keySchema(exec), exec.bufferAttributes.map(_.dataType)))
        .getOrElse(new InMemoryTimeWindowState[UnsafeRow, UnsafeRow](_.copy(), StoreWindowAggState.bytesOf)),
      new RunningTotal(store.map(new StateMeta(_)), StateMeta.LateDroppedTotal)
    )
  }
}
