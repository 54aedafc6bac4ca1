package org.apache.spark.sql.kstate.planning

import org.apache.spark.sql.kstate.errors.KStateErrors

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.streaming.InternalOutputModes
import org.apache.spark.sql.kstate.plans.{KStateStatefulNode, KStateWindowedAggregate}
import org.apache.spark.sql.streaming.OutputMode

/**
 * The output modes kstate operators run in.
 *
 *  - `complete`: never (a kstate operator emits rows incrementally from per-key state; it
 *    cannot re-emit a whole result table each micro-batch).
 *  - `append`: every operator except an unsuppressed windowed aggregation, which emits a
 *    window's current value each micro-batch that changes it; appended, a window updated in 3
 *    micro-batches would be 3 rows. Suppressed until its windows close it emits one final row per
 *    window and is allowed, as are deduplication, windowed distinct and `until_time_limit`.
 *  - `update`: every operator.
 *
 * Checked when the query starts ([[shim.StreamStartCheck]], before Spark's own output mode
 * checks) and again when each micro-batch is analysed ([[KStateCheckRule]]).
 */
object OutputModeCheck {

  /** Throws `KSTATE_UNSUPPORTED_OUTPUT_MODE` for the first kstate operator in `plan` `mode` does not allow. */
  def check(plan: LogicalPlan, mode: OutputMode): Unit =
    plan.foreach {
      case node: KStateStatefulNode => check(node, mode)
      case _ =>
    }

  /** Throws `KSTATE_UNSUPPORTED_OUTPUT_MODE` if `node` cannot run in `mode`. */
  def check(node: KStateStatefulNode, mode: OutputMode): Unit = (node, mode) match {
    case (_, InternalOutputModes.Complete) =>
      throw KStateErrors.unsupportedOutputMode(displayName(node), "complete")
    case (a: KStateWindowedAggregate, InternalOutputModes.Append) if a.finalResults.isEmpty =>
      throw KStateErrors.appendWithoutFinalResults(displayName(node))
    case _ =>
  }

  private def displayName(node: KStateStatefulNode): String = node.operatorName.getOrElse(node.kind)
}
