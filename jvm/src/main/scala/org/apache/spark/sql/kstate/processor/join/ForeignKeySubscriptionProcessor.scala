package org.apache.spark.sql.kstate.processor.join

import org.apache.spark.sql.kstate.processor.Counters
import org.apache.spark.sql.kstate.processor.join.ForeignKeyInstruction._
import org.apache.spark.sql.kstate.processor.join.ForeignKeySubscriptionState.Subscribed
import org.apache.spark.sql.kstate.processor.table.TableSource

/**
 * Stage 1 of the foreign-key join (KIP-213), partitioned by foreign key `KO`: Kafka's
 * `SubscriptionReceiveProcessorSupplier` + `SubscriptionJoinProcessorSupplier` for subscriptions
 * and `ForeignTableJoinProcessorSupplier` for right-table updates, for one state partition. It
 * holds the right table (a [[TableSource]] over its own [[org.apache.spark.sql.kstate.processor.table.TableState]],
 * versioned or not) and the subscriptions (foreign key, left key) → (left value, version,
 * timestamp) in a [[ForeignKeySubscriptionState]]; what it emits are [[ForeignKeyResponse]]s for
 * stage 2 ([[ForeignKeyResponseProcessor]]), partitioned by the left key.
 *
 * Rules, in processing order:
 *  1. a subscription with a null foreign key (a left join's deleted or key-less left row) is
 *     answered with no right value at the subscription's timestamp and stores nothing; with any
 *     other instruction it is dropped (counted as a null foreign key; the sender never makes one);
 *  2. a subscription's pair is removed (`DeleteNoPropagate`, `DeleteAndPropagate`) or stored
 *     with the subscribed value (`PropagateNullIfNoMatch`, `PropagateOnlyIfMatch`), replacing
 *     the pair's previous subscription;
 *  3. it is answered from the right table's latest value of its foreign key (`get`: by timestamp
 *     when versioned), at max(subscription timestamp, right value timestamp), or the
 *     subscription's timestamp with no right value: `DeleteAndPropagate` → no right value;
 *     `PropagateNullIfNoMatch` → the right value or none; `PropagateOnlyIfMatch` → the right
 *     value, no response without one; `DeleteNoPropagate` → no response;
 *  4. a right update with a null key or null timestamp is dropped and counted; one the versioned
 *     right table does not store (older than its stream time − grace) is dropped as late; one
 *     that is not its key's latest version (versioned) is stored but answers nothing (KIP-914);
 *  5. otherwise every subscriber of its key gets a response: its subscribed left value and
 *     version, the update's new value (null for a delete), the update's timestamp; subscribers
 *     in the state's key order.
 * A response always carries the version (and value) of the subscription that produced it.
 *
 * Deliberate difference from Kafka (D1): a subscription carries and stores the left value itself
 * where Kafka carries a 128-bit hash of it, and a response carries it back. Kafka's stage 2 reads
 * the value from the left table and drops a response whose hash is not the current value's; in
 * Spark, stage 2 cannot read the left table's state (it belongs to the operator that
 * materializes the left table, before stage 1 in the plan), so the value travels with the
 * messages and staleness is decided by version ([[ForeignKeyResponseProcessor]]). Cost: the left
 * value is stored once more, in this stage, per subscribed left row. Results are unchanged
 * (equal hashes mean equal values).
 *
 * Counts into [[ForeignKeyJoinMetrics]]. Not thread-safe; one instance per task.
 */
final class ForeignKeySubscriptionProcessor[K, KO, V, VO](
    right: TableSource[KO, VO],
    subscriptions: ForeignKeySubscriptionState[KO, K, V],
    val counters: Counters = ForeignKeyJoinMetrics.newCounters()
) {
  import ForeignKeyJoinMetrics._
  require(counters.set eq ForeignKeyJoinMetrics, "counters of another operator")

  private def respond(
      emit: ForeignKeyResponse[K, V, VO] => Unit,
      key: K,
      leftValue: V,
      foreignValue: VO,
      version: Long,
      ts: Long
  ): Unit = {
    counters.add(Responses)
    emit(ForeignKeyResponse(key, leftValue, foreignValue, version, ts))
  }

  /** Rules 1–3 for one subscription. */
  def processSubscription(s: ForeignKeySubscription[K, KO, V], emit: ForeignKeyResponse[K, V, VO] => Unit): Unit = {
    val none = null.asInstanceOf[VO]
    if (s.foreignKey == null) {
      if (s.instruction == PropagateNullIfNoMatch) respond(emit, s.key, s.leftValue, none, s.version, s.timestamp)
      else counters.add(NullForeignKeys)
      return
    }
    if (s.instruction.stores) subscriptions.put(s.foreignKey, s.key, Subscribed(s.leftValue, s.version, s.timestamp))
    else subscriptions.remove(s.foreignKey, s.key)
    val r = right.state.get(s.foreignKey)
    val ts = if (r == null) s.timestamp else math.max(s.timestamp, r.timestamp)
    val matched = if (r == null) none else r.value
    s.instruction match {
      case DeleteAndPropagate => respond(emit, s.key, s.leftValue, none, s.version, ts)
      case PropagateNullIfNoMatch => respond(emit, s.key, s.leftValue, matched, s.version, ts)
      case PropagateOnlyIfMatch => if (r != null) respond(emit, s.key, s.leftValue, matched, s.version, ts)
      case DeleteNoPropagate =>
    }
  }

  /** Rules 4–5 for one raw update of the right table. */
  def processRight(
      key: KO,
      keyIsNull: Boolean,
      value: VO,
      ts: Long,
      tsIsNull: Boolean,
      emit: ForeignKeyResponse[K, V, VO] => Unit
  ): Unit = {
    if (keyIsNull) { counters.add(NullKeys); return }
    if (tsIsNull) { counters.add(NullTimestamps); return }
    val change = right.update(key, value, ts)
    if (change == null) { counters.add(LateDropped); return }
    if (!change.isLatest) { counters.add(OutOfOrderIgnored); return }
    subscriptions.subscribers(key).foreach { case (k, sub) =>
      respond(emit, k, sub.leftValue, change.newValue, sub.version, ts)
    }
  }

  /** Ends the micro-batch: records the number of stored subscriptions. */
  def finish(): Unit = counters.set(Subscriptions, subscriptions.size)
}
