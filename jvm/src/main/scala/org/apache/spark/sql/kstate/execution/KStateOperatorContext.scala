package org.apache.spark.sql.kstate.execution

import io.kstate.ProcessingOrder

import org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperatorStateInfo

/**
 * What every kstate exec takes from its query and session, the same way for each operator; built
 * once per logical node by the strategy (`KStateStrategy.contextOf`):
 *  - `operatorName`: the operator's identity in the checkpoint (the user's `name=`, else its kind);
 *  - `fingerprint`: the configuration recorded in the checkpoint (a change on restart is
 *    `KSTATE_OPERATOR_CONFIG_CHANGED`);
 *  - `providerClass`: `spark.kstate.stateStore.providerClass`;
 *  - `followWatermark`: `spark.kstate.streamTime.followWatermark`;
 *  - `processingOrder`: the operator's own order, else the session's;
 *  - `stateInfo`: the running query's state info for this operator; None for a batch DataFrame.
 */
final case class KStateOperatorContext(
    operatorName: String,
    fingerprint: Map[String, String],
    providerClass: String,
    followWatermark: Boolean,
    processingOrder: ProcessingOrder,
    stateInfo: Option[StatefulOperatorStateInfo]
)

/** A [[KStateStatefulExec]] whose query-given members come from its [[KStateOperatorContext]]. */
trait KStateContextExec extends KStateStatefulExec {
  def context: KStateOperatorContext
  final override def operatorName: String = context.operatorName
  final override def fingerprint: Map[String, String] = context.fingerprint
  final override def providerClass: String = context.providerClass
  final override def followWatermark: Boolean = context.followWatermark
  final override def processingOrder: ProcessingOrder = context.processingOrder
  final override def stateInfo: Option[StatefulOperatorStateInfo] = context.stateInfo
}
