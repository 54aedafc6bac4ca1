package org.apache.spark.sql.kstate.processor.window

/**
 * A (key, window start) pair as a hash key. Mutable only so that one probe can look windows up
 * without allocating: a [[WindowRef]] kept in a map is never changed.
 */
final class WindowRef[K](var key: K, var start: Long) {
  def set(k: K, s: Long): WindowRef[K] = { key = k; start = s; this }
  override def hashCode: Int = key.hashCode * 31 + java.lang.Long.hashCode(start)
  override def equals(o: Any): Boolean = o match {
    case r: WindowRef[_] => r.start == start && r.key == key
    case _ => false
  }
  override def toString: String = s"($key, $start)"
}
