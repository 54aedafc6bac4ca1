package org.apache.spark.sql.kstate.engine

import java.util.concurrent.atomic.AtomicLong

/**
 * The heap all [[HeapState]]s of one JVM (executor) may hold together. A store reserves what
 * its heap state grows by and releases what it shrinks by; when a reservation does not fit,
 * the store moves its working copy to RocksDB and releases everything it held.
 *
 * The limit comes with each call (from the store's configuration,
 * `spark.sql.streaming.stateStore.kstate.heapStateBytes`), so one executor's stores normally
 * share one limit; a limit of 0 admits nothing.
 */
private[kstate] object HeapStateBudget {
  private val used = new AtomicLong(0L)

  /** Heap currently reserved by this JVM's heap states. */
  def reserved: Long = used.get

  /** Adds `bytes` to the reservation if the total stays within `limit`; true if it did. */
  def tryReserve(bytes: Long, limit: Long): Boolean = {
    require(bytes >= 0, s"cannot reserve $bytes bytes")
    var done = false
    var fits = true
    while (!done) {
      val now = used.get
      if (now + bytes > limit) { fits = false; done = true }
      else done = used.compareAndSet(now, now + bytes)
    }
    fits
  }

  def release(bytes: Long): Unit = {
    require(bytes >= 0, s"cannot release $bytes bytes")
    used.addAndGet(-bytes)
  }

  /** The default limit: an eighth of the JVM's maximum heap. */
  def defaultLimit: Long = Runtime.getRuntime.maxMemory / 8
}
