package org.apache.spark.sql.kstate.repartition

import scala.collection.mutable.ArrayBuffer
import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path

import org.apache.spark.{Partition, Partitioner, SparkContext, TaskContext}
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.expressions.{BoundReference, Murmur3Hash}
import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreProvider}
import org.apache.spark.sql.kstate.reader.{PartitionStateIterator, StateReadTarget}
import org.apache.spark.sql.kstate.provider.KStateStore
import org.apache.spark.sql.kstate.engine.{Bytes, FamilyCodec, StateFile, StateFileIdentity, StateFiles}
import org.apache.spark.util.SerializableConfiguration

/**
 * The distributed part of repartitioning one kstate operator: every old state partition's store
 * at the read version is read entry by entry (as stored: no decoding but what finding the
 * operator key needs), each entry goes to the new partition its operator key hashes to (Spark's
 * `HashPartitioning`: `pmod(murmur3(key), M)`, what the operator's shuffle computes), and each
 * new partition's entries are written, in key order, as one snapshot of the new version into
 * `staging` (`<p>.kstate.snapshot`). Per-partition families (stream time, counters) go to every
 * new partition and are merged there ([[MetaMerge]]).
 *
 * Writes nothing outside `staging`; the snapshots carry the identity of the store they are for
 * (operator, `default`, new partition), so they are only valid once moved into that store's
 * directory. Returns per new partition: (entries, bytes of its snapshot).
 */
private[kstate] object RepartitionJob {

  /** A routed entry's sort key: new partition, then family (default first), then key bytes. */
  final case class Routed(partition: Int, family: String, key: Array[Byte])

  /** A routed entry's value and the old partition it came from. */
  final case class Payload(value: Array[Byte], from: Int)

  private object RoutedOrder extends Ordering[Routed] {
    override def compare(a: Routed, b: Routed): Int = {
      if (a.partition != b.partition) Integer.compare(a.partition, b.partition)
      else {
        val f = familyOrder.compare(a.family, b.family)
        if (f != 0) f else Bytes.Order.compare(a.key, b.key)
      }
    }
  }

  /** The default family first (id 0), then by name: the order of the ids the snapshot gives them. */
  private val familyOrder: Ordering[String] = Ordering.by[String, (Boolean, String)](f =>
    (f != StateStore.DEFAULT_COL_FAMILY_NAME, f)
  )

  private final class ByNewPartition(override val numPartitions: Int) extends Partitioner {
    override def getPartition(key: Any): Int = key.asInstanceOf[Routed].partition
  }

  /**
   * `newIds`: checkpoint format v2, the checkpoint id of each new partition's snapshot (it is
   * then of state file format 3 and records its id).
   */
  def run(
      sc: SparkContext,
      target: StateReadTarget,
      layout: OperatorLayout,
      numPartitions: Int,
      newVersion: Long,
      staging: String,
      hadoopConf: Broadcast[SerializableConfiguration],
      newIds: Option[Seq[String]] = None
  ): Seq[(Long, Long)] = {
    val operatorId = target.operatorId
    val describe = layout.operator.describe
    val counting = layout.counting
    val routed = org.apache.spark.rdd.RDD.rddToOrderedRDDFunctions(
      new OldStoresRDD(sc, target, layout, numPartitions, hadoopConf)
    )(RoutedOrder, implicitly, implicitly)
      .repartitionAndSortWithinPartitions(new ByNewPartition(numPartitions))
    routed.mapPartitionsWithIndex { (p, entries) =>
      Iterator(writeSnapshot(
        entries,
        layout,
        describe,
        counting,
        operatorId,
        p,
        numPartitions,
        newVersion,
        new Path(staging),
        hadoopConf.value.value,
        newIds.map(_(p))
      ))
    }.collect().toSeq
  }

  /** The staged snapshot of new partition `p` in `staging`. */
  def stagedFile(staging: Path, p: Int): Path = new Path(staging, s"$p.${StateFile.Snapshot.suffix}")

  private def writeSnapshot(
      entries: Iterator[(Routed, Payload)],
      layout: OperatorLayout,
      describe: String,
      counting: Counting,
      operatorId: Long,
      p: Int,
      numPartitions: Int,
      newVersion: Long,
      staging: Path,
      conf: org.apache.hadoop.conf.Configuration,
      id: Option[String]
  ): (Long, Long) = {
    val files = StateFiles(staging, conf)
    val out = files.create(stagedFile(staging, p))
    try {
      val w = new StateFile.Writer(
        out.stream,
        StateFile.Snapshot,
        newVersion,
        StateFileIdentity(operatorId, StateStore.DEFAULT_COL_FAMILY_NAME, p),
        id.map(StateFile.Checkpoint(_))
      )
      val tally = new EntryTally(layout)
      var ids = Map(StateStore.DEFAULT_COL_FAMILY_NAME -> 0.toShort)
      w.family(0, StateStore.DEFAULT_COL_FAMILY_NAME)
      def idOf(family: String): Short = ids.getOrElse(
        family, {
          val id = ids.size.toShort
          ids += family -> id
          w.family(id, family)
          id
        }
      )
      val metas = scala.collection.mutable.LinkedHashMap.empty[String, ArrayBuffer[(Int, Array[Byte], Array[Byte])]]
      var count = 0L
      var lastFamily: String = null
      var route: FamilyRoute = null
      entries.foreach { case (r, v) =>
        if (r.family != lastFamily) { lastFamily = r.family; route = layout.route(r.family) }
        route match {
          case FamilyRoute.PerPartition(_) =>
            metas.getOrElseUpdate(r.family, ArrayBuffer.empty) += ((v.from, r.key, v.value))
          case _ =>
            w.put(Bytes.concat(FamilyCodec.prefixOf(idOf(r.family)), r.key), v.value)
            tally.observe(r.family, r.key, v.value)
            count += 1
        }
      }
      // merged last: their counters count what came before
      metas.foreach { case (family, olds) =>
        val FamilyRoute.PerPartition(kind) = layout.route(family)
        val prefix = FamilyCodec.prefixOf(idOf(family))
        MetaMerge(kind, family, describe, olds.toSeq, tally, counting, p, numPartitions).foreach { case (k, v) =>
          w.put(Bytes.concat(prefix, k), v)
          count += 1
        }
      }
      val bytes = w.finish(count)
      out.commit()
      (count, bytes)
    } catch {
      case NonFatal(e) =>
        try out.cancel()
        catch { case NonFatal(c) => e.addSuppressed(c) }
        throw e
    }
  }

  /**
   * One partition per old state partition: its store at the read version, every entry routed
   * (a per-partition family's entries once per new partition).
   */
  private final class OldStoresRDD(
      sc: SparkContext,
      target: StateReadTarget,
      layout: OperatorLayout,
      numPartitions: Int,
      hadoopConf: Broadcast[SerializableConfiguration]
  ) extends RDD[(Routed, Payload)](sc, Nil) {

    override protected def getPartitions: Array[Partition] =
      Array.tabulate[Partition](target.numPartitions)(OldPartition)

    override def compute(split: Partition, context: TaskContext): Iterator[(Routed, Payload)] = {
      val q = split.index
      val provider = PartitionStateIterator.providerOf(target, q, hadoopConf.value.value)
      val store =
        try provider.getStore(target.version, target.idOf(q)) match {
            case k: KStateStore => k
            case other => throw new IllegalStateException(s"${other.getClass.getName} is not kstate's store")
          }
        catch { case NonFatal(e) => provider.close(); throw e }
      context.addTaskCompletionListener[Unit] { _ =>
        try store.abort()
        finally provider.close()
      }
      val hash = new PartitionOf(layout, numPartitions)
      // the routes first: a family this kstate cannot move fails the task before any entry is read
      val routes = store.allColumnFamilyNames.toSeq.sorted.map(f => f -> layout.route(f))
      routes.iterator.flatMap { case (family, route) =>
        val scan = store.existingFamily(family).get.scan(Array.emptyByteArray, None)
        context.addTaskCompletionListener[Unit](_ => scan.close())
        scan.flatMap { case (k, v) =>
          route match {
            case FamilyRoute.ByKey(rowOf, ordinal) =>
              Iterator.single(Routed(hash(rowOf(k, v), ordinal), family, k) -> Payload(v, q))
            case FamilyRoute.PerPartition(_) =>
              Iterator.tabulate(numPartitions)(p => Routed(p, family, k) -> Payload(v, q))
          }
        }
      }
    }
  }

  private final case class OldPartition(index: Int) extends Partition

  /** The new state partition of an operator key: `pmod(murmur3(key, 42), M)`, as HashPartitioning. */
  private final class PartitionOf(layout: OperatorLayout, numPartitions: Int) {
    private val hashes = scala.collection.mutable.Map.empty[Int, Murmur3Hash]
    def apply(row: org.apache.spark.sql.catalyst.InternalRow, ordinal: Int): Int = {
      val h = hashes.getOrElseUpdate(
        ordinal,
        new Murmur3Hash(Seq(BoundReference(ordinal, layout.keyType, nullable = true)))
      ).eval(row).asInstanceOf[Int]
      val m = h % numPartitions
      if (m < 0) m + numPartitions else m
    }
  }

  /** For tests: the partition `pmod(murmur3(key, 42), M)` of a key row's field `ordinal`. */
  private[kstate] def partitionOf(layout: OperatorLayout, numPartitions: Int)
      : (org.apache.spark.sql.catalyst.InternalRow, Int) => Int = {
    val f = new PartitionOf(layout, numPartitions)
    (row, ordinal) => f(row, ordinal)
  }
}
