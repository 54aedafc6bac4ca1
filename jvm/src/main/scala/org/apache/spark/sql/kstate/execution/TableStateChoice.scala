package org.apache.spark.sql.kstate.execution

import org.apache.spark.sql.kstate.errors.KStateErrors
import io.kstate.tables.VersionedTable

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.processor.table.{InMemoryTableState, TableState}
import org.apache.spark.sql.kstate.provider.KStateStore
import org.apache.spark.sql.kstate.operatorstate.{StoreTableState, StoreVersionedTableState}
import org.apache.spark.sql.types.StructType

/**
 * The table state an exec keeps a table's materialization in, chosen once for every exec that
 * materializes a table (the table source, the stream–table join), with the retention and grace
 * of `versioned` (the exec's: the join stores with grace = retention):
 *
 * | store                  | versioning         | state |
 * | ---------------------- | ------------------ | ----- |
 * | kstate's               | versioned          | [[StoreVersionedTableState]] in families `kstate_vs_<versionedName>_*` |
 * | another provider's     | versioned          | `KSTATE_UNSUPPORTED_STATE_PROVIDER` (needs the versioned store) |
 * | any                    | None               | [[StoreTableState]] in the family `kstate_table`, or `family` |
 * | none (batch DataFrame) | versioned          | [[InMemoryTableState.versioned]] |
 * | none (batch DataFrame) | None               | [[InMemoryTableState.unversioned]] |
 */
private[kstate] object TableStateChoice {

  /**
   * A chosen state and what to call once, at the end of the task: it persists what the state
   * needs persisted (an unversioned store state's stream time, unless it is one of several
   * tables in the store, in its own `family`: the store has one stream-time slot, and nothing
   * reads an unversioned table's stream time; the versioned store persists its own) and drops
   * versions past the history retention, returning how many entries it removed.
   */
  final class Chosen(val state: TableState[UnsafeRow, UnsafeRow], val finish: () => Long)

  def choose(
      operatorName: String,
      store: Option[StateStore],
      versioned: Option[VersionedTable],
      versionedName: String,
      keySchema: StructType,
      valueFields: Int,
      family: Option[String] = None
  ): Chosen = (store, versioned) match {
    case (Some(k: KStateStore), Some(v)) =>
      val s = new StoreVersionedTableState(k, versionedName, v.historyRetentionMs, v.graceMs, valueFields)
      new Chosen(s, () => s.cleanup().toLong)
    case (Some(other), Some(_)) =>
      throw KStateErrors.providerLacksCapabilities(
        operatorName,
        other.getClass.getName,
        Seq(StoreCapability.VersionedStore.description)
      )
    case (Some(s), None) =>
      family match {
        case None =>
          val t = new StoreTableState(s, keySchema, valueFields)
          new Chosen(t, () => { t.commitStreamTime(); 0L })
        case Some(f) => new Chosen(new StoreTableState(s, keySchema, valueFields, f), () => 0L)
      }
    case (None, Some(v)) =>
      new Chosen(InMemoryTableState.versioned[UnsafeRow, UnsafeRow](v.historyRetentionMs, v.graceMs), () => 0L)
    case (None, None) => new Chosen(InMemoryTableState.unversioned[UnsafeRow, UnsafeRow](), () => 0L)
  }
}
