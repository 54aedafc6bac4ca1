package org.apache.spark.sql.kstate.execution

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Attribute,
  Expression,
  GenericInternalRow,
  GetStructField,
  UnsafeProjection,
  UnsafeRow
}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.kstate.processor.Metric
import org.apache.spark.sql.kstate.processor.join.{
  ForeignKeyInstruction,
  ForeignKeyJoinMetrics,
  ForeignKeySubscription,
  ForeignKeySubscriptionSender
}
import org.apache.spark.sql.kstate.processor.table.TableChange
import org.apache.spark.util.CompletionIterator

/**
 * Physical subscription sender of a foreign-key join
 * ([[org.apache.spark.sql.kstate.plans.KStateFkSubscribe]]): a [[ForeignKeySubscriptionSender]]
 * per partition over the left table's change rows, in their order (a narrow map). Each row gets
 * the version `(batchId << 32) | its index in the partition`: a left key's changes are all in
 * one partition, in processing order, and micro-batch ids grow, so a key's versions strictly
 * increase across micro-batches and restarts (a replayed micro-batch gets the same versions).
 * Keeps no state; counts `outOfOrderRecordsIgnored` and `nullForeignKeys` as SQL metrics.
 */
case class KStateFkSubscribeExec(
    foreignKey: Expression,
    oldForeignKey: Expression,
    key: Expression,
    tableValues: Seq[Attribute],
    oldValue: Attribute,
    latest: Attribute,
    timestamp: Expression,
    leftJoin: Boolean,
    batchId: Long,
    output: Seq[Attribute],
    child: SparkPlan
) extends RekeyingMapExec {
  import KStateFkSubscribeExec._

  override protected def reported: Seq[Metric] = Reported

  override protected def doExecute(): RDD[InternalRow] = {
    val sqlMetrics = this.sqlMetrics
    val in = child.output
    val (fk, oldFk, k, tv, t, left, batch, old) =
      (foreignKey, oldForeignKey, key, tableValues, timestamp, leftJoin, batchId, oldValue)
    val oldOrdinal = in.indexWhere(_.exprId == oldValue.exprId)
    val latestOrdinal = in.indexWhere(_.exprId == latest.exprId)
    val (fkType, keyType) = (foreignKey.dataType, key.dataType)
    val outTypes = output.map(_.dataType).toArray
    val nValues = tableValues.length
    child.execute().mapPartitionsInternal { rows =>
      val fkProj = UnsafeProjection.create(Seq(fk), in)
      val oldFkProj = UnsafeProjection.create(Seq(oldFk), in)
      val keyProj = UnsafeProjection.create(Seq(k), in)
      val valueProj = UnsafeProjection.create(tv, in)
      val oldValueProj = UnsafeProjection.create((0 until nValues).map(i => GetStructField(old, i)), in)
      val tsProj = UnsafeProjection.create(Seq(t), in)
      val tsOf = KStateStatefulExec.eventTimeOf(t, in)
      val counters = ForeignKeyJoinMetrics.newCounters()
      val sender = new ForeignKeySubscriptionSender[UnsafeRow, Selected, UnsafeRow](
        s => s.foreignKey,
        (a, b) => a == b,
        left,
        counters
      )
      val outRow = new GenericInternalRow(6)
      val sent = new SentRows(outTypes, MaxSentPerChange) // handed on without copies
      var tsValue: Any = null
      val emit: ForeignKeySubscription[UnsafeRow, UnsafeRow, Selected] => Unit = s => {
        outRow.update(0, if (s.foreignKey == null) null else s.foreignKey.get(0, fkType))
        outRow.update(1, s.key.get(0, keyType))
        outRow.setByte(2, ForeignKeyInstruction.code(s.instruction))
        outRow.update(3, if (s.leftValue == null) null else s.leftValue.value)
        outRow.setLong(4, s.version)
        outRow.update(5, tsValue)
        sent.send(outRow)
      }
      def selected(value: UnsafeRow, fkRow: UnsafeRow): Selected =
        Selected(value.copy(), if (fkRow.isNullAt(0)) null else fkRow.copy())
      var index = 0L
      val out = sent.over(rows) { row =>
        val version = (batch << 32) | index
        index += 1
        val v = valueProj(row)
        val newSel = if (ExpressionTableAggregator.allNull(v)) null else selected(v, fkProj(row))
        val oldSel =
          if (row.isNullAt(oldOrdinal)) null else selected(oldValueProj(row), oldFkProj(row))
        tsValue = tsProj(row).get(0, t.dataType)
        sender.send(
          TableChange(keyProj(row).copy(), newSel, oldSel, tsOf(row), row.getBoolean(latestOrdinal)),
          version,
          emit
        )
      }
      CompletionIterator[InternalRow, Iterator[InternalRow]](
        out,
        Reported.zip(sqlMetrics).foreach { case (m, metric) => metric += counters(m) }
      )
    }
  }

  override protected def withNewChildInternal(newChild: SparkPlan): KStateFkSubscribeExec = copy(child = newChild)
}

object KStateFkSubscribeExec {
  private val Reported = Seq(ForeignKeyJoinMetrics.OutOfOrderIgnored, ForeignKeyJoinMetrics.NullForeignKeys)

  /** The most subscriptions one change sends ([[ForeignKeySubscriptionSender]]: to the old and the new foreign key). */
  private val MaxSentPerChange = 2

  /** A left value (its value columns' row) and its foreign key (a one-field row, null: none). */
  final case class Selected(value: UnsafeRow, foreignKey: UnsafeRow)
}
