package org.apache.spark.sql.kstate.reader

import org.apache.spark.{Partition, SparkContext, TaskContext}
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.util.SerializableConfiguration

/**
 * One RDD partition per state partition of `target`; each task reads its state partition with
 * a [[PartitionStateIterator]], closed when the rows are exhausted or the task ends.
 */
final class StateReaderRDD(
    sc: SparkContext,
    target: StateReadTarget,
    hadoopConf: Broadcast[SerializableConfiguration]
) extends RDD[InternalRow](sc, Nil) {

  override protected def getPartitions: Array[Partition] =
    Array.tabulate[Partition](target.numPartitions)(StateReaderRDD.StatePartition)

  override def compute(split: Partition, context: TaskContext): Iterator[InternalRow] = {
    val rows = PartitionStateIterator.open(target, split.index, hadoopConf.value.value)
    context.addTaskCompletionListener[Unit](_ => rows.close())
    rows
  }
}

object StateReaderRDD {
  final case class StatePartition(index: Int) extends Partition
}
