package org.apache.spark.sql.kstate.execution

import io.kstate.suppress.{BufferConfig, UntilWindowCloses}

import org.apache.spark.sql.kstate.processor.suppress.BufferLimits

/**
 * What a kstate exec needs from the state store provider behind it
 * (`spark.kstate.stateStore.providerClass`). Each exec declares its set
 * ([[KStateStatefulExec.storeCapabilities]]); the set is checked once when a micro-batch is
 * planned against what the configured provider class has
 * ([[org.apache.spark.sql.kstate.planning.StateProviderCheck.requireCapabilities]]), so a provider that
 * lacks one fails there with `KSTATE_UNSUPPORTED_STATE_PROVIDER`, before any task runs.
 */
sealed abstract class StoreCapability(val description: String)

object StoreCapability {

  /** Column families and range-scan key encodings (Spark's RocksDB provider has them too). */
  case object ColumnFamilies extends StoreCapability("column families and range scans")

  /** KIP-328's time-ordered buffer (`suppress`), kept in kstate's own store. */
  case object TimeOrderedBuffer extends StoreCapability("a time-ordered suppression buffer")

  /** The versioned key-value store (history by timestamp), kept in kstate's own store. */
  case object VersionedStore extends StoreCapability("a versioned key-value store")

  /** Spilling a micro-batch's uncommitted changes to local disk past a heap bound. */
  case object SpillToDisk extends StoreCapability("spilling uncommitted changes to disk (spill_to_disk_when_full)")

  val All: Set[StoreCapability] = Set(ColumnFamilies, TimeOrderedBuffer, VersionedStore, SpillToDisk)

  /** A windowed aggregation, and what its fused `suppress(untilWindowCloses)` buffer needs. */
  def ofAggregate(finalResults: Option[UntilWindowCloses]): Set[StoreCapability] =
    Set[StoreCapability](ColumnFamilies) ++ finalResults.toSet[UntilWindowCloses].flatMap(f => spill(f.bufferConfig))

  /** A `suppress` on a table: its time-ordered buffer, spilling if its config says so. */
  def ofSuppress(bufferConfig: BufferConfig[_]): Set[StoreCapability] =
    Set[StoreCapability](ColumnFamilies, TimeOrderedBuffer) ++ spill(bufferConfig)

  /** A buffer that spills: `spill_to_disk_when_full` with a bound (unbounded never spills). */
  private def spill(c: BufferConfig[_]): Set[StoreCapability] =
    if (BufferLimits.of(c).spills) Set(SpillToDisk) else Set.empty
}
