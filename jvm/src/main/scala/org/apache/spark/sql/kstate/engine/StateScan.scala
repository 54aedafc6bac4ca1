package org.apache.spark.sql.kstate.engine

/**
 * A forward scan over the committed entries of a store's working copy, in unsigned key byte
 * order, frozen when it was opened: later commits to the working copy do not show through.
 *
 * Life cycle: check `valid`, read `key`/`value` (fresh arrays the caller may keep), `next()`;
 * `close()` releases it (idempotent; exhausting a scan does not close it).
 */
private[kstate] trait StateScan extends AutoCloseable {
  def valid: Boolean
  def key: Array[Byte]
  def value: Array[Byte]
  def next(): Unit
}
