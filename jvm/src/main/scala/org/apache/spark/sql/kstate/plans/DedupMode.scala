package org.apache.spark.sql.kstate.plans

/** The three KIP-655 operations; `name` is also the operator kind recorded in the checkpoint. */
sealed abstract class DedupMode(val name: String) extends Serializable
object DedupMode {

  /** Identity = record key; deduplicates within the key's partition. */
  case object ByKey extends DedupMode("deduplicate_by_key")

  /** Identity = (key, id); partitioned by key. */
  case object ByKeyValue extends DedupMode("deduplicate_by_key_value")

  /** Identity = id; repartitions by id (deduplicates across all input partitions). */
  case object ById extends DedupMode("deduplicate")
}
