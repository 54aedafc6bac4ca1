package org.apache.spark.sql.kstate.shim

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

/**
 * Tells Spark that a kstate logical operator keeps state. Spark 4.3 version.
 *
 * The Spark change: 4.3 added `LogicalPlan.isStateful` (false by default; Spark's aggregations,
 * deduplications, stream-stream joins, `flatMapGroupsWithState` and `transformWithState` say
 * true on a streaming plan) and decides by it whether a query is stateful: a real-time-mode
 * query that is not turns on asynchronous progress tracking by default, which then fails on the
 * first stateful exec ("Stateful streaming queries does not support async progress tracking");
 * a stateful query runs its micro-batches without adaptive query execution. kstate's operators
 * keep state, so they say true on a streaming plan (docs/operators.md, "Real-time mode"). 4.2
 * recognises Spark's own classes only and has no such method: the 4.2 version, in
 * jvm/src/main/spark-4.2, adds nothing.
 */
trait StatefulLogicalNode extends LogicalPlan {
  override def isStateful: Boolean = isStreaming
}
