package io.kstate

/**
 * The errors of the public value types' arguments (durations, windows, buffer configs,
 * versioned tables, processing orders), raised when the value is made. The public API's own
 * corner of the error hub: everything else is `org.apache.spark.sql.kstate.errors.KStateErrors`,
 * which the internals use, so that neither side imports the other (docs/contributing.md,
 * "Layering"). Conditions and templates: `python/kstate/error_conditions.json`.
 */
object ArgumentErrors {
  private def err(condition: String, parameters: (String, Any)*): KStateException =
    new KStateException(condition, parameters.map { case (k, v) => k -> String.valueOf(v) }.toMap, null)

  def invalidInterval(what: String, value: String, why: String): KStateException =
    err("KSTATE_INVALID_DURATION", "what" -> what, "value" -> value, "reason" -> why)

  def invalidWindow(why: String): KStateException =
    err("KSTATE_INVALID_WINDOW", "reason" -> why)

  def invalidBufferConfig(why: String): KStateException =
    err("KSTATE_INVALID_BUFFER_CONFIG", "reason" -> why)

  def invalidProcessingOrder(what: String, value: String): KStateException =
    err("KSTATE_INVALID_PROCESSING_ORDER", "what" -> what, "value" -> s"'$value'")

  /**
   * `store` names it, e.g. "Versioned table" or "Versioned store 'name'". A history retention of 0
   * is valid, as in Kafka (`Stores.persistentVersionedKeyValueStore` refuses only a negative one):
   * the table keeps its latest value per key and drops out-of-order updates.
   */
  def invalidVersionedStoreConfig(store: String, retentionMs: Long, graceMs: Long): KStateException = {
    val why =
      if (retentionMs < 0) "the history retention is negative"
      else if (graceMs < 0) "the grace period is negative"
      else "the grace period exceeds the history retention"
    err(
      "KSTATE_INVALID_VERSIONED_STORE",
      "store" -> store,
      "historyRetentionMs" -> retentionMs,
      "graceMs" -> graceMs,
      "reason" -> why
    )
  }
}
