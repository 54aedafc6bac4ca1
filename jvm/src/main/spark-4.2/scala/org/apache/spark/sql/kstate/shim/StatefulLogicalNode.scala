package org.apache.spark.sql.kstate.shim

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

/**
 * Tells Spark that a kstate logical operator keeps state. Spark 4.2 version: nothing to tell.
 *
 * Spark 4.3 added `LogicalPlan.isStateful`, by which it decides whether a query is stateful
 * (real-time mode's default asynchronous progress tracking, adaptive query execution of
 * micro-batches); the 4.3 version, in jvm/src/main/spark-4.3, says true for kstate's operators
 * on a streaming plan. 4.2 has no such method: it recognises Spark's own operator classes only.
 */
trait StatefulLogicalNode extends LogicalPlan
