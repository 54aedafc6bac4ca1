package org.apache.spark.sql.kstate.shim

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.streaming.WriteToStreamStatement
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.kstate.config.KStateConf
import org.apache.spark.sql.kstate.planning.OutputModeCheck
import org.apache.spark.sql.kstate.plans.KStateStatefulNode
import org.apache.spark.sql.kstate.repartition.UnfinishedRepartition

/**
 * Checks a streaming query's kstate operators against its output mode when the query starts
 * (`writeStream.start()`), so an unsupported mode fails there with kstate's
 * `KSTATE_UNSUPPORTED_OUTPUT_MODE` rather than with Spark's error or at the first micro-batch.
 *
 * `start()` analyses a `WriteToStreamStatement` (the query and its output mode); Spark's own
 * unsupported-operation check runs while that statement is resolved. This rule is injected as a
 * hint-resolution rule, the analyzer batch that runs before resolution, which is the only
 * extension point that sees the statement before Spark's check does. It changes no plan.
 *
 * Why not in kstate's check rule ([[org.apache.spark.sql.kstate.planning.KStateCheckRule]]): a check
 * rule runs after resolution, so at `start()` it sees the resolved `WriteToStream` only after
 * Spark's check has run; for a `complete`-mode query of kstate operators alone Spark has by then
 * failed with its own "Complete output mode not supported when there are no streaming
 * aggregations". This rule is therefore the only place that sees the output mode in time. The
 * check rule repeats the check for each micro-batch of the running query.
 */
case class StreamStartCheck(session: SparkSession) extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = {
    plan match {
      case s: WriteToStreamStatement =>
        OutputModeCheck.check(s.inputQuery, s.outputMode)
        undoUnfinishedRepartition(s)
      case _ =>
    }
    plan
  }

  /**
   * A query of kstate operators, or of any operators on kstate's provider, restarting from a
   * checkpoint that holds an unfinished repartition (Spark's
   * `StreamingCheckpointManager.repartition`, which cannot move kstate operators' state nor read
   * kstate's provider, writes its offset log entry before it fails): undone here, before Spark's
   * start refuses such a checkpoint, so the query restarts with its previous number of
   * partitions ([[UnfinishedRepartition]], which checks the checkpoint's own record).
   */
  private def undoUnfinishedRepartition(s: WriteToStreamStatement): Unit = {
    val kstateProvider =
      session.conf.getOption(SQLConf.STATE_STORE_PROVIDER_CLASS.key).contains(KStateConf.StateStoreProvider.default)
    val kstateOperators = s.inputQuery.find(_.isInstanceOf[KStateStatefulNode]).isDefined
    if (!s.recoverFromCheckpointLocation || !(kstateOperators || kstateProvider)) return
    val location = s.userSpecifiedCheckpointLocation.orElse {
      for {
        dir <- session.conf.getOption(SQLConf.CHECKPOINT_LOCATION.key)
        name <- s.userSpecifiedName
      } yield new org.apache.hadoop.fs.Path(dir, name).toString
    }
    location.foreach(l => UnfinishedRepartition.undo(SparkShim.classic(session), l))
  }
}
