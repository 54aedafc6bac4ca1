package org.apache.spark.sql.kstate.execution

import org.apache.spark.sql.kstate.plans.DedupMode

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.processor.MetricSet
import org.apache.spark.sql.kstate.processor.dedup.{DedupMetrics, DedupProcessor, DedupState, InMemoryDedupState}
import org.apache.spark.sql.kstate.operatorstate.StoreDedupState
import org.apache.spark.sql.types.{StructField, StructType}

/** Physical KIP-655 deduplication: [[DedupProcessor]] per state partition. */
case class KStateDeduplicateExec(
    mode: DedupMode,
    intervalMs: Long,
    identity: Seq[Expression],
    timestamp: Expression,
    partitionBy: Seq[Expression],
    output: Seq[Attribute],
    context: KStateOperatorContext,
    child: SparkPlan
) extends KStateContextExec {

  override def shortName: String = "kstate_" + mode.name
  override def storeCapabilities: Set[StoreCapability] = Set(StoreCapability.ColumnFamilies)

  override protected def stateKeySchema: StructType = StructType(identity.zipWithIndex.map {
    case (e, i) => StructField(s"identity_$i", e.dataType, nullable = true)
  })
  override protected def stateValueSchema: StructType = StoreDedupState.ValueSchema
  override protected def metricSet: MetricSet = DedupMetrics

  override protected def newTask(store: Option[StateStore]): KStateTask = {
    val state = store match {
      case Some(s) => new StoreDedupState(s, stateKeySchema, sweepStepMs = intervalMs)
      case None => new InMemoryDedupState[UnsafeRow](_.copy())
    }
    new DedupTask(state)
  }

  private final class DedupTask(state: DedupState[UnsafeRow]) extends KStateTask {
    private val processor = new DedupProcessor(intervalMs, state)
    private val in = child.output
    private val identityProj = UnsafeProjection.create(identity, in)
    private val outProj = UnsafeProjection.create(output, in)
    private val nIdentity = identity.length

    override def advanceStreamTime(t: Long): Unit = processor.advanceStreamTime(t)

    override def process(row: InternalRow, ts: Long, emit: InternalRow => Unit): Unit = {
      val id = identityProj(row)
      var idNull = false
      var i = 0
      while (!idNull && i < nIdentity) { idNull = id.isNullAt(i); i += 1 }
      val tsNull = ts == KStateStatefulExec.NullTime
      if (processor.process(id, idNull, ts, tsNull)) emit(outProj(row))
    }

    override def finish(): Unit = processor.finish()

    override def metrics: KStateTask.Metrics = KStateTask.Metrics.of(
      processor.counters,
      totalStateRows = state.numEntries,
      updatedStateRows = processor.counters(DedupMetrics.EntriesStored),
      removedStateRows = processor.counters(DedupMetrics.EntriesPurged)
    )
  }

  override protected def withNewChildInternal(newChild: SparkPlan): KStateDeduplicateExec =
    copy(child = newChild)
}
