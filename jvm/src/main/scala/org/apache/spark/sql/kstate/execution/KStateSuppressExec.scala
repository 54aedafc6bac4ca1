package org.apache.spark.sql.kstate.execution

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.kstate.errors.KStateErrors
import io.kstate.suppress.Suppressed

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.processor.MetricSet
import org.apache.spark.sql.kstate.processor.suppress.{SuppressMetrics, SuppressProcessor}
import org.apache.spark.sql.kstate.provider.KStateStore
import org.apache.spark.sql.kstate.operatorstate.StateMeta
import org.apache.spark.sql.kstate.processor.suppress.BufferLimits
import org.apache.spark.sql.kstate.operatorstate.{BufferedRecord, TimeOrderedBuffer}
import org.apache.spark.sql.types.{BinaryType, StructField, StructType}

/**
 * Physical `suppress` on a table ([[org.apache.spark.sql.kstate.plans.KStateSuppress]]): a
 * [[SuppressProcessor]] (Kafka's `KTableSuppressProcessor` rules) per state partition, over
 * kstate's [[TimeOrderedBuffer]] of (key bytes -> output row bytes). Buffer time is the record's
 * timestamp (`untilTimeLimit`) or its window's end (`untilWindowCloses`), and `limitMs` the time
 * limit or the grace. Emitted rows are the buffered input rows, unchanged.
 */
case class KStateSuppressExec(
    suppressed: Suppressed,
    limitMs: Long,
    key: Expression,
    timestamp: Expression,
    windowEnd: Option[Expression],
    output: Seq[Attribute],
    context: KStateOperatorContext,
    child: SparkPlan
) extends KStateContextExec {

  override def shortName: String = "kstate_suppress"
  override def storeCapabilities: Set[StoreCapability] = StoreCapability.ofSuppress(suppressed.bufferConfig)
  override def partitionBy: Seq[Expression] = Seq(key)
  override protected def emitsOnTime: Boolean = true
  // windowed tables: later rows are for windows ending after the close time; time limits: a
  // buffered row can be of any age
  override protected def tracksOutputTime: Boolean = windowEnd.isDefined
  override protected def delaysOutput: Boolean = windowEnd.isEmpty

  // The buffer lives in column families of its own; the default family only records the schema.
  override protected def stateKeySchema: StructType = StructType(Seq(StructField("key", key.dataType)))
  override protected def stateValueSchema: StructType = StructType(Seq(StructField("row", BinaryType)))
  override protected def metricSet: MetricSet = SuppressMetrics

  override protected def newTask(store: Option[StateStore]): KStateTask = store match {
    case Some(k: KStateStore) => new SuppressTask(k)
    case Some(other) => throw KStateErrors.suppressNeedsKStateProvider(operatorName, other.getClass.getName)
    case None => throw KStateErrors.unsupportedSuppress("suppress runs on streaming DataFrames only")
  }

  private final class SuppressTask(store: KStateStore) extends KStateTask {
    private val meta = new StateMeta(store)
    private val buffer = new TimeOrderedBuffer(store, operatorName, BufferLimits.of(suppressed.bufferConfig))
    private val processor = new SuppressProcessor(
      buffer,
      limitMs,
      untilWindowCloses = windowEnd.isDefined,
      initialStreamTime = meta.get(StateMeta.StreamTime, Long.MinValue)
    )
    private val in = child.output
    private val keyProj = UnsafeProjection.create(Seq(key), in)
    private val rowProj = UnsafeProjection.create(output, in)
    private val endOf: Option[InternalRow => Long] = windowEnd.map(e => KStateStatefulExec.eventTimeOf(e, in))
    private val out = ArrayBuffer.empty[InternalRow]

    override def advanceStreamTime(t: Long): Unit = processor.advanceStreamTime(t)

    private def rowOf(r: BufferedRecord): InternalRow = {
      val row = new UnsafeRow(output.length)
      row.pointTo(r.value, r.value.length)
      row
    }

    // where evicted records go for the current `process` call: one function for the task, not
    // a closure allocated per record
    private var target: InternalRow => Unit = _
    private val emitRecord: BufferedRecord => Unit = r => target(rowOf(r))

    override def process(row: InternalRow, ts: Long, emit: InternalRow => Unit): Unit = {
      target = emit
      val tsNull = ts == KStateStatefulExec.NullTime
      val k = if (tsNull) null else keyProj(row)
      val keyNull = k == null || k.isNullAt(0)
      val bufferTime = if (keyNull) KStateStatefulExec.NullTime else endOf.fold(ts)(_(row))
      val valid = !keyNull && bufferTime != KStateStatefulExec.NullTime
      processor.process(
        if (valid) k.getBytes else null,
        keyNull,
        if (valid) rowProj(row).getBytes else null,
        ts,
        tsNull,
        bufferTime,
        bufferTime == KStateStatefulExec.NullTime,
        emitRecord
      )
    }

    override def finish(): Unit = {
      processor.finish(r => out += rowOf(r))
      meta.put(StateMeta.StreamTime, processor.currentStreamTime)
    }

    override def finishOutput: Iterator[InternalRow] = out.iterator

    /** Windowed tables: windows with end <= stream time - grace were emitted or are dropped. */
    override def outputTimeFloor: Long = processor.outputTimeFloor

    override def metrics: KStateTask.Metrics = KStateTask.Metrics.of(
      processor.counters,
      totalStateRows = buffer.numRecords,
      updatedStateRows = 0L,
      removedStateRows = processor.counters(SuppressMetrics.Emitted)
    )
  }

  override protected def withNewChildInternal(newChild: SparkPlan): KStateSuppressExec = copy(child = newChild)
}
