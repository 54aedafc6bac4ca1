package org.apache.spark.sql.kstate.execution

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Attribute,
  BoundReference,
  Expression,
  GenericInternalRow,
  GetStructField,
  UnsafeProjection,
  UnsafeRow
}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.plans.TableJoinSide
import org.apache.spark.sql.kstate.processor.MetricSet
import org.apache.spark.sql.kstate.processor.join.{
  ForeignKeyInstruction,
  ForeignKeyJoinMetrics,
  ForeignKeyResponse,
  ForeignKeySubscription,
  ForeignKeySubscriptionProcessor,
  ForeignKeySubscriptionState,
  InMemoryForeignKeySubscriptionState
}
import org.apache.spark.sql.kstate.processor.table.{InMemoryTableState, TableSource, TableState}
import org.apache.spark.sql.kstate.operatorstate.{StoreForeignKeySubscriptionState, StoreTableState}
import org.apache.spark.sql.types.StructType

/**
 * Physical stage 1 of a foreign-key join
 * ([[org.apache.spark.sql.kstate.plans.KStateFkJoinSubscriptions]]): a
 * [[ForeignKeySubscriptionProcessor]] per foreign-key partition over a
 * [[org.apache.spark.sql.kstate.plans.TwoInputs]] envelope of subscriptions (left) and the right
 * table's change rows (right). State, in one store: the right table's latest values
 * (`kstate_fk_right`, an unversioned mirror: on a versioned right table an out-of-order update
 * is counted and skipped here, KIP-914, so the mirror holds each key's latest version) and the
 * subscriptions ([[StoreForeignKeySubscriptionState]]); heap states for batch DataFrames.
 * Output rows: the responses (left key, subscribed left value, right value, version, event
 * time in ms).
 */
case class KStateFkJoinSubscriptionsExec(
    subscriptionSchema: StructType,
    right: TableJoinSide,
    key: Expression,
    timestamp: Expression,
    output: Seq[Attribute],
    context: KStateOperatorContext,
    child: SparkPlan
) extends KStateContextExec {
  import KStateFkJoinSubscriptionsExec._

  override def shortName: String = "kstate_fk_join_subscriptions"
  override def storeCapabilities: Set[StoreCapability] = Set(StoreCapability.ColumnFamilies)
  override def partitionBy: Seq[Expression] = Seq(key)

  override protected def stateKeySchema: StructType = new StructType().add("foreignKey", key.dataType)
  override protected def stateValueSchema: StructType = right.valueTypes
  override protected def metricSet: MetricSet = ForeignKeyJoinMetrics

  private def leftKeyType = subscriptionSchema(KeyOrdinal).dataType
  private def leftValueType = subscriptionSchema(ValueOrdinal).dataType.asInstanceOf[StructType]

  override protected def newTask(store: Option[StateStore]): KStateTask = store match {
    case Some(s) =>
      val subs = new StoreForeignKeySubscriptionState(s, key.dataType, leftKeyType, leftValueType.length)
      new SubscriptionsTask(
        new StoreTableState(s, stateKeySchema, right.valueOrdinals.length, RightFamily),
        subs,
        () => subs.commit()
      )
    case None =>
      new SubscriptionsTask(
        InMemoryTableState.unversioned[UnsafeRow, UnsafeRow](),
        new InMemoryForeignKeySubscriptionState[UnsafeRow, UnsafeRow, UnsafeRow]()(ByteOrder),
        () => ()
      )
  }

  private final class SubscriptionsTask(
      rightState: TableState[UnsafeRow, UnsafeRow],
      subscriptions: ForeignKeySubscriptionState[UnsafeRow, UnsafeRow, UnsafeRow],
      commit: () => Unit
  ) extends TwoInputTask(child.output) {
    private val processor = new ForeignKeySubscriptionProcessor[UnsafeRow, UnsafeRow, UnsafeRow, UnsafeRow](
      new TableSource(rightState),
      subscriptions
    )
    private val counters = processor.counters
    private val rightReader = new TableSideReader(right)
    private def field(i: Int) = BoundReference(i, subscriptionSchema(i).dataType, subscriptionSchema(i).nullable)
    private val fkProj = UnsafeProjection.create(Seq(field(ForeignKeyOrdinal)))
    private val keyProj = UnsafeProjection.create(Seq(field(KeyOrdinal)))
    private val valueProj = UnsafeProjection.create(leftValueType.indices.map(i =>
      GetStructField(field(ValueOrdinal), i)
    ))
    private val keyType = leftKeyType
    private val outRow = new GenericInternalRow(5)
    private val outProj = UnsafeProjection.create(output.map(_.dataType).toArray)
    private var emitTo: InternalRow => Unit = _
    private val respond: ForeignKeyResponse[UnsafeRow, UnsafeRow, UnsafeRow] => Unit = r => {
      outRow.update(0, r.key.get(0, keyType))
      outRow.update(1, r.leftValue)
      outRow.update(2, r.foreignValue)
      outRow.setLong(3, r.version)
      outRow.setLong(4, r.timestamp)
      emitTo(outProj(outRow).copy()) // one call may emit several rows: each its own
    }

    override protected def processLeft(row: InternalRow, ts: Long, emit: InternalRow => Unit): Unit = {
      emitTo = emit
      val fk = if (row.isNullAt(ForeignKeyOrdinal)) null else fkProj(row).copy()
      val value = if (row.isNullAt(ValueOrdinal)) null else valueProj(row).copy()
      processor.processSubscription(
        ForeignKeySubscription(
          fk,
          keyProj(row).copy(),
          ForeignKeyInstruction.of(row.getByte(InstructionOrdinal)),
          value,
          row.getLong(VersionOrdinal),
          ts
        ),
        respond
      )
    }

    override protected def processRight(row: InternalRow, ts: Long, emit: InternalRow => Unit): Unit = {
      emitTo = emit
      val c = rightReader.change(row, ts)
      if (!c.isLatest) counters.add(ForeignKeyJoinMetrics.OutOfOrderIgnored)
      else processor.processRight(c.key, keyIsNull = false, c.newValue, ts, tsIsNull = false, respond)
    }

    override def advanceStreamTime(t: Long): Unit = ()
    override def finish(): Unit = { processor.finish(); commit() }
    override def metrics: KStateTask.Metrics = KStateTask.Metrics.of(
      counters,
      totalStateRows = subscriptions.size,
      updatedStateRows = counters(ForeignKeyJoinMetrics.Responses),
      removedStateRows = 0L
    )
  }

  override protected def withNewChildInternal(newChild: SparkPlan): KStateFkJoinSubscriptionsExec =
    copy(child = newChild)
}

object KStateFkJoinSubscriptionsExec {
  val RightFamily = "kstate_fk_right"
  // the subscription row's layout (plans.KStateFkSubscribe's output)
  private val ForeignKeyOrdinal = 0
  private val KeyOrdinal = 1
  private val InstructionOrdinal = 2
  private val ValueOrdinal = 3
  private val VersionOrdinal = 4

  /** Left keys of the heap state in their bytes' unsigned order (as a store's prefix scan). */
  private object ByteOrder extends Ordering[UnsafeRow] {
    override def compare(a: UnsafeRow, b: UnsafeRow): Int =
      java.util.Arrays.compareUnsigned(a.getBytes, b.getBytes)
  }
}
