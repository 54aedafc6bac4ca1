package org.apache.spark.sql.kstate.processor.join

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.kstate.processor.table.{InMemoryTableState, TableChange, TableSource, TableState}

/**
 * Runs the foreign-key join's two stages in one process, micro-batch by micro-batch, in the
 * order Spark runs them (see [[ForeignKeyResponseProcessor]], "Ordering and equivalence"):
 *  1. the left table's updates of the batch, in order, through the left table's
 *     [[TableSource]] (the left table's own operator, partitioned by left key) and the
 *     [[ForeignKeySubscriptionSender]]; each subscription keeps its update's position;
 *  2. stage 1 ([[ForeignKeySubscriptionProcessor]]) on `partitions` state partitions (by a hash
 *     of the foreign key; null foreign keys on partition 0): each partition's subscriptions and
 *     right updates in the batch's order (a subscription at its left update's position);
 *  3. stage 2 ([[ForeignKeyResponseProcessor]], a new one per batch) on `partitions` partitions
 *     (by a hash of the left key): the stage-1 partitions' responses one partition after another,
 *     each in emission order; partition `stage1Order(0)` first, then `stage1Order(1)`, ... (a
 *     Spark reducer reads the map outputs in no fixed order).
 * Left updates with a null key are dropped (the left table's source drops and counts them).
 * Returns every result of each batch, stage-2 partition by partition.
 *
 * Input: `Left(key, value, ts)` and `Right(key, value, ts)` updates (key null = null key, value
 * null = tombstone); left versions are the update's global index (increasing per key).
 */
final class ForeignKeyJoinDriver[V, KO, VO, R](
    leftJoin: Boolean,
    foreignKey: V => KO,
    joiner: (V, VO) => R,
    leftState: () => TableState[String, V],
    rightState: () => TableState[KO, VO],
    partitions: Int,
    stage1Order: Int => Int = identity
) {
  import ForeignKeyJoinDriver._

  val counters = ForeignKeyJoinMetrics.newCounters()
  private val left = new TableSource(leftState())
  private val sender = new ForeignKeySubscriptionSender[String, V, KO](foreignKey, (a, b) => a == b, leftJoin, counters)
  private val stage1 = Vector.fill(partitions)(new ForeignKeySubscriptionProcessor[String, KO, V, VO](
    new TableSource(rightState()),
    new InMemoryForeignKeySubscriptionState[KO, String, V],
    counters
  ))
  private val results = Vector.fill(partitions)(
    new TableSource(InMemoryTableState.unversioned[String, R]())
  )
  private var version = 0L

  private def partitionOf(k: Any): Int = if (k == null) 0 else Math.floorMod(k.hashCode, partitions)

  def runBatch(batch: Seq[Upd[V, VO, KO]]): Seq[TableChange[String, R]] = {
    // 1. the left table and the subscriptions, each at its update's position
    type Stage1In = Either[ForeignKeySubscription[String, KO, V], Right[KO, VO]]
    val stage1In = Vector.fill(partitions)(ArrayBuffer.empty[Stage1In])
    batch.foreach {
      case Left(k, v, ts) =>
        version += 1
        if (k != null) {
          val change = left.update(k, v, ts)
          if (change != null)
            sender.send(change, version, s => stage1In(partitionOf(s.foreignKey)) += scala.util.Left(s))
        }
      case r: Right[KO, VO] @unchecked =>
        stage1In(partitionOf(r.key)) += scala.util.Right(r)
    }
    // 2. stage 1, partition by partition
    val responses = stage1.zip(stage1In).map { case (p, in) =>
      val out = ArrayBuffer.empty[ForeignKeyResponse[String, V, VO]]
      in.foreach {
        case scala.util.Left(s) => p.processSubscription(s, out += _)
        case scala.util.Right(r) => p.processRight(r.key, r.key == null, r.value, r.ts, tsIsNull = false, out += _)
      }
      p.finish()
      out.toList
    }
    // 3. stage 2: each partition gets stage 1's partitions' responses in order
    val stage2 = results.map(new ForeignKeyResponseProcessor[String, V, VO, R](leftJoin, joiner, _, counters))
    val out = Vector.fill(partitions)(ArrayBuffer.empty[TableChange[String, R]])
    (0 until partitions).map(i => responses(stage1Order(i))).foreach(_.foreach { r =>
      stage2(partitionOf(r.key)).processResponse(r, out(partitionOf(r.key)) += _)
    })
    out.flatten
  }
}

object ForeignKeyJoinDriver {
  sealed trait Upd[+V, +VO, +KO]
  final case class Left[V](key: String, value: V, ts: Long) extends Upd[V, Nothing, Nothing]
  final case class Right[KO, VO](key: KO, value: VO, ts: Long) extends Upd[Nothing, VO, KO]
}
