package org.apache.spark.sql.kstate.execution

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, UnsafeRow}
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.kstate.plans.TwoInputs

/**
 * Over an [[InputPositionExec]] of a [[TwoInputs]] envelope: makes each side's rows of an input
 * partition a queue of their own, by setting a row's input partition to `2 × partition + side`
 * (offsets unchanged, so each side's rows keep their order; the left side's queue comes first on
 * ties). Needed because Spark may plan the envelope's union partition-wise: when both sides are
 * already hash-partitioned by the key (e.g. two kstate tables), the union's partition `p` holds
 * the left side's partition `p` followed by the right side's, and Kafka task order would then
 * take all of a micro-batch's left rows before its right rows instead of merging the two sides
 * by timestamp. With one union partition per side's partition it changes only the numbering.
 */
case class SidePositionsExec(child: SparkPlan) extends UnaryExecNode {
  override def output: Seq[Attribute] = child.output
  override def outputPartitioning: Partitioning = child.outputPartitioning

  override protected def doExecute(): RDD[InternalRow] = {
    val n = child.output.length
    val side = child.output.indexWhere(_.name == TwoInputs.SideColumn)
    require(side >= 0, s"${TwoInputs.SideColumn} is not in ${child.output.map(_.name).mkString(", ")}")
    child.execute().mapPartitionsInternal { rows =>
      rows.map { r =>
        val u = r.asInstanceOf[UnsafeRow]
        u.setInt(n - 2, u.getInt(n - 2) * 2 + u.getByte(side))
        u
      }
    }
  }

  override protected def withNewChildInternal(newChild: SparkPlan): SidePositionsExec = copy(child = newChild)
}
