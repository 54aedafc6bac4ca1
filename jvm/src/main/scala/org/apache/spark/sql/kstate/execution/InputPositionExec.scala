package org.apache.spark.sql.kstate.execution

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, JoinedRow, UnsafeProjection}
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.types.{IntegerType, LongType}

/**
 * Appends each row's position in its input: (input partition index, row index within it).
 * Placed below the shuffle into a kstate operator, it lets the operator put the records in its
 * processing order (see [[InputOrder]]): ties are broken by input position, and Kafka task order
 * follows each input partition's offsets. Deterministic on replay for replayable
 * sources, whose partitions and in-partition order are fixed for a given offset range.
 */
case class InputPositionExec(partitionAttr: Attribute, offsetAttr: Attribute, child: SparkPlan)
    extends UnaryExecNode {

  override def output: Seq[Attribute] = child.output :+ partitionAttr :+ offsetAttr
  override def outputPartitioning: Partitioning = child.outputPartitioning

  override protected def doExecute(): RDD[InternalRow] = {
    val childOutput = child.output
    val fullOutput = output
    child.execute().mapPartitionsWithIndexInternal { (partition, rows) =>
      val position = new UnsafeRowWriter(2)
      val joined = new JoinedRow()
      val project = UnsafeProjection.create(fullOutput, childOutput ++ Seq(partitionAttr, offsetAttr))
      var offset = 0L
      rows.map { row =>
        position.reset()
        position.zeroOutNullBytes()
        position.write(0, partition)
        position.write(1, offset)
        offset += 1
        project(joined(row, position.getRow))
      }
    }
  }

  override protected def withNewChildInternal(newChild: SparkPlan): InputPositionExec =
    copy(child = newChild)
}

object InputPositionExec {
  def apply(child: SparkPlan): InputPositionExec = InputPositionExec(
    AttributeReference("__kstate_input_partition", IntegerType, nullable = false)(),
    AttributeReference("__kstate_input_offset", LongType, nullable = false)(),
    child
  )
}
