package org.apache.spark.sql.kstate.processor.join

import scala.collection.mutable

import org.apache.spark.sql.kstate.processor.Counters
import org.apache.spark.sql.kstate.processor.table.{TableChange, TableSource}

/**
 * Stage 2 of the foreign-key join (KIP-213), partitioned by the left key `K`: Kafka's
 * `ResponseJoinProcessorSupplier` followed by the join result's table source (Kafka
 * materializes every foreign-key join result), for one state partition and one micro-batch. It
 * resolves the [[ForeignKeyResponse]]s of stage 1 ([[ForeignKeySubscriptionProcessor]]) into
 * results of the table keyed by the left key, stored through `results` (a [[TableSource]] over
 * the result table's state, which gives each result its old value).
 *
 * Rules, for each response in the order it arrives:
 *  1. stale responses are dropped: a response whose version is older than a version already
 *     resolved for its key in this micro-batch belongs to a left value that a newer one has
 *     replaced (Kafka: its hash is not the current left value's). Versions of a key only grow
 *     and every response of a micro-batch is resolved in it, so the versions seen in the
 *     micro-batch suffice: nothing about them is persisted;
 *  2. the result is a tombstone when the response has no right value and the join is inner or
 *     the subscribed left value is null (a deleted left row); otherwise
 *     `joiner(left value, right value)` (left join: the right value may be null);
 *  3. the result is put into the result table at the response's timestamp and the table's
 *     change (new, old, timestamp) is emitted; a put the result table does not store (a
 *     versioned result older than its grace) is dropped as late.
 *
 * Ordering and equivalence with Kafka (the decision the processing order forces): Kafka's
 * `TopologyTestDriver` processes each input record depth-first, through both repartition topics,
 * before the next; kstate processes a whole micro-batch per stage: the left table's updates
 * (and their subscriptions), then stage 1 on the subscriptions and right updates in the batch's
 * processing order, then stage 2 on every response, each stage-1 partition's responses in their
 * emission order, partitions one after another.
 *  - With one stage-1 partition the responses reach stage 2 in the order depth-first Kafka
 *    resolves them and no response is stale: the results are identical to Kafka's, record by
 *    record.
 *  - With several, a key's responses can come from two stage-1 partitions (its old foreign key's
 *    and its new one's) in either order. Then, per micro-batch and key, kstate's results are a
 *    subsequence of Kafka's (a response of an older left value arriving after a newer one's is
 *    dropped, rule 1) ending with Kafka's last result, so the result table after each micro-batch
 *    is Kafka's. No stale result survives a micro-batch.
 * The brief's alternative — stage 2 resolving by hash against the left table's value at the end
 * of the micro-batch — leaves a stale result: left `k` joined in an earlier batch, then in one
 * batch `k` deleted (its tombstone response carries the deleted value's hash) and re-inserted
 * with a foreign key without match (inner join: `PropagateOnlyIfMatch`, no response); the
 * tombstone is stale against the re-inserted value and the old result stays. Resolving by
 * version keeps the tombstone (its version is the newest that answered); the test
 * "no stale result: delete and re-insert without match in one micro-batch" asserts it.
 *
 * Counts into [[ForeignKeyJoinMetrics]]. Not thread-safe; one instance per task and
 * micro-batch (keys need equality and hash code for the per-batch versions).
 */
final class ForeignKeyResponseProcessor[K, V, VO, R](
    leftJoin: Boolean,
    joiner: (V, VO) => R,
    results: TableSource[K, R],
    val counters: Counters = ForeignKeyJoinMetrics.newCounters()
) {
  import ForeignKeyJoinMetrics._
  require(counters.set eq ForeignKeyJoinMetrics, "counters of another operator")

  private val resolved = mutable.HashMap.empty[K, Long]

  def processResponse(r: ForeignKeyResponse[K, V, VO], emit: TableChange[K, R] => Unit): Unit = {
    val seen = resolved.getOrElse(r.key, Long.MinValue)
    if (r.version < seen) { counters.add(StaleResponses); return }
    if (r.version > seen) resolved.update(r.key, r.version)
    val result =
      if (r.foreignValue == null && (!leftJoin || r.leftValue == null)) null.asInstanceOf[R]
      else joiner(r.leftValue, r.foreignValue)
    val change = results.update(r.key, result, r.timestamp)
    if (change == null) { counters.add(LateDropped); return }
    counters.add(JoinResults)
    emit(change)
  }
}
