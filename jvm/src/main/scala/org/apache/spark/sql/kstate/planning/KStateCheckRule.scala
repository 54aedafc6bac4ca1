package org.apache.spark.sql.kstate.planning

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.kstate.plans.KStateStatefulNode
import org.apache.spark.sql.kstate.shim.RunningQuery

/**
 * Rejects plans with kstate operators that cannot run, when they are analysed (injected with
 * `SparkSessionExtensions.injectCheckRule`; it changes no plan).
 *
 * What it sees (`KStateCheckRuleSuite`): every plan the session analyses, so a kstate
 * DataFrame's plan when it is built (with the session's settings then); at
 * `writeStream.start()` the query under a `WriteToStream` (after Spark's own output mode check);
 * and each micro-batch's plan on the query's thread, with the settings of the session that runs
 * the micro-batch (the query's clone of the session).
 *
 * For a plan holding a kstate operator it checks:
 *  - `spark.kstate.stateStore.providerClass` is a provider class kstate can use
 *    ([[StateProviderCheck.check]]);
 *  - a running query's micro-batch: its output mode ([[OutputModeCheck]]). At `start()` the
 *    output mode is checked earlier, by [[shim.StreamStartCheck]], before Spark's own check.
 * What a provider must have for a particular exec is checked when the exec is planned
 * ([[StateProviderCheck.requireCapabilities]]): the exec declares it.
 */
case class KStateCheckRule(session: SparkSession) extends (LogicalPlan => Unit) {
  override def apply(plan: LogicalPlan): Unit =
    if (plan.exists(_.isInstanceOf[KStateStatefulNode])) {
      val conf = session.sessionState.conf
      StateProviderCheck.check(conf)
      // Both state checkpoint formats run (docs/state-store.md, "Checkpoint format v2").
      if (plan.isStreaming) RunningQuery.current(session).foreach(q => OutputModeCheck.check(plan, q.outputMode))
    }
}
