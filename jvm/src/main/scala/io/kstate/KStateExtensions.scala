package io.kstate

import org.apache.spark.sql.SparkSessionExtensions
import org.apache.spark.sql.kstate.planning.{KStateCheckRule, KStateStrategy}
import org.apache.spark.sql.kstate.shim.{ConfRegistration, StreamStartCheck}

/**
 * kstate's entry point: `spark.sql.extensions=io.kstate.KStateExtensions`.
 *
 * What it injects, and why:
 *  - [[KStateStrategy]]: plans kstate's logical operators into kstate execs, assigning their
 *    state info from the running query (Spark's planner knows only its own stateful classes).
 *  - [[StreamStartCheck]]: rejects an output mode kstate operators cannot run in when the query
 *    starts, before Spark's own output mode checks (an analyzer rule that changes no plan).
 *  - [[KStateCheckRule]]: rejects, whenever a plan with kstate operators is analysed (the
 *    DataFrame built, the query started, each micro-batch), a state store provider or checkpoint
 *    format kstate cannot run on, and a running query's unsupported output mode.
 *
 * It also registers kstate's settings with Spark's SQL configuration (`spark.conf.get`,
 * `SET -v`; [[KStateConf]]).
 *
 * kstate operators themselves enter a plan through the DataFrame API ([[KStateDataFrame]]),
 * not through SQL syntax, so no parser rule is needed.
 */
class KStateExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(ext: SparkSessionExtensions): Unit = {
    ConfRegistration.registerAll()
    ext.injectPlannerStrategy(KStateStrategy)
    ext.injectHintResolutionRule(StreamStartCheck)
    ext.injectCheckRule(KStateCheckRule)
  }
}
