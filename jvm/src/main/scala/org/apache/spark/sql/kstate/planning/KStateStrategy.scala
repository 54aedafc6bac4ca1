package org.apache.spark.sql.kstate.planning

import io.kstate.ProcessingOrder
import org.apache.spark.sql.kstate.config.KStateConf

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.optimizer.NormalizeFloatingNumbers
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.{SparkPlan, SparkStrategy}
import org.apache.spark.sql.kstate.execution.{
  InputPositionExec,
  KStateOperatorContext,
  KStateDeduplicateExec,
  KStateStatefulExec,
  KStateStreamTableJoinExec,
  KStateSuppressExec,
  KStateTableSourceExec,
  KStateWindowedAggregateExec,
  KStateWindowedDistinctExec
}
import org.apache.spark.sql.kstate.execution.{KStateTableJoinExec, SidePositionsExec}
import org.apache.spark.sql.kstate.plans.{
  KStateDeduplicate,
  KStateStatefulNode,
  KStateStreamTableJoin,
  KStateSuppress,
  KStateTableSource,
  KStateWindowedAggregate,
  KStateWindowedDistinct
}
import org.apache.spark.sql.kstate.plans.KStateTableJoin
import org.apache.spark.sql.kstate.shim.RunningQuery
import org.apache.spark.sql.kstate.{execution, plans}

/**
 * Plans kstate logical operators. For a streaming plan inside a running query it also assigns
 * the operator's state info (Spark's IncrementalExecution does this only for its own classes)
 * and checks that the configured state store provider has what each exec needs.
 */
case class KStateStrategy(session: SparkSession) extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = execsOf(plan).map(checkedStore)

  private def execsOf(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case d: KStateDeduplicate =>
      KStateDeduplicateExec(
        d.mode,
        d.intervalMs,
        d.identity.map(normalized),
        d.timestamp,
        d.partitionBy.map(normalized),
        d.output,
        contextOf(d),
        InputPositionExec(planLater(d.child))
      ) :: Nil
    case d: KStateWindowedDistinct =>
      KStateWindowedDistinctExec(
        d.windows,
        normalized(d.key),
        d.timestamp,
        d.output,
        contextOf(d),
        InputPositionExec(planLater(d.child))
      ) :: Nil
    case a: KStateWindowedAggregate =>
      KStateWindowedAggregateExec(
        a.windows,
        normalized(a.key),
        a.timestamp,
        a.bufferAttributes,
        a.initialValues,
        a.updateExpressions,
        a.inputBufferAttributes,
        a.mergeExpressions,
        a.orderInsensitive,
        a.resultExpressions,
        a.finalResults,
        a.output,
        contextOf(a),
        InputPositionExec(planLater(a.child))
      ) :: Nil
    case s: KStateSuppress =>
      KStateSuppressExec(
        s.suppressed,
        s.limitMs,
        normalized(s.key),
        s.timestamp,
        s.windowEnd,
        s.output,
        contextOf(s),
        InputPositionExec(planLater(s.child))
      ) :: Nil
    case t: KStateTableSource =>
      KStateTableSourceExec(
        normalized(t.key),
        t.timestamp,
        t.values,
        t.versioned,
        t.output,
        contextOf(t),
        InputPositionExec(planLater(t.child))
      ) :: Nil
    case j: KStateTableJoin =>
      TableJoinSources.of(j, session, orderOf) match {
        case Some(read) =>
          // the join does both table sources' work, over their inputs (TableJoinSources)
          val context = contextOf(j)
          KStateTableJoinExec(
            j.how,
            read.leftSide,
            read.rightSide,
            normalized(read.envelope.key),
            read.envelope.timestamp,
            j.output,
            context.copy(
              fingerprint = context.fingerprint ++ read.fingerprint,
              processingOrder = orderOf(read.left)
            ),
            SidePositionsExec(InputPositionExec(planLater(read.envelope.plan)))
          ) :: Nil
        case None =>
          KStateTableJoinExec(
            j.how,
            j.left,
            j.right,
            normalized(j.envelopeKey),
            j.envelopeTimestamp,
            j.output,
            contextOf(j),
            SidePositionsExec(InputPositionExec(planLater(j.child)))
          ) :: Nil
      }
    case r: plans.KStateTableRegroup =>
      execution.KStateTableRegroupExec(
        normalized(r.group),
        r.values,
        normalized(r.oldGroup),
        r.oldValues,
        r.tableValues,
        r.oldValue,
        r.latest,
        r.timestamp,
        r.versioned,
        r.output,
        planLater(r.child)
      ) :: Nil
    case a: plans.KStateTableAggregate =>
      // always Kafka task order over stage 1's partitions (docs/tables.md, "Table aggregation")
      execution.KStateTableAggregateExec(
        a.spec,
        a.group,
        a.add,
        a.subtract,
        a.timestamp,
        a.output,
        contextOf(a).copy(processingOrder = ProcessingOrder.Task),
        InputPositionExec(planLater(a.child))
      ) :: Nil
    case j: KStateStreamTableJoin =>
      KStateStreamTableJoinExec(
        j.leftJoin,
        j.graceMs,
        j.versioned,
        normalized(j.key),
        j.timestamp,
        j.output,
        j.tableSource,
        contextOf(j),
        SidePositionsExec(InputPositionExec(planLater(j.child)))
      ) :: Nil
    case s: plans.KStateFkSubscribe =>
      // the micro-batch id numbers the left table's changes (docs/tables.md, "Foreign-key joins")
      val batchId = if (s.isStreaming) RunningQuery.current(session).map(_.batchId).getOrElse(0L) else 0L
      execution.KStateFkSubscribeExec(
        normalized(s.foreignKey),
        normalized(s.oldForeignKey),
        s.key,
        s.tableValues,
        s.oldValue,
        s.latest,
        s.timestamp,
        s.leftJoin,
        batchId,
        s.output,
        planLater(s.child)
      ) :: Nil
    case f: plans.KStateFkJoinSubscriptions =>
      execution.KStateFkJoinSubscriptionsExec(
        f.subscriptionSchema,
        f.right,
        normalized(f.envelopeKey),
        f.envelopeTimestamp,
        f.output,
        contextOf(f),
        SidePositionsExec(InputPositionExec(planLater(f.child)))
      ) :: Nil
    case f: plans.KStateFkJoin =>
      // always Kafka task order over stage 1's partitions: each one's responses in emission order
      execution.KStateFkJoinExec(
        f.how == "left",
        normalized(f.key),
        f.leftValue,
        f.rightValue,
        f.version,
        f.timestamp,
        f.output,
        contextOf(f).copy(processingOrder = ProcessingOrder.Task),
        InputPositionExec(planLater(f.child))
      ) :: Nil
    case _ => Nil
  }

  /**
   * Keys compare by their binary row form; normalise floating point values (-0.0 / 0.0, NaNs)
   * first, as Spark does for grouping keys, so equal values are equal keys.
   */
  private def normalized(e: Expression): Expression = NormalizeFloatingNumbers.normalize(e)

  /** The provider behind kstate's operators (`spark.kstate.stateStore.providerClass`). */
  private def provider: String = KStateConf.StateStoreProvider.get(session.sessionState.conf)

  private def followWatermark: Boolean = KStateConf.StreamTimeFollowsWatermark.get(session.sessionState.conf)

  /** The operator's own processing order, else the session's. */
  private def orderOf(node: KStateStatefulNode): ProcessingOrder =
    node.processingOrder.getOrElse(KStateConf.ProcessingOrderPolicy.get(session.sessionState.conf))

  /** What the node's exec takes from the query and the session. */
  private def contextOf(node: KStateStatefulNode): KStateOperatorContext = {
    val (name, stateInfo) = streamingIdentity(node)
    KStateOperatorContext(name, node.fingerprint, provider, followWatermark, orderOf(node), stateInfo)
  }

  private def streamingIdentity(node: KStateStatefulNode) = {
    val query = if (node.isStreaming) RunningQuery.current(session) else None
    query match {
      case Some(q) =>
        val name = OperatorIdentity.nameOf(node, q.optimizedPlan)
        (name, Some(q.stateInfo(OperatorIdentity.operatorId(name))))
      case None =>
        (node.operatorName.getOrElse(node.kind), None)
    }
  }

  /**
   * A streaming exec's store needs, checked once here against its provider class, so a provider
   * that lacks one fails when the micro-batch is planned, not in its first task. The rest of
   * kstate's plan rules are checked when the plan is analysed ([[KStateCheckRule]]).
   */
  private def checkedStore(exec: SparkPlan): SparkPlan = {
    exec match {
      case e: KStateStatefulExec if e.stateInfo.isDefined =>
        StateProviderCheck.requireCapabilities(e.providerClass, e.storeCapabilities, e.operatorName)
      case _ =>
    }
    exec
  }
}
