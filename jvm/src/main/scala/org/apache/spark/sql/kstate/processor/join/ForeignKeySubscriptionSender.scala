package org.apache.spark.sql.kstate.processor.join

import org.apache.spark.sql.kstate.processor.Counters
import org.apache.spark.sql.kstate.processor.join.ForeignKeyInstruction._
import org.apache.spark.sql.kstate.processor.table.TableChange

/**
 * Kafka 4.3's `SubscriptionSendProcessorSupplier` (KIP-213): turns one change of the left table
 * (its new and old value, from the left table's [[org.apache.spark.sql.kstate.processor.table.TableSource]])
 * into the subscriptions to send to the stage partitioned by foreign key. Stateless.
 *
 * Rules, for a change of key `k` from `old` to `new` (foreign keys `fk(old)`, `fk(new)`, null
 * for a null value or when the extractor returns null):
 *  0. a change that is not its key's latest version (versioned left table) sends nothing
 *     (KIP-914, counted as out of order);
 *  Left join:
 *  1. old and new both null (deleting a deleted key): nothing;
 *  2. `fk(old)` non-null and different from `fk(new)`: `DeleteNoPropagate` to `fk(old)`;
 *  3. always then `PropagateNullIfNoMatch` to `fk(new)`, null included (so a deleted left row or
 *     one without a foreign key still gets its response: a tombstone, or the row joined with
 *     nothing);
 *  Inner join:
 *  4. `new` non-null with a null `fk(new)`: counted as a null foreign key; `DeleteAndPropagate`
 *     to `fk(old)` if non-null (its result must go);
 *  5. `new` non-null, `fk(old)` non-null and different: `DeleteNoPropagate` to `fk(old)`, then
 *     `PropagateNullIfNoMatch` to `fk(new)`;
 *  6. `new` non-null, `fk(old)` equal, or null: `PropagateOnlyIfMatch` to `fk(new)` (nothing to
 *     undo if it does not match);
 *  7. `new` null (deleted): `DeleteAndPropagate` to `fk(old)` if non-null.
 * Each subscription carries the change's key, new value, timestamp and the caller's `version`.
 * Foreign keys are compared with `sameForeignKey` (Kafka compares serialized bytes), never `==`.
 *
 * Spark mapping: runs in the operator that materializes the left table (partitioned by left
 * key), on each change its [[org.apache.spark.sql.kstate.processor.table.TableSource]] returns;
 * null keys and null timestamps were dropped there. The subscriptions are shuffled by foreign
 * key (a null one to any partition: its response touches no state) to stage 1. The foreign key
 * is a function of the left value (Kafka 4.3 also offers one of key and value; a Spark
 * expression over the left row sees the key columns anyway).
 */
final class ForeignKeySubscriptionSender[K, V, KO](
    foreignKey: V => KO,
    sameForeignKey: (KO, KO) => Boolean,
    leftJoin: Boolean,
    counters: Counters
) {
  import ForeignKeyJoinMetrics._
  require(counters.set eq ForeignKeyJoinMetrics, "counters of another operator")

  private def fkOf(v: V): KO = if (v == null) null.asInstanceOf[KO] else foreignKey(v)

  def send(change: TableChange[K, V], version: Long, emit: ForeignKeySubscription[K, KO, V] => Unit): Unit = {
    if (!change.isLatest) { counters.add(OutOfOrderIgnored); return }
    def to(fk: KO, i: ForeignKeyInstruction): Unit =
      emit(ForeignKeySubscription(fk, change.key, i, change.newValue, version, change.timestamp))
    val oldFk = fkOf(change.oldValue)
    val newFk = fkOf(change.newValue)
    val moved = oldFk != null && (newFk == null || !sameForeignKey(oldFk, newFk))
    if (leftJoin) {
      if (change.oldValue == null && change.newValue == null) return
      if (moved) to(oldFk, DeleteNoPropagate)
      to(newFk, PropagateNullIfNoMatch)
    } else if (change.newValue == null) {
      if (oldFk != null) to(oldFk, DeleteAndPropagate)
    } else if (newFk == null) {
      counters.add(NullForeignKeys)
      if (oldFk != null) to(oldFk, DeleteAndPropagate)
    } else if (moved) {
      to(oldFk, DeleteNoPropagate)
      to(newFk, PropagateNullIfNoMatch)
    } else {
      to(newFk, PropagateOnlyIfMatch)
    }
  }
}
